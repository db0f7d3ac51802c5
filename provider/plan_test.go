package provider

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// planTag is the earlier cloud-controller-manager's mark in these tests.
const planTag = "old-ccm/service-uid"

// planCluster is a cloud and a cluster as an earlier cloud-controller-manager left them:
// web's load balancer marked with its UID, legacy with an address and nothing to take
// over, a Service of another class and a ClusterIP Service (neither planned), node-1
// labelled as the provider labels it, node-2 with another region.
func planCluster(t *testing.T) (*fake.Cloud, *Cloud, *kubefake.Clientset, *cloudapi.LoadBalancer) {
	t.Helper()
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{
		{ID: "i-1", Name: "node-1", Type: "small", Zone: "z1", Region: "r1"},
		{ID: "i-2", Name: "node-2", Type: "small", Zone: "z1", Region: "r1"},
	}})
	require.NoError(t, err)
	api, _ := cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(t.Context(), cloudapi.LoadBalancerSpec{Name: "aweb",
		Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
		Targets:   []string{"i-1", "i-2"}, Tags: map[string]string{planTag: "u-web"}})
	require.NoError(t, err)
	lb, err = api.GetLoadBalancer(t.Context(), lb.ID) // the fake activates it on a read
	require.NoError(t, err)

	opts := testOptions()
	opts.LoadBalancerAliases = loadbalancer.Aliases{OwnerTag: planTag}
	opts.NodeLabels = map[string]string{"example.com/provided-by": "cloud"}
	c, err := New(Config{Cluster: ClusterConfig{ID: "c1"}}, cloud, opts)
	require.NoError(t, err)

	lbService := func(name string, tweak func(*corev1.Service)) *corev1.Service {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("u-" + name)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		if tweak != nil {
			tweak(svc)
		}
		return svc
	}
	class := "other.example.com/lb"
	published := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
	}
	node := func(name, id, region string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelTopologyZone: "z1", corev1.LabelFailureDomainBetaZone: "z1", corev1.LabelTopologyRegion: region, corev1.LabelFailureDomainBetaRegion: region,
			corev1.LabelInstanceTypeStable: "small", corev1.LabelInstanceType: "small", "example.com/provided-by": "cloud",
		}}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}}
	}
	kube := kubefake.NewClientset([]runtime.Object{
		lbService("web", published(lb.Addresses[0])),
		lbService("legacy", published("203.0.113.9")),
		lbService("classy", func(s *corev1.Service) { s.Spec.LoadBalancerClass = &class }),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: "default", UID: "u-internal"}},
		node("node-1", "i-1", "r1"), node("node-2", "i-2", "r0"),
	}...)
	return cloud, c, kube, lb
}

// TestPlanOfACluster: the plan of a cluster an earlier cloud-controller-manager left
// says which Service is taken over with its address, which would get a new one (and
// lose the one it publishes), and which Node's labels differ; it reads the cluster and
// the cloud only.
func TestPlanOfACluster(t *testing.T) {
	cloud, c, kube, lb := planCluster(t)
	before := cloud.Calls()
	p, err := c.Plan(t.Context(), kube)
	require.NoError(t, err)
	assert.Zero(t, cloud.Calls().Sub(before).Writes(), "no cloud write")
	for _, a := range kube.Actions() {
		assert.Equal(t, "list", a.GetVerb(), "the cluster is only read: %v", a)
	}

	require.Len(t, p.Services, 2, "the served Services of type LoadBalancer")
	legacy, web := p.Services[0], p.Services[1]
	assert.Equal(t, "default/web", web.Service)
	assert.Equal(t, loadbalancer.PlanTakeover, web.Action)
	assert.Equal(t, lb.ID, web.LoadBalancerID)
	assert.Equal(t, lb.Addresses, web.Addresses)
	assert.False(t, web.LosesAddress)
	assert.Equal(t, "default/legacy", legacy.Service)
	assert.Equal(t, loadbalancer.PlanCreate, legacy.Action)
	assert.True(t, legacy.LosesAddress)
	assert.True(t, p.Attention())

	require.Len(t, p.Nodes, 2)
	assert.Empty(t, p.Nodes[0].Changes, "node-1 is labelled as the provider labels it")
	assert.ElementsMatch(t, []LabelChange{
		{Label: corev1.LabelTopologyRegion, From: "r0", To: "r1"},
		{Label: corev1.LabelFailureDomainBetaRegion, From: "r0", To: "r1"},
	}, p.Nodes[1].Changes)
}

// TestPlanCommand runs `ccm plan` over the fake: its text, its JSON, its exit code, and
// nothing written.
func TestPlanCommand(t *testing.T) {
	cloud, c, kube, lb := planCluster(t)
	name := "ccmkit-test-plan"
	cloudprovider.RegisterCloudProvider(name, func(io.Reader) (cloudprovider.Interface, error) { return c, nil })
	client := func(string) (kubernetes.Interface, error) { return kube, nil }
	before := cloud.Calls()

	var out, errOut bytes.Buffer
	code := runPlan(t.Context(), name, nil, &out, &errOut, client)
	assert.Equal(t, PlanAttention, code, "legacy would lose its address: %s", errOut.String())
	text := out.String()
	assert.Contains(t, text, "default/web: takeover of load balancer "+lb.ID+" (marked "+planTag+"=u-web by the earlier cloud-controller-manager), addresses ["+lb.Addresses[0])
	assert.Contains(t, text, "default/legacy: create: a NEW load balancer with a NEW address\n    ! loses its address: publishes [203.0.113.9]")
	assert.Contains(t, text, "  node-2:\n    - failure-domain.beta.kubernetes.io/region: r0 → r1\n    - topology.kubernetes.io/region: r0 → r1\n")
	assert.Contains(t, text, "Summary: Services: 1 takeover, 1 create; 1 would lose an address. Nodes: 1 of 2 with other labels.")

	out.Reset()
	code = runPlan(t.Context(), name, []string{"-o", "json"}, &out, &errOut, client)
	assert.Equal(t, PlanAttention, code)
	var got MigrationPlan
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Len(t, got.Services, 2)
	assert.Equal(t, loadbalancer.PlanTakeover, got.Services[1].Action)
	assert.Contains(t, got.Services[1].Changes, "tags: +ccmkit.io/adopted=true, +ccmkit.io/cluster=c1, +ccmkit.io/service=default/web, +ccmkit.io/service-uid=u-web")

	assert.Equal(t, 2, runPlan(t.Context(), name, []string{"-o", "yaml"}, &out, &errOut, client))
	assert.Zero(t, cloud.Calls().Sub(before).Writes(), "no cloud write")
	for _, a := range kube.Actions() {
		assert.Equal(t, "list", a.GetVerb(), "the cluster is only read: %v", a)
	}
}
