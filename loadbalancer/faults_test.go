package loadbalancer_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

const (
	chaosCluster   = "c1"
	chaosServices  = 30
	chaosInstances = 20
	// chaosMaxAttempts bounds how often converge calls a method before it gives up.
	chaosMaxAttempts = 200
	// chaosTick is how far the snapshot's clock moves whenever it is read.
	chaosTick = 20 * time.Second
)

// chaosPort is one port of a Service in the fault test.
type chaosPort struct {
	name     string
	protocol corev1.Protocol
	port     int32
	nodePort int32
}

// chaosServiceState is what the test wants of one Service, and what it checks in the cloud.
type chaosServiceState struct {
	svc     *corev1.Service
	deleted bool
}

// chaosPorts returns 1 to 3 TCP/UDP ports for Service i; shift moves the ports, to change
// them.
func chaosPorts(i int, shift int32) []chaosPort {
	all := []chaosPort{
		{name: "http", protocol: corev1.ProtocolTCP, port: 80},
		{name: "dns", protocol: corev1.ProtocolUDP, port: 53},
		{name: "https", protocol: corev1.ProtocolTCP, port: 443},
	}
	ports := all[:1+i%3]
	for j := range ports {
		ports[j].port += shift
		ports[j].nodePort = 30000 + int32(i)*10 + int32(j) + shift
	}
	return ports
}

func chaosService(i int, ports []chaosPort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("svc-%02d", i),
			UID:       types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)),
		},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.name, Protocol: p.protocol, Port: p.port, NodePort: p.nodePort})
	}
	return svc
}

func chaosInstanceID(i int) string { return fmt.Sprintf("i-%04d", i) }

// chaosNodes returns the Nodes of the instances from, ..., to-1.
func chaosNodes(from, to int) []*corev1.Node {
	var nodes []*corev1.Node
	for i := from; i < to; i++ {
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i)},
			Spec:       corev1.NodeSpec{ProviderID: "ccmkit://" + chaosInstanceID(i)},
		})
	}
	return nodes
}

// chaosListeners is what the load balancer of svc must listen on.
func chaosListeners(svc *corev1.Service) []cloudapi.Listener {
	var ls []cloudapi.Listener
	for _, p := range svc.Spec.Ports {
		ls = append(ls, cloudapi.Listener{Name: p.Name, Protocol: cloudapi.Protocol(p.Protocol), Port: p.Port, TargetPort: p.NodePort})
	}
	slices.SortFunc(ls, func(a, b cloudapi.Listener) int {
		if a.Protocol != b.Protocol {
			if a.Protocol < b.Protocol {
				return -1
			}
			return 1
		}
		return int(a.Port - b.Port)
	})
	return ls
}

func chaosOwner(svc *corev1.Service) map[string]string {
	return map[string]string{cloudapi.TagCluster: chaosCluster, cloudapi.TagService: string(svc.UID)}
}

// converge calls fn, as the service controller does, until it returns nil: every error,
// an api.RetryError included, means "call again".
func converge(t *testing.T, what string, fn func() error) {
	t.Helper()
	var err error
	for range chaosMaxAttempts {
		if err = fn(); err == nil {
			return
		}
	}
	require.NoError(t, err, "%s did not converge in %d attempts", what, chaosMaxAttempts)
}

// TestConvergesUnderFaults drives 30 Services through create, change, node churn and
// delete against a cloud that throttles, fails, times out and loses the answers of applied
// writes, and checks that no Service ever had two load balancers, that nothing of a
// deleted Service is left, and that every other Service ends with exactly the load
// balancer it asks for.
func TestConvergesUnderFaults(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)

	instances := make([]fake.Instance, chaosInstances)
	for i := range instances {
		instances[i] = fake.Instance{ID: chaosInstanceID(i), Name: fmt.Sprintf("node-%02d", i)}
	}
	cloud, err := fake.New(fake.Config{Provisioning: fake.Provisioning{Reads: 1}, Instances: instances})
	require.NoError(t, err)
	writes := []cloudapi.Operation{cloudapi.OpCreateLoadBalancer, cloudapi.OpDeleteLoadBalancer, cloudapi.OpUpdateLoadBalancer}
	chaos := faultinject.Wrap(cloud, faultinject.Config{
		Seed: 1,
		Rules: []faultinject.Rule{
			{Probability: 0.10, Kind: faultinject.Throttle},
			{Probability: 0.10, Kind: faultinject.Transient},
			{Ops: writes, Probability: 0.15, Kind: faultinject.Ambiguous},
			{Probability: 0.05, Kind: faultinject.Timeout},
		},
		Timeout: time.Millisecond,
		Clock:   clocktest.NewStepping(t0), // timeouts end at once
	})
	api, ok := chaos.LoadBalancers()
	require.True(t, ok)
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	// The snapshot ages by 20 s with every call, so that it is refreshed every few calls,
	// under the same faults.
	clk := clocktest.NewTicking(t0, chaosTick)
	lb, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: chaosCluster, ProviderID: format, Clock: clk})
	require.NoError(t, err)

	services := make([]*chaosServiceState, chaosServices)
	for i := range services {
		services[i] = &chaosServiceState{svc: chaosService(i, chaosPorts(i, 0))}
	}

	// Phase 1: every Service gets its load balancer, on nodes 0-9.
	nodes := chaosNodes(0, 10)
	for _, s := range services {
		converge(t, "create "+s.svc.Name, func() error {
			_, err := lb.EnsureLoadBalancer(ctx, chaosCluster, s.svc, nodes)
			return err
		})
	}

	// Phase 2: a third change their ports, another third ask for the PROXY protocol.
	for i, s := range services {
		switch i % 3 {
		case 0:
			s.svc = chaosService(i, chaosPorts(i, 1000))
		case 1:
			s.svc = s.svc.DeepCopy()
			s.svc.Annotations = map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationProxyProtocol: "true"}
		default:
			continue
		}
		converge(t, "change "+s.svc.Name, func() error {
			_, err := lb.EnsureLoadBalancer(ctx, chaosCluster, s.svc, nodes)
			return err
		})
	}

	// Phase 3: node churn, nodes 0-2 go, 10-14 come.
	nodes = chaosNodes(3, 15)
	for _, s := range services {
		converge(t, "update nodes of "+s.svc.Name, func() error {
			return lb.UpdateLoadBalancer(ctx, chaosCluster, s.svc, nodes)
		})
	}

	// Phase 4: half of the Services are deleted.
	for i, s := range services {
		if i%2 != 0 {
			continue
		}
		s.deleted = true
		converge(t, "delete "+s.svc.Name, func() error {
			return lb.EnsureLoadBalancerDeleted(ctx, chaosCluster, s.svc)
		})
	}

	chaos.SetEnabled(false)
	counts := chaos.Injected()
	total := counts.Total()
	history := cloud.LoadBalancerHistory()
	inv := cloud.Inventory()

	// (a) No Service ever had two load balancers at once.
	live := map[string]int{}
	created := 0
	for _, e := range history {
		uid := e.Spec.Tags[cloudapi.TagService]
		require.NotEmpty(t, uid, "load balancer %s has no %s tag", e.ID, cloudapi.TagService)
		switch e.Op {
		case cloudapi.OpCreateLoadBalancer:
			created++
			live[uid]++
			require.LessOrEqual(t, live[uid], 1, "a second load balancer (%s) of service %s existed at once", e.ID, uid)
		case cloudapi.OpDeleteLoadBalancer:
			live[uid]--
		case cloudapi.OpUpdateLoadBalancer:
			assert.True(t, e.ChangesMatch(), "update of %s described its changes from a stale read: said %+v, was %+v", e.ID, e.Changes, e.Actual)
		}
	}

	// (b) Nothing of a deleted Service is left, and (c) every other Service has exactly
	// the load balancer it asks for.
	var wantTargets []string
	for _, n := range nodes {
		wantTargets = append(wantTargets, n.Spec.ProviderID[len("ccmkit://"):])
	}
	surviving := 0
	for i, s := range services {
		got := inv.LoadBalancersTagged(chaosOwner(s.svc))
		if s.deleted {
			assert.Empty(t, got, "service %s was deleted", s.svc.Name)
			assert.Zero(t, live[string(s.svc.UID)], "service %s was deleted", s.svc.Name)
			continue
		}
		surviving++
		if !assert.Len(t, got, 1, "load balancers of service %s", s.svc.Name) {
			continue
		}
		spec := got[0].Spec
		assert.Equal(t, chaosListeners(s.svc), spec.Listeners, "listeners of service %s", s.svc.Name)
		assert.ElementsMatch(t, wantTargets, spec.Targets, "targets of service %s", s.svc.Name)
		assert.Equal(t, i%3 == 1, spec.ProxyProtocol, "PROXY protocol of service %s", s.svc.Name)
		assert.Equal(t, cloudapi.LoadBalancerActive, got[0].Status, "service %s", s.svc.Name)
		assert.NotEmpty(t, got[0].Addresses, "service %s", s.svc.Name)
	}
	assert.Len(t, inv.LoadBalancers, surviving, "load balancers in the cloud")

	// Converged: with the faults off, ensuring and updating every surviving Service again
	// writes nothing, and reads only to refresh the snapshot (one page of the fake's 100):
	// at most once per MaxAge. The test moves the clock here, chaosTick before each call,
	// so that the time that passes does not depend on how often the code reads the clock.
	clk.Hold()
	before := cloud.Calls()
	ensured := 0
	for _, s := range services {
		if s.deleted {
			continue
		}
		clk.Step(chaosTick)
		_, err := lb.EnsureLoadBalancer(ctx, chaosCluster, s.svc, nodes)
		require.NoError(t, err, "service %s", s.svc.Name)
		clk.Step(chaosTick)
		require.NoError(t, lb.UpdateLoadBalancer(ctx, chaosCluster, s.svc, nodes), "service %s", s.svc.Name)
		ensured += 2
	}
	calls := cloud.Calls().Sub(before)
	assert.Zero(t, calls.Writes(), "writes after convergence: %v", calls)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: calls[cloudapi.OpListLoadBalancers]}, calls, "only snapshot lists after convergence")
	assert.LessOrEqual(t, calls[cloudapi.OpListLoadBalancers], int64(ensured*int(chaosTick)/int(loadbalancer.DefaultMaxAge)+1), "reads after convergence: %v", calls)

	// (d) The faults were real.
	for _, k := range []faultinject.Kind{faultinject.Throttle, faultinject.Transient, faultinject.Timeout, faultinject.Ambiguous} {
		assert.Positive(t, total.Faults[k], "%v faults injected", k)
	}
	assert.Positive(t, counts.Ops[cloudapi.OpCreateLoadBalancer].Faults[faultinject.Ambiguous], "creates whose answer was lost")

	faults := 0
	for _, n := range total.Faults {
		faults += n
	}
	t.Logf("%d calls, %d passed, %d faults %v (lost create answers: %d); %d load balancers created, %d writes recorded, %d left",
		total.Calls, total.Passed, faults, total.Faults, counts.Ops[cloudapi.OpCreateLoadBalancer].Faults[faultinject.Ambiguous],
		created, len(history), len(inv.LoadBalancers))
}
