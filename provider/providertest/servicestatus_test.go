package providertest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// TestServiceControllerAndWhatTheServiceSays runs a Service through the upstream service
// controller with the client Initialize gets: the Service shows its load balancer's ID and
// a ready condition beside the address the controller publishes, and neither once it
// stops being of type LoadBalancer.
func TestServiceControllerAndWhatTheServiceSays(t *testing.T) {
	t.Parallel()
	c := providertest.New(t, providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}))
	s := runServiceController(t, c.Provider)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	c.Provider.Initialize(&providertest.ClientBuilder{Kube: s.kube}, stop)

	s.create(t, lbService("web", 80))
	eventually(t, func() bool {
		svc := s.get(t, "web")
		lbs := c.Fake.Inventory().LoadBalancers
		ready := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady)
		return len(lbs) == 1 && svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID] == lbs[0].ID &&
			ready != nil && ready.Status == metav1.ConditionTrue && len(svc.Status.LoadBalancer.Ingress) == 1
	}, "web shows its load balancer's ID, a ready condition and its address")

	s.update(t, "web", func(svc *corev1.Service) {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	})
	eventually(t, func() bool {
		svc := s.get(t, "web")
		_, annotated := svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID]
		return !annotated && len(svc.Status.Conditions) == 0 && len(c.Fake.Inventory().LoadBalancers) == 0
	}, "web shows neither once it is no load balancer")
}
