package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	fakecloud "k8s.io/cloud-provider/fake"
	"k8s.io/cloud-provider/names"
	"k8s.io/component-base/metrics"
	genericcontrollermanager "k8s.io/controller-manager/app"

	"github.com/ccmkit/ccmkit/controllers"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
	"github.com/ccmkit/ccmkit/sweeper"
)

// TestWith: the upstream controllers are kept as they are, the map passed in is not
// changed, and ccmkit's controllers are added under their names and identities, none of
// them an upstream controller's name.
func TestWith(t *testing.T) {
	t.Parallel()
	got := controllers.With(app.DefaultInitFuncConstructors)
	ours := map[string]string{lbclass.ControllerName: lbclass.ClientName, sweeper.ControllerName: sweeper.ClientName,
		controllers.NodeLabelsController: "", controllers.TargetGroupCollector: ""}
	assert.Len(t, got, len(app.DefaultInitFuncConstructors)+len(ours))
	for name, ctor := range app.DefaultInitFuncConstructors {
		assert.Equal(t, ctor.InitContext, got[name].InitContext, "%s is kept", name)
	}
	for name, client := range ours {
		assert.NotContains(t, app.DefaultInitFuncConstructors, name, "the upstream map is not changed")
		assert.NotContains(t, names.CCMControllerAliases(), name, "no upstream controller of that name")
		require.Contains(t, got, name)
		assert.Equal(t, client, got[name].InitContext.ClientName, name)
		assert.NotNil(t, got[name].Constructor, name)
	}
	assert.Equal(t, app.DefaultInitFuncConstructors[names.ServiceLBController].InitContext.ClientName, lbclass.ClientName,
		"the class controller calls the API server as the service controller, whose RBAC deploy/ grants")
	assert.Len(t, controllers.With(nil), len(ours))
}

// start runs the InitFunc of the controller name as the cloud-controller-manager does.
func start(t *testing.T, ctx context.Context, name string, cloud cloudprovider.Interface, kube kubernetes.Interface) (started bool, asked []string) {
	t.Helper()
	builder := &providertest.ClientBuilder{Kube: kube}
	cfg := &config.Config{ClientBuilder: builder}
	ctor := controllers.With(nil)[name]
	_, started, err := ctor.Constructor(ctor.InitContext, cfg.Complete(), cloud)(ctx, genericcontrollermanager.ControllerContext{})
	require.NoError(t, err)
	return started, builder.Asked()
}

func newProvider(t *testing.T, groups bool, lbsOn bool) (*provider.Cloud, *fake.Cloud) {
	t.Helper()
	cloud, err := fake.New(fake.Config{
		Instances:    []fake.Instance{{ID: "i-1", Name: "node-1"}, {ID: "i-2", Name: "node-2"}},
		Capabilities: fake.Capabilities{TargetGroups: &groups},
	})
	require.NoError(t, err)
	cfg := provider.Config{Cluster: provider.ClusterConfig{ID: "c"}}
	if !lbsOn {
		cfg.Enable.LoadBalancers = &lbsOn
	}
	p, err := provider.New(cfg, cloud, provider.Options{Metrics: metrics.NewKubeRegistry()})
	require.NoError(t, err)
	return p, cloud
}

// The node labels controller: a Node's new labels reach the targets of a Service that
// selects by them, which the service controller alone would not do; it calls the API
// server as the provider's identity; when ctx ends, no goroutine is left behind.
func TestNodeLabelsController(t *testing.T) {
	before := goleak.IgnoreCurrent()
	p, cloud := newProvider(t, false, true)
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}},
			Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-" + name[len(name)-1:]}}
	}
	nodes := []*corev1.Node{node("node-1", "web"), node("node-2", "db")}
	kube := kubefake.NewClientset(nodes[0], nodes[1])
	ctx, cancel := context.WithCancel(t.Context())
	started, asked := start(t, ctx, controllers.NodeLabelsController, p, kube)
	require.True(t, started)
	assert.Equal(t, []string{"ccmkit-cloud-provider"}, asked)

	lb, _ := p.LoadBalancer()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web",
			Annotations: map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationNodeSelector: "pool=web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	_, err := lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
	require.NoError(t, err)
	targets := func() []string { return cloud.Inventory().LoadBalancers[0].Spec.Targets }
	require.Equal(t, []string{"i-1"}, targets())

	require.Eventually(t, func() bool { // the watch is up: the label change is an event it gets
		for _, a := range kube.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "nodes" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	relabelled := nodes[1].DeepCopy()
	relabelled.Labels["pool"] = "web"
	_, err = kube.CoreV1().Nodes().Update(t.Context(), relabelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []string{"i-1", "i-2"}, targets())
	}, 10*time.Second, 10*time.Millisecond, "node-2's new label makes it a target")

	cancel()
	// Run's shutdown takes a few goroutine hops (the queue, the informers' watches).
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, goleak.Find(before))
	}, 10*time.Second, 20*time.Millisecond, "no goroutine left once ctx ended")
}

// Each load balancer controller starts only when there is work for it: the collector
// only with target groups, neither without load balancers; a provider that is not
// ccmkit's starts neither.
func TestLoadBalancerControllersStartOnlyWithWork(t *testing.T) {
	kube := kubefake.NewClientset()
	for _, tt := range []struct {
		name                 string
		groups, lbs          bool
		nodeLabels, collects bool
	}{
		{"load balancers", false, true, true, false},
		{"load balancers with target groups", true, true, true, true},
		{"load balancers off", true, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newProvider(t, tt.groups, tt.lbs)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			started, _ := start(t, ctx, controllers.NodeLabelsController, p, kube)
			assert.Equal(t, tt.nodeLabels, started, "node labels")
			started, asked := start(t, ctx, controllers.TargetGroupCollector, p, kube)
			assert.Equal(t, tt.collects, started, "collector")
			assert.Empty(t, asked, "the collector calls only the cloud")
		})
	}
	for _, name := range []string{controllers.NodeLabelsController, controllers.TargetGroupCollector} {
		started, _ := start(t, t.Context(), name, &fakecloud.Cloud{}, kube)
		assert.False(t, started, name)
	}
}
