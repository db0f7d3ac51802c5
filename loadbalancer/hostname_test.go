package loadbalancer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
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
	require.ErrorContains(t, err, `load balancer lb-1: the cloud reports the hostname "LB_1.Example.com", which a Service's status cannot hold`)

	// Whether there is a load balancer to delete does not depend on its status.
	m.EXPECT().ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", named), nil)
	st, exists, err := lb.GetLoadBalancer(ctx, "c", mockService())
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Empty(t, st.Ingress)
}

func ptr[T any](v T) *T { return &v }
