package lbclass_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the controllers' feature gates, as the CCM registers them
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// class is the class the tests' controllers serve; otherClass is another implementation's.
const (
	class      = "example.com/ccmkit"
	otherClass = "example.com/other"
	finalizer  = "service.kubernetes.io/load-balancer-cleanup"
)

// eventually waits for what a controller running on its own goroutines does.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 5*time.Millisecond, msg)
}

// svcTweak changes a Service before it is created.
type svcTweak func(*corev1.Service)

// newService returns a Service of type LoadBalancer with one TCP port. client-go's fake
// clientset gives objects no UID; ccmkit tags a load balancer with its Service's UID, so
// the Service gets one.
func newService(name string, tweaks ...svcTweak) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	for _, tweak := range tweaks {
		tweak(svc)
	}
	return svc
}

func withClass(c string) svcTweak {
	return func(s *corev1.Service) { s.Spec.LoadBalancerClass = &c }
}

func withFinalizer(s *corev1.Service) { s.Finalizers = append(s.Finalizers, finalizer) }

func newNode(name, providerID string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// cluster is a fake API (client-go's fake clientset) and a fake cloud under a controller.
type cluster struct {
	t     *testing.T
	kube  *kubefake.Clientset
	cloud *providertest.Cloud
}

// startCluster starts a fake clientset with the objects and, over it and cloud, the
// controllers run starts. Everything stops when the test ends.
func startCluster(t *testing.T, cloud *providertest.Cloud, run func(ctx context.Context, kube *kubefake.Clientset, factory informers.SharedInformerFactory), objects ...*corev1.Service) *cluster {
	t.Helper()
	kube := kubefake.NewClientset()
	for _, o := range objects {
		_, err := kube.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	watching := providertest.WatchesStarted(kube, "services", "nodes")
	factory := informers.NewSharedInformerFactory(kube, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, kube, factory)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	// The fake clientset's watch does not resume from the list's resource version: what is
	// created between an informer's list and its watch would never reach it.
	select {
	case <-watching:
	case <-done:
		t.Fatal("the controller stopped before it watched Services and Nodes")
	case <-time.After(time.Minute):
		t.Fatal("the controller did not watch Services and Nodes within a minute")
	}
	return &cluster{t: t, kube: kube, cloud: cloud}
}

// classOptions are the class controller's options in the tests.
type classOptions struct {
	unclassedServed bool
	clock           clock.WithTicker
}

// runClassController starts the class controller over cloud's provider, with one worker.
func runClassController(t *testing.T, cloud *providertest.Cloud, o classOptions, objects ...*corev1.Service) *cluster {
	t.Helper()
	_, lb, ok := cloud.Provider.LoadBalancerClass()
	require.True(t, ok, "the provider serves a class")
	return startCluster(t, cloud, func(ctx context.Context, kube *kubefake.Clientset, factory informers.SharedInformerFactory) {
		ctrl, err := lbclass.New(lb, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(), lbclass.Options{
			Class: class, UnclassedServed: o.unclassedServed, ClusterName: providertest.DefaultClusterID, Clock: o.clock,
		})
		if err != nil {
			t.Error(err)
			return
		}
		factory.Start(ctx.Done())
		ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("test"))
	}, objects...)
}

// runServiceController starts the upstream service controller over cloud's provider,
// with one worker, as the cloud-controller-manager would.
func runServiceController(t *testing.T, cloud *providertest.Cloud) *cluster {
	t.Helper()
	return startCluster(t, cloud, func(ctx context.Context, kube *kubefake.Clientset, factory informers.SharedInformerFactory) {
		ctrl, err := servicecontroller.New(cloud.Provider, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(), providertest.DefaultClusterID, utilfeature.DefaultFeatureGate)
		if err != nil {
			t.Error(err)
			return
		}
		factory.Start(ctx.Done())
		ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("test"))
	})
}

// classCloud is a fake cloud with instances i-1 to i-3 (nodes node-1 to node-3) and the
// provider over it serving class; serveUnclassed false offers no LoadBalancer to the
// upstream service controller.
func classCloud(t *testing.T, serveUnclassed bool, opts ...providertest.Option) *providertest.Cloud {
	t.Helper()
	return providertest.New(t, append([]providertest.Option{
		providertest.WithYAML(`
fake:
  instances:
    - {id: i-1, name: node-1}
    - {id: i-2, name: node-2}
    - {id: i-3, name: node-3}
`),
		providertest.WithConfig(func(c *provider.Config) {
			c.LoadBalancer.Class = class
			c.LoadBalancer.ServeUnclassed = &serveUnclassed
		}),
	}, opts...)...)
}

func (c *cluster) get(name string) *corev1.Service {
	c.t.Helper()
	svc, err := c.kube.CoreV1().Services(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return svc
}

func (c *cluster) create(svcs ...*corev1.Service) {
	c.t.Helper()
	for _, svc := range svcs {
		_, err := c.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
		require.NoError(c.t, err)
	}
}

func (c *cluster) update(name string, change func(*corev1.Service)) {
	c.t.Helper()
	svc := c.get(name)
	change(svc)
	_, err := c.kube.CoreV1().Services(metav1.NamespaceDefault).Update(context.Background(), svc, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

// markDeleted sets the deletion timestamp, as the API server does for an object with
// finalizers.
func (c *cluster) markDeleted(name string) {
	c.t.Helper()
	c.update(name, func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
}

func (c *cluster) addNode(n *corev1.Node) {
	c.t.Helper()
	_, err := c.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) updateNode(name string, change func(*corev1.Node)) {
	c.t.Helper()
	n, err := c.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	change(n)
	_, err = c.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) deleteNode(name string) {
	c.t.Helper()
	require.NoError(c.t, c.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}))
}

// lbs returns the cloud's load balancers of the Service.
func (c *cluster) lbs(name string) []cloudapi.LoadBalancer {
	return c.cloud.Fake.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: "uid-" + name})
}

// targets returns the sorted targets of the Service's one load balancer, or nil when it
// has none or several.
func (c *cluster) targets(name string) []string {
	lbs := c.lbs(name)
	if len(lbs) != 1 {
		return nil
	}
	t := slices.Clone(lbs[0].Spec.Targets)
	slices.Sort(t)
	if t == nil {
		t = []string{}
	}
	return t
}

// hasIngress reports whether the Service's status lists an address.
func (c *cluster) hasIngress(name string) bool {
	return len(c.get(name).Status.LoadBalancer.Ingress) > 0
}

// reasons returns the reasons of the events recorded on the Service, sorted and each
// once.
func (c *cluster) reasons(name string) []string {
	c.t.Helper()
	events, err := c.kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	require.NoError(c.t, err)
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Service" && e.InvolvedObject.Name == name && !slices.Contains(out, e.Reason) {
			out = append(out, e.Reason)
		}
	}
	slices.Sort(out)
	return out
}

// patches returns how often the Service was patched: the controllers write Services
// (finalizer and status) only by patches of the status subresource.
func (c *cluster) patches(name string) int {
	n := 0
	for _, a := range c.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "services" && p.GetName() == name {
			n++
		}
	}
	return n
}
