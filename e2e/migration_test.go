package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/provider"
)

// TestHcloudMigrationFromHetznersCCM is the runbook of examples/hcloud/README.md ("Moving
// from Hetzner's own CCM"): a cluster and a project as Hetzner's own cloud-controller-manager
// left them (initialized Nodes with its labels; load balancers named and labelled its way,
// one per Service, their addresses in the Services' status; one Service with its legacy
// annotations, one with none), the old CCM stopped; the plan, read-only, says every Service
// is taken over with its address and no Node label changes; then ccmkit's hcloud CCM starts
// and takes every load balancer over: every address kept, no second load balancer, the
// health checks as they were, the Node labels unchanged, and nothing written once it
// settled.
func TestHcloudMigrationFromHetznersCCM(t *testing.T) {
	e := newHcloudEnv(t, hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20})
	client := e.cp.Client

	// The Nodes, as Hetzner's CCM initialized them.
	for i, name := range []string{"hc-node-1", "hc-node-2"} {
		n, err := harness.RegisterNode(e.ctx, client, harness.NodeSpec{Name: name})
		require.NoError(t, err)
		n.Spec.ProviderID = fmt.Sprintf("hcloud://%d", 101+i)
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintExternalCloudProvider })
		for k, v := range map[string]string{
			corev1.LabelTopologyRegion: "nbg1", corev1.LabelFailureDomainBetaRegion: "nbg1",
			corev1.LabelTopologyZone: "nbg1-dc3", corev1.LabelFailureDomainBetaZone: "nbg1-dc3",
			corev1.LabelInstanceTypeStable: "cx22", corev1.LabelInstanceType: "cx22",
			adapter.LabelProvidedBy: "cloud",
		} {
			n.Labels[k] = v
		}
		_, err = client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	labels := func() map[string]map[string]string {
		out := map[string]map[string]string{}
		nodes, err := client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, n := range nodes.Items {
			out[n.Name] = n.Labels
		}
		return out
	}
	labelsBefore := labels()

	// The Services, each with the load balancer Hetzner's CCM made for it and its
	// addresses in the Service's status.
	sdk := hcloud.NewClient(hcloud.WithEndpoint(e.apiURL), hcloud.WithToken("t"), hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}))
	services := map[string]map[string]string{
		"web": nil,
		"api": {adapter.LegacyPrefix + "type": "lb11", adapter.LegacyPrefix + "health-check-interval": "15s"},
	}
	published := map[string][]string{}
	for name, annotations := range services {
		svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Create(e.ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		uid, nodePort := string(svc.UID), int(svc.Spec.Ports[0].NodePort)
		hc := &hcloud.LoadBalancerCreateOptsServiceHealthCheck{Protocol: hcloud.LoadBalancerServiceProtocolTCP, Port: hcloud.Ptr(nodePort)}
		if annotations != nil {
			hc.Interval = hcloud.Ptr(15 * time.Second)
		}
		// One create, its service in it: the create's action locks the load balancer a while.
		made, _, err := sdk.LoadBalancer.Create(e.ctx, hcloud.LoadBalancerCreateOpts{Name: "a" + strings.ReplaceAll(uid, "-", ""),
			LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "nbg1"},
			Labels: map[string]string{adapter.LabelServiceUID: uid},
			Targets: []hcloud.LoadBalancerCreateOptsTarget{
				{Type: hcloud.LoadBalancerTargetTypeServer, Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: 101}}},
				{Type: hcloud.LoadBalancerTargetTypeServer, Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: 102}}},
			},
			Services: []hcloud.LoadBalancerCreateOptsService{{Protocol: hcloud.LoadBalancerServiceProtocolTCP,
				ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(nodePort), Proxyprotocol: hcloud.Ptr(false), HealthCheck: hc}}})
		require.NoError(t, err)
		lb, _, err := sdk.LoadBalancer.GetByID(e.ctx, made.LoadBalancer.ID)
		require.NoError(t, err)
		published[name] = []string{lb.PublicNet.IPv4.IP.String(), lb.PublicNet.IPv6.IP.String()}
		for _, ip := range published[name] {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		_, err = client.CoreV1().Services(svc.Namespace).UpdateStatus(e.ctx, svc, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	before := e.mock.Inventory().LoadBalancers
	require.Len(t, before, 2)
	e.logf("the cluster and the project as Hetzner's CCM left them")

	// The plan: read-only, and what it says.
	runPlan := func() provider.MigrationPlan {
		t.Helper()
		calls := e.mock.Calls()
		var stdout, stderr bytes.Buffer
		plan := exec.CommandContext(e.ctx, e.bin, provider.PlanCommand, // #nosec G204: the binary the test built
			"--cloud-provider="+adapter.ProviderName, "--cloud-config="+e.config, "--kubeconfig="+e.cp.KubeconfigPath, "-o", "json")
		plan.Stdout, plan.Stderr = &stdout, &stderr
		err := plan.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			require.Failf(t, "the plan asks for attention", "exit code %d; %s\n%s", exit.ExitCode(), stdout.String(), stderr.String())
		}
		require.NoError(t, err, stderr.String())
		assert.Zero(t, e.mock.Calls().Sub(calls).Writes(), "the plan writes nothing: %v", e.mock.Calls().Sub(calls))
		var got provider.MigrationPlan
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
		require.Len(t, got.Services, 2, stdout.String())
		for _, np := range got.Nodes {
			assert.Empty(t, np.Changes, "%s: the labels Hetzner's CCM gave", np.Node)
			assert.Empty(t, np.Error, np.Node)
		}
		return got
	}
	got := runPlan()
	for _, sp := range got.Services {
		assert.Equal(t, "takeover", string(sp.Action), "%s: %+v", sp.Service, sp)
		assert.False(t, sp.LosesAddress, sp.Service)
	}
	e.logf("the plan: every Service taken over, no Node label changed")

	// ccmkit's CCM takes over.
	e.startCCM()
	e.eventually("every load balancer taken over", func(ctx context.Context) (bool, error) {
		for _, lb := range e.mock.Inventory().LoadBalancers {
			if lb.Labels["ccmkit.io/service-uid"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	after := e.mock.Inventory().LoadBalancers
	require.Len(t, after, 2, "no second load balancer")
	byID := map[int64]schema.LoadBalancer{}
	for _, lb := range after {
		byID[lb.ID] = lb
	}
	for _, old := range before {
		lb, ok := byID[old.ID]
		require.True(t, ok, "load balancer %d kept", old.ID)
		assert.Equal(t, old.PublicNet, lb.PublicNet, "load balancer %d's addresses", old.ID)
		require.Len(t, lb.Services, 1)
		assert.Equal(t, old.Services[0].HealthCheck, lb.Services[0].HealthCheck, "load balancer %d's health check as it was", old.ID)
		assert.Equal(t, old.Labels[adapter.LabelServiceUID], lb.Labels[adapter.LabelServiceUID], "the earlier CCM's mark stays")
	}
	for name := range services {
		s, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		assert.ElementsMatch(t, published[name], ips, "%s keeps its addresses", name)
	}

	// Settled: nothing written for a node status period, the Node labels as they were.
	time.Sleep(harness.Periods.NodeStatus)
	calls := e.mock.Calls()
	time.Sleep(harness.Periods.NodeStatus)
	assert.Zero(t, e.mock.Calls().Sub(calls).Writes(), "writes once settled: %v", e.mock.Calls().Sub(calls))
	assert.Equal(t, labelsBefore, labels(), "the Node labels Hetzner's CCM gave")
	for _, sp := range runPlan().Services {
		assert.Equal(t, "unchanged", string(sp.Action), "a second plan: %s", sp.Service)
	}
}
