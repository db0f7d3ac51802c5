package providertest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics/testutil"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// Every load balancer call of the service controllers, through the LoadBalancer the
// upstream service controller gets and the one the class controller gets, is counted in
// LoadBalancerSyncMetric by method and result.
func TestLoadBalancerSyncMetric(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		class string
		lb    func(provider *provider.Cloud) (cloudprovider.LoadBalancer, bool)
	}{
		{"service controller", "", func(p *provider.Cloud) (cloudprovider.LoadBalancer, bool) { return p.LoadBalancer() }},
		{"class controller", "example.com/lb", func(p *provider.Cloud) (cloudprovider.LoadBalancer, bool) {
			_, lb, ok := p.LoadBalancerClass()
			return lb, ok
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := providertest.New(t,
				providertest.WithFake(fake.Config{
					Instances:    []fake.Instance{{ID: "i-1", Name: "node-1"}},
					Provisioning: fake.Provisioning{Reads: 1},
				}),
				providertest.WithConfig(func(cfg *provider.Config) { cfg.LoadBalancer.Class = tt.class }))
			lb, ok := tt.lb(c.Provider)
			require.True(t, ok)
			nodes := []*corev1.Node{node("node-1", "ccmkit://i-1")}
			svc := func(name string, annotations map[string]string) *corev1.Service {
				return &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: annotations},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
						Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
				}
			}
			web := svc("web", nil)
			bad := svc("bad", map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationInternal: "maybe"})

			_, err := lb.EnsureLoadBalancer(t.Context(), "test", web, nodes)
			require.Error(t, err, "provisioning")
			c.ExpireSnapshots() // the next list reads it active
			_, err = lb.EnsureLoadBalancer(t.Context(), "test", web, nodes)
			require.NoError(t, err)
			require.NoError(t, lb.UpdateLoadBalancer(t.Context(), "test", web, nodes))
			_, err = lb.EnsureLoadBalancer(t.Context(), "test", bad, nodes)
			require.Error(t, err)
			require.NoError(t, lb.EnsureLoadBalancerDeleted(t.Context(), "test", web))

			got := map[string]uint64{}
			for _, method := range []string{"ensure", "update", "delete"} {
				for _, result := range []string{"success", "retry", "error"} {
					vec, err := testutil.GetHistogramVecFromGatherer(c.Metrics, "cloudprovider_ccmkit_"+provider.LoadBalancerSyncMetric,
						map[string]string{"method": method, "result": result})
					require.NoError(t, err)
					if n := vec.GetAggregatedSampleCount(); n > 0 {
						got[method+"/"+result] = n
					}
				}
			}
			assert.Equal(t, map[string]uint64{"ensure/retry": 1, "ensure/success": 1, "ensure/error": 1, "update/success": 1, "delete/success": 1}, got)
		})
	}
}
