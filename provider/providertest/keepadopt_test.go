package providertest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// TestServiceControllerKeepAndAdopt runs keep-on-delete and load-balancer-id through the
// upstream service controller: the load balancer of a Service that stops being of type
// LoadBalancer stays in the cloud with its address (the cloud config's default), a new
// Service that names it gets the same address, a third Service that names it while it
// is owned gets a Warning event and changes nothing, and without keep-on-delete the
// adopted load balancer goes with its Service.
func TestServiceControllerKeepAndAdopt(t *testing.T) {
	t.Parallel()
	c := providertest.New(t,
		providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}),
		providertest.WithConfig(func(cfg *provider.Config) { cfg.LoadBalancer.KeepOnDelete = true }),
	)
	s := runServiceController(t, c.Provider)
	annotate := func(svc *corev1.Service, kv ...string) *corev1.Service {
		svc.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			svc.Annotations[loadbalancer.DefaultAnnotationPrefix+kv[i]] = kv[i+1]
		}
		return svc
	}

	s.create(t, lbService("web", 80))
	address := s.ingress(t, "web")[0].IP
	lbs := c.Fake.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	id := lbs[0].ID

	// web stops being of type LoadBalancer: the cloud config's keepOnDelete keeps it.
	s.update(t, "web", func(svc *corev1.Service) {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	})
	eventually(t, func() bool {
		svc := s.get(t, "web")
		return len(svc.Finalizers) == 0 && len(svc.Status.LoadBalancer.Ingress) == 0
	}, "the service controller lets web's load balancer go")
	lbs = c.Fake.Inventory().LoadBalancers
	require.Len(t, lbs, 1, c.Describe())
	assert.Equal(t, id, lbs[0].ID)
	assert.Equal(t, []string{address}, lbs[0].Addresses)
	assert.NotContains(t, lbs[0].Spec.Tags, cloudapi.TagCluster)
	assert.NotContains(t, lbs[0].Spec.Tags, cloudapi.TagService)

	// A new Service names it: the same address.
	s.create(t, annotate(lbService("web-v2", 80), loadbalancer.AnnotationLoadBalancerID, id, loadbalancer.AnnotationKeepOnDelete, "false"))
	assert.Equal(t, address, s.ingress(t, "web-v2")[0].IP)
	lbs = c.Fake.Inventory().LoadBalancers
	require.Len(t, lbs, 1, c.Describe())
	assert.Equal(t, "uid-web-v2", lbs[0].Spec.Tags[cloudapi.TagService])

	// A third names it while web-v2 owns it: a Warning event, and nothing changes.
	before := c.Fake.Inventory().LoadBalancers
	_, err := s.kube.CoreV1().Services("default").Create(context.Background(), annotate(lbService("thief", 80), loadbalancer.AnnotationLoadBalancerID, id), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, func() bool {
		events, err := s.kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == "thief" && e.Type == corev1.EventTypeWarning && e.Reason == "SyncLoadBalancerFailed" &&
				strings.Contains(e.Message, "which belongs to another Service") && !strings.Contains(e.Message, "web-v2")
		})
	}, "thief gets a Warning event that names no other Service")
	assert.Empty(t, s.ingress(t, "thief"))
	assert.Equal(t, before, c.Fake.Inventory().LoadBalancers, "nothing changed in the cloud")

	// web-v2 goes without keep-on-delete: its adopted load balancer goes with it.
	s.delete(t, "web-v2")
	assert.Empty(t, c.Fake.Inventory().LoadBalancers, c.Describe())
}
