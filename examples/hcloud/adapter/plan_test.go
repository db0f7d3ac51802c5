package adapter_test

import (
	"strings"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestPlanOfAClusterHetznersCCMLeft: a cluster and a project as Hetzner's own CCM left
// them (its load balancers named and labelled its way, Services with and without its
// annotations publishing their addresses, Nodes with its labels): the plan says every
// Service is taken over with its addresses and health check kept, no Node's labels
// change, and nothing is written, to the project or the cluster.
func TestPlanOfAClusterHetznersCCMLeft(t *testing.T) {
	uids := map[string]string{"web": "5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f", "api": "0b9e5c1a-7d4e-4f6a-8b2c-3d4e5f6a7b8c"}
	cfg := hcloudmock.Config{RateLimit: hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20},
		Servers: []schema.Server{{ID: 100, Name: "node-0", Status: "running", ServerType: schema.ServerType{Name: "cx22"}, Location: schema.Location{Name: "fsn1"},
			PublicNet: schema.ServerPublicNet{IPv4: schema.ServerPublicNetIPv4{IP: "198.51.100.7"}}}},
		LoadBalancers: []hcloudmock.LoadBalancerSeed{hetznerMade(uids["web"], 100, 80, 30080), hetznerMade(uids["api"], 100, 81, 30081)}}
	m, url := newMock(t, cfg, nil)
	objects := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0", Labels: map[string]string{
		corev1.LabelTopologyRegion: "fsn1", corev1.LabelFailureDomainBetaRegion: "fsn1",
		corev1.LabelTopologyZone: "fsn1-dc14", corev1.LabelFailureDomainBetaZone: "fsn1-dc14",
		corev1.LabelInstanceTypeStable: "cx22", corev1.LabelInstanceType: "cx22", adapter.LabelProvidedBy: "cloud",
	}}, Spec: corev1.NodeSpec{ProviderID: "hcloud://100"}}}
	addresses := map[string][]string{}
	for i, name := range []string{"web", "api"} {
		lb := m.Inventory().LoadBalancers[i]
		addresses[name] = []string{lb.PublicNet.IPv4.IP, lb.PublicNet.IPv6.IP}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uids[name]), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: int32(80 + i), NodePort: int32(30080 + i)}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: lb.PublicNet.IPv4.IP}, {IP: lb.PublicNet.IPv6.IP}}}}}
		if name == "api" { // annotated for Hetzner's CCM, as that CCM left it
			svc.Annotations[adapter.LegacyPrefix+"uses-proxyprotocol"] = "false"
			svc.Annotations[adapter.LegacyPrefix+"id"] = "ignored"
		}
		objects = append(objects, svc)
	}
	kube := kubefake.NewClientset(objects...)
	p := hetznerProvider(t, adapter.Config{Endpoint: url, Location: "fsn1"}, metrics.NewKubeRegistry(), nil)

	before := m.Calls()
	plan, err := p.Plan(t.Context(), kube)
	require.NoError(t, err)
	assert.Zero(t, m.Calls().Sub(before).Writes(), "nothing written to the project: %v", m.Calls().Sub(before))
	for _, a := range kube.Actions() {
		assert.Equal(t, "list", a.GetVerb(), "the cluster is only read: %v", a)
	}

	require.Len(t, plan.Services, 2)
	for _, s := range plan.Services {
		name := strings.TrimPrefix(s.Service, "default/")
		assert.Equal(t, loadbalancer.PlanTakeover, s.Action, s.Service)
		assert.Equal(t, "marked "+adapter.LabelServiceUID+"="+uids[name]+" by the earlier cloud-controller-manager", s.By)
		assert.ElementsMatch(t, addresses[name], s.Addresses, "the addresses kept")
		assert.False(t, s.LosesAddress, s.Service)
		assert.Empty(t, s.Error)
		for _, c := range s.Changes {
			assert.False(t, strings.HasPrefix(c, "health check"), "the health check is kept: %s", c)
		}
	}
	assert.False(t, plan.Attention())
	require.Len(t, plan.Nodes, 1)
	assert.Empty(t, plan.Nodes[0].Error)
	assert.Empty(t, plan.Nodes[0].Changes, "the labels Hetzner's CCM gave")
	assert.Len(t, m.Inventory().LoadBalancers, 2)
}
