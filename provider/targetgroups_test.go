package provider

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestLoadBalancersUseTheCloudsTargetGroups(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		grouped      bool
	}{
		{"a cloud with target groups", "cluster: {id: c1}\nfake: {capabilities: {targetGroups: true}}\n", true},
		{"turned off in the config", "cluster: {id: c1}\nfake: {capabilities: {targetGroups: true}}\nloadBalancer: {targetGroups: false}\n", false},
		{"a cloud without them", "cluster: {id: c1}\nloadBalancer: {targetGroups: true}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, err := Factory(fakeBackend(), Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry()})(strings.NewReader(tc.config))
			require.NoError(t, err)
			lbs, ok := cloud.LoadBalancer()
			require.True(t, ok)
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
			}
			_, err = lbs.EnsureLoadBalancer(t.Context(), "c1", svc, nil)
			require.NoError(t, err)
			api, _ := cloud.(*Cloud).client.LoadBalancers()
			page, err := api.ListLoadBalancers(t.Context(), cloudapi.ListOptions{})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			assert.Equal(t, tc.grouped, page.Items[0].Spec.TargetGroup != "", "the load balancer names a group: %+v", page.Items[0].Spec)
		})
	}
}
