package loadbalancer_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

func TestHostnameStatus(t *testing.T) {
	hostnames := fake.Hostnames{Domain: "lb.example.com"}
	withoutAddresses := fake.Hostnames{Domain: "lb.example.com", WithoutAddresses: true}
	for _, tc := range []struct {
		name      string
		hostnames fake.Hostnames
		svc       *corev1.Service
		// want returns the ingress the status must hold, given the cloud's load balancer.
		want func(lb cloudapi.LoadBalancer) []corev1.LoadBalancerIngress
	}{
		{"a cloud whose load balancers are names: the hostname", withoutAddresses, newService("web"),
			func(lb cloudapi.LoadBalancer) []corev1.LoadBalancerIngress {
				return []corev1.LoadBalancerIngress{{Hostname: lb.Hostname}}
			}},
		{"a cloud with both: the addresses, one per ingress", hostnames, newService("web"),
			func(lb cloudapi.LoadBalancer) []corev1.LoadBalancerIngress {
				return []corev1.LoadBalancerIngress{{IP: lb.Addresses[0], IPMode: ptr(corev1.LoadBalancerIPModeVIP)}}
			}},
		{"the annotation: its hostname instead of the addresses, without ipMode", hostnames,
			newService("web", withAnnotation(loadbalancer.AnnotationHostname, "web.example.org"), withAnnotation(loadbalancer.AnnotationProxyProtocol, "true")),
			func(cloudapi.LoadBalancer) []corev1.LoadBalancerIngress {
				return []corev1.LoadBalancerIngress{{Hostname: "web.example.org"}}
			}},
		{"the annotation instead of the cloud's hostname", withoutAddresses,
			newService("web", withAnnotation(loadbalancer.AnnotationHostname, " web.example.org ")),
			func(cloudapi.LoadBalancer) []corev1.LoadBalancerIngress {
				return []corev1.LoadBalancerIngress{{Hostname: "web.example.org"}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{Hostnames: tc.hostnames, Provisioning: fake.Provisioning{Reads: 1}})
			for range 2 { // the create's answer and one read
				_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", tc.svc, e.nodes)
				var retry *api.RetryError
				require.ErrorAs(t, err, &retry, "provisioning, whether the load balancer is reached by a name or an address")
			}
			st := e.ensure(t, tc.svc, e.nodes)
			lb := e.only(t)
			assert.Equal(t, tc.want(lb), st.Ingress)

			before := e.cloud.Calls()
			again := e.ensure(t, tc.svc, e.nodes)
			assert.Empty(t, e.cloud.Calls().Sub(before), "converged: no call")
			assert.Equal(t, st, again)
			got, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", tc.svc)
			require.NoError(t, err)
			assert.True(t, exists)
			assert.Equal(t, st, got)
		})
	}
}

func TestHostnameAnnotationErrors(t *testing.T) {
	e := newEnv(t, fake.Config{})
	for _, v := range []string{"203.0.113.7", "Web.Example.org", "web_frontend.example.org", "-web.example.org"} {
		t.Run(v, func(t *testing.T) {
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationHostname, v)), e.nodes)
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, prefix+loadbalancer.AnnotationHostname, aerr.Key)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	}
}

// TestCloudHostnameTheStatusCannotHold: a hostname the API server would refuse in the
// Service's status is an error naming it, not a status patch that fails on every sync.
func TestCloudHostnameTheStatusCannotHold(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lb, m := newMockLoadBalancer(t)
	named := mockConverged()
	named.Addresses, named.Hostname = nil, "LB_1.Example.com"
	m.EXPECT().ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", named), nil)
	_, err := lb.EnsureLoadBalancer(ctx, "c", mockService(), mockNodes())
	require.ErrorContains(t, err, `load balancer lb-1: the cloud reports nothing a Service's status can hold: the hostname "LB_1.Example.com"`)

	// Whether there is a load balancer to delete does not depend on its status.
	m.EXPECT().ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", named), nil)
	st, exists, err := lb.GetLoadBalancer(ctx, "c", mockService())
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Empty(t, st.Ingress)
}

// TestCloudAddressesTheStatusCannotHold: an address the API server would refuse in the
// Service's status (as its Service status validation checks, strictly) is left out of the
// status with a Warning event naming the load balancer and the value, cut to a bound; when
// no address is left, EnsureLoadBalancer fails (the service controller retries), never an
// empty status, which would read as "no load balancer".
func TestCloudAddressesTheStatusCannotHold(t *testing.T) {
	long := strings.Repeat("1", 10_000)
	for _, tc := range []struct {
		name      string
		addresses []string
		proxy     bool
		// want is the status's ingress; nil: EnsureLoadBalancer fails.
		want       []corev1.LoadBalancerIngress
		wantEvents []string // substrings of the one Warning event
	}{
		{"some refused: the others published", []string{"fe80::1%eth0", mockAddress, "", "2001:db8::7"}, false,
			[]corev1.LoadBalancerIngress{
				{IP: mockAddress, IPMode: ptr(corev1.LoadBalancerIPModeVIP)},
				{IP: "2001:db8::7", IPMode: ptr(corev1.LoadBalancerIPModeVIP)},
			},
			[]string{`Warning AddressNotPublished Load balancer lb-1: the cloud reports the address "fe80::1%eth0" (must be a valid IP address`, `the address ""`}},
		{"ipMode Proxy on what is published", []string{"::ffff:203.0.113.10", mockAddress}, true,
			[]corev1.LoadBalancerIngress{{IP: mockAddress, IPMode: ptr(corev1.LoadBalancerIPModeProxy)}},
			[]string{`the address "::ffff:203.0.113.10" (must not be an IPv4-mapped IPv6 address)`}},
		{"all refused: an error", []string{"010.0.0.1", "lb-1.example.com", "203.0.113.10\x00", long, "zz"}, false, nil,
			[]string{`the address "010.0.0.1" (must not have leading 0s)`, `"lb-1.example.com"`, `"203.0.113.10\x00"`, "and 2 more"}},
		{"a value of any size is cut", []string{long}, false, nil,
			[]string{`"` + strings.Repeat("1", 128) + `"… (10000 bytes)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			m := cloudapimock.NewMockLoadBalancerAPI(gomock.NewController(t))
			format, err := providerid.Default("ccmkit")
			require.NoError(t, err)
			rec := record.NewFakeRecorder(10)
			lb, err := loadbalancer.New(m, loadbalancer.Options{ClusterID: "c1", ProviderID: format, Recorder: rec})
			require.NoError(t, err)
			answered := mockConverged()
			answered.Addresses = tc.addresses
			answered.Spec.ProxyProtocol = tc.proxy
			svc := mockService()
			if tc.proxy {
				svc.Annotations = map[string]string{prefix + loadbalancer.AnnotationProxyProtocol: "true"}
			}
			m.EXPECT().ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", answered), nil)

			st, err := lb.EnsureLoadBalancer(ctx, "c", svc, mockNodes())
			got := events(rec)
			require.Len(t, got, 1, "one Warning event")
			for _, want := range tc.wantEvents {
				assert.Contains(t, got[0], want)
			}
			assert.Less(t, len(got[0]), 1024, "the event's message is bounded")
			if tc.want == nil {
				require.ErrorContains(t, err, "load balancer lb-1: the cloud reports nothing a Service's status can hold: ")
				assert.Nil(t, st)
				assert.Less(t, len(err.Error()), 1024, "the error is bounded")
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.want, st.Ingress)
			}

			// GetLoadBalancer answers what is published, and that there is a load balancer.
			m.EXPECT().ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", answered), nil)
			got2, exists, err := lb.GetLoadBalancer(ctx, "c", svc)
			require.NoError(t, err)
			assert.True(t, exists)
			assert.Equal(t, tc.want, got2.Ingress)
		})
	}
}

func ptr[T any](v T) *T { return &v }
