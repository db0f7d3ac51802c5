package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

// hcloudCCMPackage is examples/hcloud's cloud-controller-manager: examples/ccm with the
// Hetzner adapter linked in (--cloud-provider=hcloud).
const hcloudCCMPackage = "github.com/ccmkit/ccmkit/examples/hcloud/ccm"

// hcloudAddTarget is the mock's route pattern of the action that adds a target to a load
// balancer: the one the scenario fails once.
const hcloudAddTarget = "POST /load_balancers/{id}/actions/add_target"

// hcloudEnv is the world of the Hetzner scenario: a control plane, the Hetzner API mock in
// this process (httptest) with its rate limit, and examples/hcloud's CCM as a process
// against both.
type hcloudEnv struct {
	t       *testing.T
	ctx     context.Context
	cp      *harness.ControlPlane
	mock    *hcloudmock.Server
	bin     string
	config  string // the CCM's cloud config file
	ccm     *harness.CCMProcess
	logs    []*syncBuffer
	started time.Time
	apiURL  string // the mock's
}

// hcloudServers are the project's servers, one per Node the scenario registers, each in
// the private network 10 (k8s).
func hcloudServers(n int) []schema.Server {
	var servers []schema.Server
	for i := 1; i <= n; i++ {
		servers = append(servers, schema.Server{ID: int64(100 + i), Name: fmt.Sprintf("hc-node-%d", i),
			ServerType: schema.ServerType{Name: "cx22"}, Location: schema.Location{Name: "nbg1"},
			PublicNet:  schema.ServerPublicNet{IPv4: schema.ServerPublicNetIPv4{IP: fmt.Sprintf("198.51.100.%d", i)}},
			PrivateNet: []schema.ServerPrivateNet{{Network: 10, IP: fmt.Sprintf("10.0.0.%d", i)}}})
	}
	return servers
}

// newHcloudEnv starts the scenario's world, with the mock's rate limit limit.
func newHcloudEnv(t *testing.T, limit hcloudmock.RateLimit) *hcloudEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &hcloudEnv{t: t, ctx: ctx, started: time.Now()}
	var err error
	e.bin, err = harness.Build(ctx, t.TempDir(), "hcloud-ccm", hcloudCCMPackage)
	require.NoError(t, err)
	e.logf("built %s", hcloudCCMPackage)
	e.mock, err = hcloudmock.New(hcloudmock.Config{
		Servers:   hcloudServers(3),
		Networks:  []schema.Network{{ID: 10, Name: "k8s", IPRange: "10.0.0.0/16"}},
		RateLimit: limit,
		// Actions end by time, as the API's do: one counted in reads (ActionPolls) would
		// run for ever once the read that would end it is throttled, and lock its load
		// balancer.
		ActionDuration: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	api := httptest.NewServer(e.mock)
	e.apiURL = api.URL
	e.cp, err = harness.StartControlPlane()
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		if e.ccm != nil {
			assert.NoError(t, e.ccm.Kill())
		}
		if t.Failed() {
			for i, log := range e.logs {
				t.Logf("last lines of the log of CCM process %d:\n%s", i, log.tail(40))
			}
			t.Logf("the mock's calls: %v", e.mock.Calls())
		}
		api.Close()
		assert.NoError(t, e.cp.Stop())
	})
	e.config = filepath.Join(e.cp.Dir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(e.config, fmt.Appendf(nil, `cluster: {id: hetzner, name: hetzner}
cloudAPI: {retry: {maxAttempts: 5, initialBackoff: 20ms, maxBackoff: 500ms}}
hcloud: {endpoint: %q, location: nbg1, network: k8s}
credentials: {token: e2e-token}
`, api.URL), 0o600))
	return e
}

// logf logs with the time since the scenario started.
func (e *hcloudEnv) logf(format string, args ...any) {
	e.t.Helper()
	e.t.Logf("%5.1fs: %s", time.Since(e.started).Seconds(), fmt.Sprintf(format, args...))
}

// startCCM starts examples/hcloud's CCM with the harness's flags for the provider hcloud
// (no routes: the adapter has none yet), logging at V(2), where ccmkit's client logs each
// throttled answer.
func (e *hcloudEnv) startCCM() {
	e.t.Helper()
	log := &syncBuffer{}
	args := append([]string{e.bin}, harness.CCMFlags(e.cp, adapter.ProviderName, e.config)...)
	var err error
	e.ccm, err = harness.StartProcess(log, append(args, "--configure-cloud-routes=false", "--v=2")...)
	require.NoError(e.t, err)
	e.logs = append(e.logs, log)
	e.logf("started CCM process %d (pid %d)", len(e.logs)-1, e.ccm.Pid())
}

// eventually fails the test when cond does not hold within wait, or when the CCM process
// ended.
func (e *hcloudEnv) eventually(what string, cond func(context.Context) (bool, error)) {
	e.t.Helper()
	require.NoError(e.t, harness.Eventually(e.ctx, wait, what, func(ctx context.Context) (bool, error) {
		if exited, err := e.ccm.Exited(); exited {
			return false, fmt.Errorf("%w (stopping the wait)", err)
		}
		return cond(ctx)
	}))
	e.logf("%s", what)
}

// loadBalancer is the mock's only load balancer.
func (e *hcloudEnv) loadBalancer() (schema.LoadBalancer, error) {
	lbs := e.mock.Inventory().LoadBalancers
	if len(lbs) != 1 {
		return schema.LoadBalancer{}, fmt.Errorf("%d load balancers, want 1", len(lbs))
	}
	return lbs[0], nil
}

// targets are the server IDs a load balancer sends traffic to.
func targets(lb schema.LoadBalancer) []int64 {
	var ids []int64
	for _, t := range lb.Targets {
		if t.Server != nil {
			ids = append(ids, t.Server.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestHcloudCCMProcessOverTheMock runs examples/hcloud's CCM as a process against the
// Hetzner API mock, whose rate limit it overdraws, and a real control plane: the cloud node
// controller initializes Nodes from servers; a LoadBalancer Service annotated as Hetzner's
// own CCM's users annotate theirs (load-balancer.hetzner.cloud/...) gets the mock's load
// balancer, as those annotations ask, and its address; a Node added later is
// a target even though the first add_target action fails; and after the CCM is killed
// and started again its full resync writes nothing while the Service keeps its address.
func TestHcloudCCMProcessOverTheMock(t *testing.T) {
	// A project budget the first Service's load balancer overdraws (it takes about 18
	// calls, most of them in a second or two), so that the CCM meets rate_limit_exceeded
	// answers and waits for the RateLimit-Reset they name.
	e := newHcloudEnv(t, hcloudmock.RateLimit{Limit: 5, PerSecond: 1})
	client := e.cp.Client
	for _, name := range []string{"hc-node-1", "hc-node-2"} {
		_, err := harness.RegisterNode(e.ctx, client, harness.NodeSpec{Name: name})
		require.NoError(t, err)
	}
	e.startCCM()

	initialized := func(names ...string) {
		t.Helper()
		e.eventually("Nodes "+strings.Join(names, ", ")+" initialized", func(ctx context.Context) (bool, error) {
			for _, name := range names {
				n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil || !initialized(n) {
					return false, err
				}
			}
			return true, nil
		})
		for _, name := range names {
			n, err := client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			i, _ := strconv.Atoi(strings.TrimPrefix(name, "hc-node-"))
			assert.Equal(t, fmt.Sprintf("hcloud://%d", 100+i), n.Spec.ProviderID, name)
			// As Hetzner's own CCM labelled them: the legacy datacenter, the location.
			assert.Equal(t, "nbg1-dc3", n.Labels[corev1.LabelTopologyZone], name)
			assert.Equal(t, "nbg1", n.Labels[corev1.LabelTopologyRegion], name)
			assert.Equal(t, "cloud", n.Labels[adapter.LabelProvidedBy], name)
			assert.Equal(t, "cx22", n.Labels[corev1.LabelInstanceTypeStable], name)
			assert.Subset(t, n.Status.Addresses, []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", i)},
				{Type: corev1.NodeExternalIP, Address: fmt.Sprintf("198.51.100.%d", i)},
			}, name)
		}
	}
	initialized("hc-node-1", "hc-node-2")

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault, Annotations: map[string]string{
			// As Hetzner's own CCM's users annotate their Services (adapter.Aliases).
			adapter.LegacyPrefix + "type":                  "lb21",
			adapter.LegacyPrefix + "algorithm-type":        "least_connections",
			adapter.LegacyPrefix + "health-check-interval": "15s",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	svc, err := client.CoreV1().Services(svc.Namespace).Create(e.ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	var ingress string
	e.eventually("web's ingress address", func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ingress = s.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	})
	lb, err := e.loadBalancer()
	require.NoError(t, err)
	assert.Equal(t, lb.PublicNet.IPv4.IP, ingress, "the Service's address is its load balancer's")
	assert.Equal(t, "lb21", lb.LoadBalancerType.Name)
	assert.Equal(t, "least_connections", lb.Algorithm.Type)
	assert.Equal(t, "nbg1", lb.Location.Name, "the hcloud section's location")
	assert.Equal(t, []int64{101, 102}, targets(lb))
	require.Len(t, lb.Services, 1)
	assert.Equal(t, 80, lb.Services[0].ListenPort)
	assert.Equal(t, int(svc.Spec.Ports[0].NodePort), lb.Services[0].DestinationPort)
	assert.Equal(t, 15, lb.Services[0].HealthCheck.Interval, "the legacy health-check-interval")

	// The next add_target action fails (the change not made): the CCM's client retries
	// the update on a fresh read of the load balancer.
	e.mock.Inject(hcloudAddTarget, 1, hcloudmock.Fault{Code: "service_error", InAction: true})
	_, err = harness.RegisterNode(e.ctx, client, harness.NodeSpec{Name: "hc-node-3"})
	require.NoError(t, err)
	initialized("hc-node-3")
	e.eventually("hc-node-3's server a target of web's load balancer", func(context.Context) (bool, error) {
		lb, err := e.loadBalancer()
		return err == nil && slices.Equal(targets(lb), []int64{101, 102, 103}), err
	})
	assert.GreaterOrEqual(t, e.mock.Calls()[hcloudAddTarget], 2, "the failed add_target and the one after it")
	failed := slices.ContainsFunc(e.mock.Inventory().Actions, func(a schema.Action) bool {
		return a.Command == "add_target" && a.Status == "error"
	})
	assert.True(t, failed, "the scripted fault failed an add_target action")

	throttled := strings.Count(e.logs[0].String(), "Cloud API throttled")
	e.logf("the mock's calls so far: %v; throttled answers the CCM logged: %d", e.mock.Calls(), throttled)
	assert.Positive(t, throttled, "the CCM met the mock's rate limit")

	// Converged: quiet for a node status period, then the CCM dies and starts again.
	before := e.mock.Calls()
	time.Sleep(harness.Periods.NodeStatus)
	require.Zero(t, e.mock.Calls().Sub(before).Writes(), "writes while converged: %v", e.mock.Calls().Sub(before))
	require.NoError(t, e.ccm.Kill())
	restarted := time.Now().Truncate(time.Second) // event times have second precision
	before = e.mock.Calls()
	e.startCCM()
	e.eventually("web ensured by the restarted CCM", func(ctx context.Context) (bool, error) {
		events, err := client.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=EnsuredLoadBalancer"})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
			return ev.InvolvedObject.Name == svc.Name && (!ev.LastTimestamp.Time.Before(restarted) || !ev.EventTime.Time.Before(restarted))
		}), nil
	})
	time.Sleep(harness.Periods.NodeStatus) // a node status pass of the new CCM too
	calls := e.mock.Calls().Sub(before)
	e.logf("the mock's calls of the restarted CCM until it settled: %v", calls)
	assert.Positive(t, calls["GET /servers"]+calls["GET /servers/{id}"], "the restarted CCM read the servers")
	assert.Positive(t, calls["GET /load_balancers"]+calls["GET /load_balancers/{id}"], "the restarted CCM read the load balancers")
	assert.Zero(t, calls.Writes(), "a resync of a converged cluster writes nothing: %v", calls)
	s, err := client.CoreV1().Services(svc.Namespace).Get(e.ctx, svc.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, s.Status.LoadBalancer.Ingress)
	assert.Equal(t, ingress, s.Status.LoadBalancer.Ingress[0].IP, "the Service keeps its address")
	lbs := e.mock.Inventory().LoadBalancers
	require.Len(t, lbs, 1, "no second load balancer")
	assert.Equal(t, lb.ID, lbs[0].ID)
}
