package provider

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// clientBuilder hands out one clientset under every name.
type clientBuilder struct{ kube kubernetes.Interface }

func (b clientBuilder) Config(string) (*rest.Config, error)         { return &rest.Config{}, nil }
func (b clientBuilder) ConfigOrDie(string) *rest.Config             { return &rest.Config{} }
func (b clientBuilder) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b clientBuilder) ClientOrDie(string) kubernetes.Interface     { return b.kube }

// TestInitializeWatchesNodeLabels: after Initialize, a Node's new labels reach the targets
// of a Service that selects by them, which the service controller alone would not do; and
// closing stop leaves no goroutine behind.
func TestInitializeWatchesNodeLabels(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}, {ID: "i-2", Name: "node-2"}}})
	require.NoError(t, err)
	p, err := New(Config{Cluster: ClusterConfig{ID: "c"}}, cloud, Options{Metrics: metrics.NewKubeRegistry()})
	require.NoError(t, err)
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}},
			Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-" + name[len(name)-1:]}}
	}
	nodes := []*corev1.Node{node("node-1", "web"), node("node-2", "db")}
	kube := kubefake.NewClientset(nodes[0], nodes[1])
	stop := make(chan struct{})
	p.Initialize(clientBuilder{kube}, stop)

	lb, _ := p.LoadBalancer()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web",
			Annotations: map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationNodeSelector: "pool=web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	_, err = lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
	require.NoError(t, err)
	targets := func() []string { return cloud.Inventory().LoadBalancers[0].Spec.Targets }
	require.Equal(t, []string{"i-1"}, targets())

	relabelled := nodes[1].DeepCopy()
	relabelled.Labels["pool"] = "web"
	_, err = kube.CoreV1().Nodes().Update(t.Context(), relabelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []string{"i-1", "i-2"}, targets())
	}, 10*time.Second, 10*time.Millisecond, "node-2's new label makes it a target")

	close(stop)
	goleak.VerifyNone(t, before)
}
