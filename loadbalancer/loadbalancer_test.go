package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

const prefix = loadbalancer.DefaultAnnotationPrefix

type env struct {
	cloud *fake.Cloud
	lb    *loadbalancer.LoadBalancer
	nodes []*corev1.Node
	// clock is the clock the snapshot ages by: a test moves it by hand, so that the
	// snapshot's age is the test's choice, not the machine's speed.
	clock *clocktesting.FakeClock
}

// t0 is the time on the tests' fake clocks when they begin.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// expire moves the clock past the snapshot's maximum age.
func (e *env) expire() { e.clock.Step(loadbalancer.DefaultMaxAge + time.Second) }

func newEnv(t *testing.T, cfg fake.Config, wrap ...func(cloudapi.Client) cloudapi.Client) *env {
	t.Helper()
	return newEnvWith(t, cfg, nil, wrap...)
}

// newEnvWith is newEnv with the LoadBalancer's options changed by tweak.
func newEnvWith(t *testing.T, cfg fake.Config, tweak func(*loadbalancer.Options), wrap ...func(cloudapi.Client) cloudapi.Client) *env {
	t.Helper()
	e := &env{clock: clocktesting.NewFakeClock(t0)}
	for i := range 5 {
		id := fmt.Sprintf("i-%d", i)
		cfg.Instances = append(cfg.Instances, fake.Instance{ID: id, Name: fmt.Sprintf("node-%d", i)})
		e.nodes = append(e.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}})
	}
	var err error
	e.cloud, err = fake.New(cfg)
	require.NoError(t, err)
	var client cloudapi.Client = e.cloud
	for _, w := range wrap {
		client = w(client)
	}
	apiLB, ok := client.LoadBalancers()
	require.True(t, ok)
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	opts := loadbalancer.Options{ClusterID: "c1", ProviderID: format, Clock: e.clock}
	if groups, ok := cloudapi.TargetGroups(client); ok {
		opts.TargetGroups = groups // a cloud configured with target groups
	}
	if tweak != nil {
		tweak(&opts)
	}
	e.lb, err = loadbalancer.New(apiLB, opts)
	require.NoError(t, err)
	return e
}

func newService(name string, tweaks ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	for _, tw := range tweaks {
		tw(svc)
	}
	return svc
}

func withAnnotation(k, v string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations[prefix+k] = v }
}

func withPorts(ports ...corev1.ServicePort) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.Ports = ports }
}

func (e *env) ensure(t *testing.T, svc *corev1.Service, nodes []*corev1.Node) *corev1.LoadBalancerStatus {
	t.Helper()
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
	require.NoError(t, err)
	return st
}

func (e *env) only(t *testing.T) cloudapi.LoadBalancer {
	t.Helper()
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	return lbs[0]
}

func TestEnsureCreatesWhatTheServiceAsks(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web", withPorts(
		corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
		corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
		corev1.ServicePort{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30054},
	))
	st := e.ensure(t, svc, e.nodes)

	lb := e.only(t)
	require.Len(t, st.Ingress, 1)
	assert.Equal(t, lb.Addresses[0], st.Ingress[0].IP)
	assert.Equal(t, corev1.LoadBalancerIPModeVIP, *st.Ingress[0].IPMode)
	assert.Equal(t, []cloudapi.Listener{
		{Name: "dns-tcp", Protocol: cloudapi.ProtocolTCP, Port: 53, TargetPort: 30054},
		{Name: "tcp-443", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443},
		{Name: "dns", Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053},
	}, lb.Spec.Listeners)
	assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, lb.Spec.Targets)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-web", cloudapi.TagServiceName: "default/web"}, lb.Spec.Tags)
	assert.Equal(t, &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz", Interval: 10e9, Timeout: 5e9, HealthyThreshold: 2, UnhealthyThreshold: 3}, lb.Spec.HealthCheck,
		"externalTrafficPolicy Cluster checks kube-proxy")
	assert.Equal(t, "c1-auidweb", lb.Spec.Name)
	assert.Equal(t, lb.Spec.Name, e.lb.GetLoadBalancerName(t.Context(), "c", svc))

	got, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, st, got)
}

func TestConvergedEnsureReadsOnceAndWritesNothing(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web", withAnnotation(loadbalancer.AnnotationProxyProtocol, "true"))
	e.ensure(t, svc, e.nodes)

	before := e.cloud.Calls()
	st := e.ensure(t, svc, e.nodes)
	assert.Empty(t, e.cloud.Calls().Sub(before), "the create's answer is in the snapshot: no call")
	assert.Equal(t, corev1.LoadBalancerIPModeProxy, *st.Ingress[0].IPMode, "PROXY protocol makes kube-proxy send in-cluster traffic through the load balancer")

	before = e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "unchanged node set: no write, and no read while the snapshot is fresh")

	e.expire()
	before = e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before), "an expired snapshot: one list for both, no write")
}

func TestNodeChurnIsOneWrite(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes[:3])
	first := e.only(t)

	before := e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes[:4]))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))

	hist := e.cloud.LoadBalancerHistory()
	last := hist[len(hist)-1]
	assert.Equal(t, []string{"i-3"}, last.Changes.AddTargets)
	assert.True(t, last.ChangesMatch(), "the update's Changes are exactly what changed")

	// Nodes without a provider ID, or with a foreign one, are skipped; none is fine.
	odd := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: corev1.NodeSpec{ProviderID: "aws:///eu-1a/i-9"}},
		e.nodes[1],
	}
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, odd))
	assert.Equal(t, []string{"i-1"}, e.only(t).Spec.Targets)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nil))
	lb := e.only(t)
	assert.Empty(t, lb.Spec.Targets, "an empty node set keeps the load balancer, without targets")
	assert.Equal(t, first.ID, lb.ID)
	assert.Equal(t, first.Addresses, lb.Addresses)
}

func TestChangesApplyInPlace(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	first := e.only(t)

	changed := newService("web",
		withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, NodePort: 30080}),
		withAnnotation(loadbalancer.AnnotationName, "web-frontend"),
		withAnnotation(loadbalancer.AnnotationHealthCheckProtocol, "tcp"),
		func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24", "10.0.0.0/8"}
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 31999
		})
	before := e.cloud.Calls()
	e.ensure(t, changed, e.nodes)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
	lb := e.only(t)
	assert.Equal(t, first.ID, lb.ID, "updated in place")
	assert.Equal(t, first.Addresses, lb.Addresses, "the address is kept")
	assert.Equal(t, "web-frontend", lb.Spec.Name, "renamed in place: ownership is by tags")
	assert.Equal(t, []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 8080, TargetPort: 30080}}, lb.Spec.Listeners)
	assert.Equal(t, []string{"10.0.0.0/8", "198.51.100.0/24"}, lb.Spec.SourceRanges)
	assert.Equal(t, cloudapi.HealthCheckTCP, lb.Spec.HealthCheck.Protocol)
	assert.Equal(t, int32(31999), lb.Spec.HealthCheck.Port, "externalTrafficPolicy Local checks the health check node port")
	assert.Empty(t, lb.Spec.HealthCheck.Path)
}

func TestSessionAffinity(t *testing.T) {
	e := newEnv(t, fake.Config{})
	clientIP := func(timeout *int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			if timeout != nil {
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: timeout}}
			}
		}
	}
	minute := int32(60)
	svc := newService("web", clientIP(&minute))
	e.ensure(t, svc, e.nodes)
	lb := e.only(t)
	assert.Equal(t, cloudapi.SessionAffinityClientIP, lb.Spec.SessionAffinity)
	assert.Equal(t, time.Minute, lb.Spec.SessionAffinityTimeout)

	before := e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "a converged Service with session affinity: no call")

	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		want    cloudapi.SessionAffinity
		timeout time.Duration
	}{
		{"no config: the API server's default timeout", newService("web", clientIP(nil)), cloudapi.SessionAffinityClientIP, 3 * time.Hour},
		{"None", newService("web"), cloudapi.SessionAffinityNone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.cloud.Calls()
			e.ensure(t, tc.svc, e.nodes)
			assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before), "one read, one update")
			hist := e.cloud.LoadBalancerHistory()
			last := hist[len(hist)-1]
			assert.Equal(t, cloudapi.LoadBalancerChanges{SessionAffinity: true}, last.Changes)
			assert.True(t, last.ChangesMatch())
			assert.Equal(t, tc.want, last.Spec.SessionAffinity)
			assert.Equal(t, tc.timeout, last.Spec.SessionAffinityTimeout)
		})
	}
}

func TestForeignTagsAreKept(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	lb := e.only(t)
	api, _ := e.cloud.LoadBalancers()
	spec := lb.Spec.Clone()
	spec.Tags["billing"] = "team-a"
	_, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
	require.NoError(t, err)

	before := e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "a tag someone else added is not a difference")
	assert.Equal(t, "team-a", e.only(t).Spec.Tags["billing"])
}

func TestDualStack(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web", func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	})
	st := e.ensure(t, svc, e.nodes)
	require.Len(t, st.Ingress, 2)
	assert.Contains(t, st.Ingress[0].IP, ":", "primary family first")
	assert.NotContains(t, st.Ingress[1].IP, ":")
}

func TestRequestedAddress(t *testing.T) {
	e := newEnv(t, fake.Config{})
	st := e.ensure(t, newService("a", withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.50")), e.nodes)
	assert.Equal(t, "203.0.113.50", st.Ingress[0].IP)

	st = e.ensure(t, newService("b", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "203.0.113.51" }), e.nodes)
	assert.Equal(t, "203.0.113.51", st.Ingress[0].IP, "spec.loadBalancerIP is honoured")

	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("c", withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.50")), e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrConflict, "the address belongs to another Service's load balancer")
	assert.Contains(t, err.Error(), "choose another with annotation loadbalancer.ccmkit.io/name or loadbalancer.ccmkit.io/ip-addresses")
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 2)
}

func TestInternalSwitchReplaces(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	first := e.only(t)
	internal := newService("web", withAnnotation(loadbalancer.AnnotationInternal, "true"))
	e.ensure(t, internal, e.nodes)
	lb := e.only(t)
	assert.NotEqual(t, first.ID, lb.ID)
	assert.True(t, lb.Spec.Internal)
	assert.Contains(t, lb.Addresses[0], "10.200.", "an address from the internal pool")

	// UpdateLoadBalancer never replaces: it keeps what is there.
	before := e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
}

func TestProvisioningIsARetryError(t *testing.T) {
	e := newEnv(t, fake.Config{Provisioning: fake.Provisioning{Reads: 2}})
	svc := newService("web")
	// The create's answer and the next two reads say provisioning.
	for i := range 3 {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		var retry *api.RetryError
		require.ErrorAs(t, err, &retry, "ensure %d", i+1)
		assert.Equal(t, loadbalancer.ProvisioningRetryDelay, retry.RetryAfter())
	}
	st := e.ensure(t, svc, e.nodes)
	assert.Len(t, st.Ingress, 1)
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1, "one create, however often Ensure asks")
	assert.EqualValues(t, 1, e.cloud.Calls()[cloudapi.OpCreateLoadBalancer])
}

func TestAmbiguousCreateIsAdopted(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	chaos.Script(cloudapi.OpCreateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	svc := newService("web")
	st := e.ensure(t, svc, e.nodes)
	assert.Len(t, st.Ingress, 1)
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1)
	assert.EqualValues(t, 1, e.cloud.Calls()[cloudapi.OpCreateLoadBalancer], "the lost create is found by its tags, not repeated")
	assert.Equal(t, 1, chaos.Injected().Ops[cloudapi.OpCreateLoadBalancer].Faults[faultinject.Ambiguous])
}

func TestNameTakenByAForeignLoadBalancer(t *testing.T) {
	e := newEnv(t, fake.Config{})
	api, _ := e.cloud.LoadBalancers()
	foreign, err := api.CreateLoadBalancer(t.Context(), cloudapi.LoadBalancerSpec{Name: "shared", Tags: map[string]string{"owner": "someone-else"}})
	require.NoError(t, err)

	svc := newService("web", withAnnotation(loadbalancer.AnnotationName, "shared"))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), "no load balancer of this service exists, so the name or a requested address belongs to another")
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	assert.Equal(t, foreign.ID, lbs[0].ID, "a load balancer without our tags is never touched")
}

func TestEnsureDeleted(t *testing.T) {
	e := newEnv(t, fake.Config{})
	web, other := newService("web"), newService("other")
	e.ensure(t, web, e.nodes)
	e.ensure(t, other, e.nodes)

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	assert.Equal(t, "uid-other", lbs[0].Spec.Tags[cloudapi.TagService])
	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", web)
	require.NoError(t, err)
	assert.False(t, exists)

	before := e.cloud.Calls()
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web), "nothing there is success")
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before))

	err = e.lb.UpdateLoadBalancer(t.Context(), "c", web, e.nodes)
	require.Error(t, err, "UpdateLoadBalancer never creates")
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1)
}

func TestDuplicatesAreRemoved(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	first := e.only(t)
	api, _ := e.cloud.LoadBalancers()
	dup := first.Spec.Clone()
	dup.Name = "dup"
	_, err := api.CreateLoadBalancer(t.Context(), dup)
	require.NoError(t, err)

	// The duplicate was made behind ccmkit's back: the refreshed snapshot shows it.
	e.expire()
	e.ensure(t, svc, e.nodes)
	assert.Equal(t, first.ID, e.only(t).ID, "the oldest is kept")
}

func TestCloudErrorsAreNotAbsence(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	chaos.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient}, faultinject.Fault{Kind: faultinject.Transient})
	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.False(t, exists)
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.EqualValues(t, 1, e.cloud.Calls()[cloudapi.OpCreateLoadBalancer], "a failed lookup never leads to a second create")
}

func TestAnnotationErrors(t *testing.T) {
	e := newEnv(t, fake.Config{})
	tests := []struct {
		name   string
		tweaks []func(*corev1.Service)
		want   []string
	}{
		{"bool", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationProxyProtocol, "yes")},
			[]string{`annotation loadbalancer.ccmkit.io/proxy-protocol: "yes": not a boolean (allowed: true, false)`}},
		{"port", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckPort, "70000")},
			[]string{`annotation loadbalancer.ccmkit.io/health-check-port: "70000": not a whole number from 1 to 65535 (allowed: 1-65535)`}},
		{"ip", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.1,bad")},
			[]string{`annotation loadbalancer.ccmkit.io/ip-addresses: "203.0.113.1,bad": "bad" is not an IP address`}},
		{"two of a family", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.1,203.0.113.2")},
			[]string{"more than one address of one IP family"}},
		{"name", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationName, "Web_Frontend")},
			[]string{`annotation loadbalancer.ccmkit.io/name: "Web_Frontend": not a DNS label`}},
		{"duration", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "10")},
			[]string{`annotation loadbalancer.ccmkit.io/health-check-interval: "10": not a duration from 1s to 5m`}},
		{"timeout over interval", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckTimeout, "20s")},
			[]string{"the health check timeout 20s is longer than its interval 10s"}},
		{"all at once", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationInternal, "maybe"), withAnnotation(loadbalancer.AnnotationHealthCheckPath, "healthz")},
			[]string{"loadbalancer.ccmkit.io/internal", "loadbalancer.ccmkit.io/health-check-path"}},
		{"loadBalancerIP not among the annotation's", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.1"), func(s *corev1.Service) { s.Spec.LoadBalancerIP = "203.0.113.2" }},
			[]string{"spec.loadBalancerIP 203.0.113.2 is not among the addresses of annotation loadbalancer.ccmkit.io/ip-addresses"}},
		{"no node port", []func(*corev1.Service){withPorts(corev1.ServicePort{Port: 80})},
			[]string{"port 80/TCP has no node port"}},
		{"source ranges", []func(*corev1.Service){func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.1"} }},
			[]string{"service.Spec.LoadBalancerSourceRanges"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", tt.tweaks...), e.nodes)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "a bad Service changes nothing in the cloud")
		})
	}
	var aerr *loadbalancer.AnnotationError
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationInternal, "maybe")), e.nodes)
	require.True(t, errors.As(err, &aerr))
	assert.Equal(t, "loadbalancer.ccmkit.io/internal", aerr.Key)
	assert.Equal(t, "maybe", aerr.Value)
}

func TestNewNeedsClusterID(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	api, _ := cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	_, err = loadbalancer.New(api, loadbalancer.Options{ProviderID: format})
	assert.ErrorContains(t, err, "a cluster ID is required")
}

func TestAddressAnnotationEdgeCases(t *testing.T) {
	e := newEnv(t, fake.Config{})
	for _, v := range []string{"fe80::1%eth0", "::ffff:203.0.113.9,203.0.113.9"} {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationIPAddresses, v)), e.nodes)
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "loadbalancer.ccmkit.io/ip-addresses", v)
	}
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationHealthCheckPath, "/a\rb")), e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "control characters")
}

// TestANodeBeingInitializedIsATargetAtOnce: with Options.NodeProviderID, a node sync that
// hands the Services a Node without a provider ID (the cloud node controller has not
// initialized it yet) writes it as a target at once, on one list for every Service; the
// node sync after its initialization, with the provider ID found, costs no call.
func TestANodeBeingInitializedIsATargetAtOnce(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) {
		o.NodeProviderID = func(_ context.Context, name string) (string, bool) {
			return "ccmkit://i-4", name == "node-4"
		}
	})
	web, api := newService("web"), newService("api")
	e.ensure(t, web, e.nodes[:4])
	e.ensure(t, api, e.nodes[:4])

	registered := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-4"}}
	nodes := append(slices.Clone(e.nodes[:4]), registered)
	before := e.cloud.Calls()
	for _, svc := range []*corev1.Service{web, api} {
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes))
	}
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 2}, e.cloud.Calls().Sub(before))
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		assert.Contains(t, lb.Spec.Targets, "i-4", lb.Spec.Name)
	}
	assert.Empty(t, registered.Spec.ProviderID, "the Node given is not changed")

	before = e.cloud.Calls()
	for _, svc := range []*corev1.Service{web, api} {
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	}
	assert.Empty(t, e.cloud.Calls().Sub(before), "initialized with that provider ID: nothing to write, no list")
}
