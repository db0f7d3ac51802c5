package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/builtin"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

const cloudYAML = `
backend: fake
cluster: {id: sc-test}
fake:
  instances:
    - {id: i-1, name: node-1}
    - {id: i-2, name: node-2}
`

// TestServiceGetsAndLosesItsLoadBalancer runs the service controller over the built-in
// provider with an in-memory Kubernetes API: a LoadBalancer Service gets its status from
// the fake cloud, and deleting it deletes the load balancer.
func TestServiceGetsAndLosesItsLoadBalancer(t *testing.T) {
	var cloud *fake.Cloud
	backend := builtin.Backend()
	newFake := backend.New
	backend.New = func(cfg *provider.Config, section fake.Config) (cloudapi.Client, error) {
		c, err := newFake(cfg, section)
		if err == nil {
			cloud = c.(*fake.Cloud)
		}
		return c, err
	}
	iface, err := provider.Factory(backend, provider.Options{Metrics: metrics.NewKubeRegistry()})(strings.NewReader(cloudYAML))
	require.NoError(t, err)

	// The Nodes come after the Service: the upstream controller's node sync and service
	// sync race on its service cache (an upstream data race), so this test lets them run
	// one after the other.
	kube := kubefake.NewClientset()
	// Two informers watch the Nodes: the service controller's and labelwatch's.
	watching := providertest.WatchesStarted(kube, "services", "nodes", "nodes")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, kube, iface, "test", 2) }()
	select { // a Service or Node created before the watches start would be lost to the controllers
	case <-watching:
	case <-time.After(time.Minute):
		cancel()
		require.NoError(t, <-done)
		require.FailNow(t, "the informers' watches did not start")
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	_, err = kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)

	var ingress []corev1.LoadBalancerIngress
	require.Eventually(t, func() bool {
		got, err := kube.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ingress = got.Status.LoadBalancer.Ingress
		return len(ingress) == 1
	}, 2*time.Minute, 20*time.Millisecond, "the Service gets its load balancer's address")
	lbs := cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	assert.Equal(t, lbs[0].Addresses[0], ingress[0].IP)
	assert.Empty(t, lbs[0].Spec.Targets, "no Nodes yet")

	for _, n := range []string{"1", "2"} {
		_, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-" + n},
			Spec:       corev1.NodeSpec{ProviderID: "ccmkit://i-" + n},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		lbs := cloud.Inventory().LoadBalancers
		return len(lbs) == 1 && len(lbs[0].Spec.Targets) == 2
	}, 2*time.Minute, 20*time.Millisecond, "new Nodes become targets")
	assert.Equal(t, []string{"i-1", "i-2"}, cloud.Inventory().LoadBalancers[0].Spec.Targets)

	// Deleting: the API server sets the deletion timestamp and keeps the Service while the
	// controller's finalizer is on it (the fake clientset does not, so the test does).
	got, err := kube.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, got.Finalizers, "service.kubernetes.io/load-balancer-cleanup")
	now := metav1.Now()
	got.DeletionTimestamp = &now
	_, err = kube.CoreV1().Services("default").Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(cloud.Inventory().LoadBalancers) == 0 }, 2*time.Minute, 20*time.Millisecond,
		"deleting the Service deletes its load balancer")
	require.Eventually(t, func() bool {
		got, err := kube.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(got.Finalizers) == 0
	}, 2*time.Minute, 20*time.Millisecond, "and then its finalizer")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "the controller stops when its context ends")
	case <-time.After(2 * time.Minute):
		t.Fatal("the controller did not stop")
	}
}

func TestStartNeedsACloudConfig(t *testing.T) {
	err := start(t.Context(), "", "", "ccmkit", "c", 1)
	require.ErrorContains(t, err, "--cloud-config is required")
}
