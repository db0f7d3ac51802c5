package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/fake"
)

// FailoverRoundsEnv names the environment variable that sets how many times
// TestRestcloudFailoverUnderChurn kills the leader (default 4, about a minute; the long
// variant is 12 or more).
const FailoverRoundsEnv = "CCMKIT_E2E_FAILOVER_ROUNDS"

// The packages the failover scenarios run as processes: the restcloud CCM and the server
// of its API over the fake cloud, which both CCMs share.
const (
	restcloudPackage       = "github.com/ccmkit/ccmkit/examples/restcloud"
	restcloudServerPackage = "github.com/ccmkit/ccmkit/examples/restcloud/restcloud-server"
)

// haClusterID is the cluster.id of the restcloud CCMs: the tag of their load balancers.
const haClusterID = "ha"

// haPageSize is the fake's page size behind the server: P of the restart budget.
const haPageSize = 20

// leaseSettings are the leader election flags of a CCM.
type leaseSettings struct {
	name                                 string
	duration, renewDeadline, retryPeriod time.Duration
}

var (
	// testLease is the short lease of the scenarios, so that a takeover takes seconds.
	testLease = leaseSettings{"test (3s/2s/500ms)", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond}
	// deployLease is what deploy/base runs with: it sets none of the flags, so the
	// upstream defaults.
	deployLease = leaseSettings{"deploy/ (15s/10s/2s, the defaults)", 15 * time.Second, 10 * time.Second, 2 * time.Second}
)

func (l leaseSettings) flags() []string {
	return []string{
		"--leader-elect-lease-duration=" + l.duration.String(),
		"--leader-elect-renew-deadline=" + l.renewDeadline.String(),
		"--leader-elect-retry-period=" + l.retryPeriod.String(),
	}
}

// restcloudBinaries are examples/restcloud and its restcloud-server, built once per test
// binary into restcloudBinDir.
var (
	restcloudBinDir   string
	restcloudBinaries = sync.OnceValues(func() ([2]string, error) {
		dir, err := os.MkdirTemp("", "ccmkit-e2e-restcloud-")
		if err != nil {
			return [2]string{}, err
		}
		restcloudBinDir = dir
		ccm, err := harness.Build(context.Background(), dir, "restcloud", restcloudPackage)
		if err != nil {
			return [2]string{}, err
		}
		srv, err := harness.Build(context.Background(), dir, "restcloud-server", restcloudServerPackage)
		return [2]string{ccm, srv}, err
	})
)

// deployArgs returns the arguments of deploy/base's cloud-controller-manager container,
// changed for two replicas on one host against the restcloud server: the restcloud
// provider and the scenario's cloud config, serving on 127.0.0.1 on a free port each, and
// without --use-service-account-credentials (the controllers then call as the
// kubeconfig's identity; rbac_test.go runs the CCM under deploy's RBAC instead).
func deployArgs(t *testing.T, cloudConfig string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "base", "deployment.yaml"))
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(data, &d))
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(arg, "=")
		switch name {
		case "--cloud-provider":
			arg = "--cloud-provider=restcloud"
		case "--cloud-config":
			arg = "--cloud-config=" + cloudConfig
		case "--bind-address":
			arg = "--bind-address=127.0.0.1"
		case "--secure-port":
			arg = "--secure-port=0"
		case "--use-service-account-credentials":
			continue
		}
		args = append(args, arg)
	}
	require.Contains(t, args, "--leader-elect=true", "deploy/base runs leader-elected replicas")
	return args
}

// haEnv is the world of a failover scenario: a control plane, the restcloud-server as a
// process over a state file, and restcloud CCM processes against it, leader-elected. The
// test changes instances through a fake.Cloud of its own over the same state file, and
// reads the server's calls and load balancer history from its debug endpoints.
type haEnv struct {
	t      *testing.T
	ctx    context.Context
	cp     *harness.ControlPlane
	client kubernetes.Interface
	ccmBin string

	cloud      *fake.Cloud // the test's view of the cloud, over the state file
	ccmConfig  string      // the CCMs' cloud config file
	debug      string      // the server's debug endpoints
	server     *harness.CCMProcess
	serverLog  *syncBuffer
	ccms       []*ccmProc
	nextInstID int
	started    time.Time
}

// logf logs with the time since the scenario started.
func (e *haEnv) logf(format string, args ...any) {
	e.t.Helper()
	e.t.Logf("%5.1fs: %s", time.Since(e.started).Seconds(), fmt.Sprintf(format, args...))
}

// ccmProc is one restcloud CCM process.
type ccmProc struct {
	i     int
	p     *harness.CCMProcess
	log   *syncBuffer
	lease leaseSettings
	dead  bool
}

// haOptions shape a haEnv.
type haOptions struct {
	instances    int
	cacheMaxAge  string   // cache.maxAge of the CCMs; empty for the default
	serverFaults []string // --fault-* flags of the server
}

func newHAEnv(t *testing.T, o haOptions) *haEnv {
	t.Helper()
	bins, err := restcloudBinaries()
	require.NoError(t, err)
	cp, err := harness.StartControlPlane()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := &haEnv{t: t, ctx: ctx, cp: cp, client: cp.Client, ccmBin: bins[0], serverLog: &syncBuffer{}, started: time.Now()}
	t.Cleanup(func() {
		cancel()
		for _, c := range e.ccms {
			if !c.dead {
				assert.NoError(t, c.p.Kill())
			}
		}
		if e.server != nil {
			assert.NoError(t, e.server.Kill())
		}
		if t.Failed() {
			for _, c := range e.ccms {
				t.Logf("last lines of the log of CCM process %d:\n%s", c.i, c.log.tail(30))
			}
			t.Logf("last lines of the server's log:\n%s", e.serverLog.tail(30))
		}
		assert.NoError(t, cp.Stop())
	})

	dir := cp.Dir()
	var instances strings.Builder
	for range o.instances {
		instances.WriteString(e.instanceYAML())
	}
	serverConfig := filepath.Join(dir, "server.yaml")
	require.NoError(t, os.WriteFile(serverConfig, fmt.Appendf(nil, `fake:
  region: eu-1
  pageSize: %d
  provisioning: {reads: 1}
  addressPools:
    public: {ipv4: [203.0.113.0/24]}
  instances:
%s`, haPageSize, instances.String()), 0o600))
	stateFile := filepath.Join(dir, "restcloud-state.json")
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("ha-token-4711\n"), 0o600))
	api, debug := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	e.server, err = harness.StartProcess(e.serverLog, append([]string{bins[1], "--cloud-config=" + serverConfig,
		"--state-file=" + stateFile, "--listen=" + api, "--debug-listen=" + debug, "--token-file=" + tokenFile}, o.serverFaults...)...)
	require.NoError(t, err)
	e.debug = "http://" + debug
	require.NoError(t, harness.Eventually(ctx, 30*time.Second, "the server serving", func(context.Context) (bool, error) {
		if exited, err := e.server.Exited(); exited {
			return false, err
		}
		return strings.Contains(e.serverLog.String(), "Serving the debug endpoints"), nil
	}))

	cfg, err := parseFakeSection(serverConfig, stateFile)
	require.NoError(t, err)
	e.cloud, err = fake.Open(cfg)
	require.NoError(t, err)

	cache := ""
	if o.cacheMaxAge != "" {
		cache = "cache: {maxAge: " + o.cacheMaxAge + "}\n"
	}
	e.ccmConfig = filepath.Join(dir, "cloud.yaml")
	require.NoError(t, os.WriteFile(e.ccmConfig, fmt.Appendf(nil, `cluster: {id: %s, name: %s}
region: eu-1
cloudAPI: {qps: 100, burst: 50, retry: {maxAttempts: 5, initialBackoff: 20ms, maxBackoff: 500ms}}
%srestcloud: {endpoint: "http://%s"}
credentials: {tokenFile: %s}
`, haClusterID, haClusterID, cache, api, tokenFile), 0o600))
	return e
}

// parseFakeSection reads the fake: section of the server's config, as the server does,
// with the state file.
func parseFakeSection(path, stateFile string) (fake.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fake.Config{}, err
	}
	var doc struct {
		Fake json.RawMessage `json:"fake"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fake.Config{}, err
	}
	section, err := yaml.JSONToYAML(doc.Fake)
	if err != nil {
		return fake.Config{}, err
	}
	cfg, err := fake.ParseConfig(section)
	cfg.StateFile = stateFile
	return cfg, err
}

// instanceYAML returns the next instance of the cloud config, i-0001 named node-01 and on.
func (e *haEnv) instanceYAML() string {
	e.nextInstID++
	n := e.nextInstID
	return fmt.Sprintf("    - {id: i-%04d, name: node-%02d, zone: eu-1a, addresses: [{type: InternalIP, address: 10.0.%d.%d}]}\n", n, n, n/200, n%200+1)
}

// addInstance adds the next instance behind the server's back, as an autoscaler would,
// and returns its Node's name.
func (e *haEnv) addInstance() string {
	e.t.Helper()
	e.nextInstID++
	n := e.nextInstID
	require.NoError(e.t, e.cloud.AddInstance(cloudapi.Instance{ID: fmt.Sprintf("i-%04d", n), Name: fmt.Sprintf("node-%02d", n),
		Zone: "eu-1a", Region: "eu-1", State: cloudapi.InstanceRunning,
		Addresses: []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("10.0.%d.%d", n/200, n%200+1)}}}))
	return fmt.Sprintf("node-%02d", n)
}

// startCCM starts a restcloud CCM with deploy/'s flags and the lease settings.
func (e *haEnv) startCCM(l leaseSettings) *ccmProc {
	e.t.Helper()
	c := &ccmProc{i: len(e.ccms), log: &syncBuffer{}, lease: l}
	args := append([]string{e.ccmBin, "--kubeconfig=" + e.cp.KubeconfigPath}, deployArgs(e.t, e.ccmConfig)...)
	args = append(args, l.flags()...)
	args = append(args,
		"--node-monitor-period="+harness.Periods.NodeMonitor.String(),
		"--node-status-update-frequency="+harness.Periods.NodeStatus.String(),
		"--kube-api-qps=100", "--kube-api-burst=200")
	p, err := harness.StartProcess(c.log, args...)
	require.NoError(e.t, err)
	c.p = p
	e.ccms = append(e.ccms, c)
	e.logf("started CCM process %d (pid %d, lease %s)", c.i, p.Pid(), l.name)
	return c
}

// waitLog waits until the CCM's log says what.
func (e *haEnv) waitLog(c *ccmProc, what, text string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("CCM process %d %s", c.i, what), func(context.Context) (bool, error) {
		return strings.Contains(c.log.String(), text), nil
	})
}

func (e *haEnv) leads(c *ccmProc) { e.waitLog(c, "leading", "Successfully acquired lease") }
func (e *haEnv) waiting(c *ccmProc) {
	e.waitLog(c, "waiting for the lease", "Attempting to acquire leader lease")
}

// eventually fails the test when cond does not hold within wait, or when a process that
// should run ended.
func (e *haEnv) eventually(what string, cond func(context.Context) (bool, error)) {
	e.t.Helper()
	require.NoError(e.t, harness.Eventually(e.ctx, wait, what, func(ctx context.Context) (bool, error) {
		if err := e.anyExited(); err != nil {
			return false, fmt.Errorf("%w (stopping the wait)", err)
		}
		return cond(ctx)
	}))
}

func (e *haEnv) anyExited() error {
	if exited, err := e.server.Exited(); exited {
		return fmt.Errorf("the server: %w", err)
	}
	for _, c := range e.ccms {
		if exited, err := c.p.Exited(); exited && !c.dead {
			return err
		}
	}
	return nil
}

// debugCalls is the server's /debug/calls.
type debugCalls struct {
	Calls  fake.Calls `json:"calls"`
	Faults map[cloudapi.Operation]struct {
		Calls, Passed, RateLimited int
		Faults                     map[string]int
	} `json:"faults"`
}

func (e *haEnv) getDebug(path string, v any) error {
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, e.debug+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// calls returns the calls that reached the cloud since the server started.
func (e *haEnv) calls() fake.Calls {
	e.t.Helper()
	var c debugCalls
	require.NoError(e.t, e.getDebug("/debug/calls", &c))
	return c.Calls
}

func (e *haEnv) history() []fake.Event {
	e.t.Helper()
	var h []fake.Event
	require.NoError(e.t, e.getDebug("/debug/history", &h))
	return h
}

// takeover is what one failover took.
type takeover struct {
	lease leaseSettings
	// toLease is from the kill to the new leader's acquireTime in the Lease; toCall to
	// the first cloud call after the kill (the new leader's: the dead one makes none, and
	// a standby makes none before it leads); toWrite to the first write, if any.
	toLease, toCall, toWrite time.Duration
	// killedAt is when the leader was killed; before the calls just after it.
	killedAt time.Time
	before   fake.Calls
}

func (k takeover) String() string {
	s := fmt.Sprintf("lease %s: killed → lease taken %s, → first cloud call %s", k.lease.name, k.toLease.Round(time.Millisecond), k.toCall.Round(time.Millisecond))
	if k.toWrite > 0 {
		s += fmt.Sprintf(", → first write %s", k.toWrite.Round(time.Millisecond))
	}
	return s
}

// lease returns the CCMs' Lease, kube-system/cloud-controller-manager as deploy/ has it.
func (e *haEnv) lease(ctx context.Context) (holder string, acquired time.Time, err error) {
	l, err := e.client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		return "", time.Time{}, err
	}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		acquired = l.Spec.AcquireTime.Time
	}
	return holder, acquired, nil
}

// killLeader kills the leader with SIGKILL and measures the takeover by next, the
// standby: until it holds the lease and its first cloud call.
func (e *haEnv) killLeader(leader, next *ccmProc) takeover {
	e.t.Helper()
	oldHolder, _, err := e.lease(e.ctx)
	require.NoError(e.t, err)
	require.NotEmpty(e.t, oldHolder, "the Lease in kube-system has a holder")
	k := takeover{lease: next.lease, killedAt: time.Now()}
	require.NoError(e.t, leader.p.Kill())
	leader.dead = true
	time.Sleep(100 * time.Millisecond) // the dead leader's last requests, if any, are counted
	k.before = e.calls()
	e.eventually("the standby's takeover", func(ctx context.Context) (bool, error) {
		now := time.Now()
		if c := e.calls().Sub(k.before); k.toCall == 0 && c.Total() > 0 {
			k.toCall = now.Sub(k.killedAt)
		}
		if holder, acquired, err := e.lease(ctx); err == nil && k.toLease == 0 && holder != oldHolder && holder != "" {
			k.toLease = acquired.Sub(k.killedAt)
		}
		return k.toCall > 0 && k.toLease > 0, nil
	})
	e.leads(next)
	return k
}

// ensuredSince waits until the service controller reported every Service of names
// ensured (an EnsuredLoadBalancer event) after since.
func (e *haEnv) ensuredSince(since time.Time, names []string) {
	e.t.Helper()
	since = since.Truncate(time.Second) // event times have second precision
	e.eventually("every Service ensured by the new leader", func(ctx context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=EnsuredLoadBalancer"})
		if err != nil {
			return false, err
		}
		ensured := map[string]bool{}
		for _, ev := range events.Items {
			if !ev.LastTimestamp.Time.Before(since) || !ev.EventTime.Time.Before(since) {
				ensured[ev.InvolvedObject.Name] = true
			}
		}
		for _, n := range names {
			if !ensured[n] {
				return false, fmt.Errorf("Service %s not ensured since the takeover", n)
			}
		}
		return true, nil
	})
}

func (e *haEnv) createServices(from, to int) []string {
	e.t.Helper()
	var names []string
	for i := from; i < to; i++ {
		name := fmt.Sprintf("svc-%02d", i)
		_, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Create(e.ctx, newLBService(name), metav1.CreateOptions{})
		require.NoError(e.t, err)
		names = append(names, name)
	}
	return names
}

func (e *haEnv) registerNode(name string, ready bool) {
	e.t.Helper()
	_, err := harness.RegisterNode(e.ctx, e.client, harness.NodeSpec{Name: name, NotReady: !ready})
	require.NoError(e.t, err)
}

// converged waits until every LoadBalancer Service has its address, the deleted ones are
// gone, and every Node is initialized, and returns the live Services.
func (e *haEnv) converged(deleted []string) []corev1.Service {
	e.t.Helper()
	var live []corev1.Service
	e.eventually("every Service with its address, the deleted ones gone, every Node initialized", func(ctx context.Context) (bool, error) {
		svcs, err := e.client.CoreV1().Services(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		live = nil
		for _, s := range svcs.Items {
			if slices.Contains(deleted, s.Name) {
				return false, fmt.Errorf("Service %s is still there (finalizers %v)", s.Name, s.Finalizers)
			}
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				continue
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return false, fmt.Errorf("Service %s has no address yet", s.Name)
			}
			live = append(live, s)
		}
		nodes, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if n.Spec.ProviderID == "" {
				return false, fmt.Errorf("Node %s is not initialized", n.Name)
			}
		}
		return true, nil
	})
	return live
}

// haObserver watches, while CCMs come and go, what must never happen: a Service's address
// changing once it had one, and a Node deleted while its instance exists.
type haObserver struct {
	mu         sync.Mutex
	first      map[string][]string // Service UID → its first addresses
	registered map[string]bool     // Nodes registered whose instance the test keeps
	violations []string
	stop       context.CancelFunc
	done       chan struct{}
}

func (e *haEnv) observe() *haObserver {
	ctx, cancel := context.WithCancel(e.ctx)
	o := &haObserver{first: map[string][]string{}, registered: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			o.check(ctx, e.client)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return o
}

// keep says that the Node name is registered and its instance exists until forget.
func (o *haObserver) keep(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.registered[name] = true
}

func (o *haObserver) forget(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.registered, name)
}

func (o *haObserver) check(ctx context.Context, client kubernetes.Interface) {
	o.mu.Lock()
	kept := maps.Clone(o.registered)
	o.mu.Unlock()
	svcs, err := client.CoreV1().Services(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the API may fail for a moment; the next round checks again
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range svcs.Items {
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, ing.IP)
		}
		slices.Sort(ips)
		first, seen := o.first[string(s.UID)]
		switch {
		case !seen && len(ips) > 0:
			o.first[string(s.UID)] = ips
		case seen && s.DeletionTimestamp == nil && !slices.Equal(first, ips):
			o.violations = append(o.violations, fmt.Sprintf("Service %s: addresses %v, then %v", s.Name, first, ips))
			o.first[string(s.UID)] = ips
		}
	}
	present := map[string]bool{}
	for _, n := range nodes.Items {
		present[n.Name] = true
	}
	for name := range kept {
		if !present[name] && o.registered[name] {
			o.violations = append(o.violations, fmt.Sprintf("Node %s was deleted while its instance exists", name))
			delete(o.registered, name)
		}
	}
}

func (o *haObserver) finish() []string {
	o.stop()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.violations
}

// historyFigures is what the server's load balancer history says about the writes.
type historyFigures struct {
	creates, updates, deletes int
	// repeatedCreates are creates beyond the first for a Service; repeatedUpdates are
	// updates that wrote the spec the load balancer already had.
	repeatedCreates, repeatedUpdates int
	// maxAtOnce is the most load balancers one Service had at any moment.
	maxAtOnce int
}

// checkHistory replays the server's load balancer history: one load balancer per Service
// at every moment, each Service's created once, no update that changed nothing, and
// deletes only of the deleted Services' load balancers.
func (e *haEnv) checkHistory(deletedUIDs map[string]bool) historyFigures {
	e.t.Helper()
	var f historyFigures
	owner := map[string]string{}                    // LB ID → Service UID
	specs := map[string]cloudapi.LoadBalancerSpec{} // LB ID → its spec
	live := map[string]int{}                        // Service UID → its load balancers now
	created := map[string]int{}                     // Service UID → creates
	for _, ev := range e.history() {
		switch ev.Op {
		case cloudapi.OpCreateLoadBalancer:
			f.creates++
			uid := ev.Spec.Tags[cloudapi.TagService]
			assert.Equal(e.t, haClusterID, ev.Spec.Tags[cloudapi.TagCluster], "load balancer %s is the cluster's", ev.ID)
			owner[ev.ID], specs[ev.ID] = uid, ev.Spec
			live[uid]++
			created[uid]++
			f.maxAtOnce = max(f.maxAtOnce, live[uid])
			if created[uid] > 1 {
				f.repeatedCreates++
			}
		case cloudapi.OpUpdateLoadBalancer:
			f.updates++
			if reflect.DeepEqual(specs[ev.ID], ev.Spec) {
				f.repeatedUpdates++
			}
			specs[ev.ID] = ev.Spec
		case cloudapi.OpDeleteLoadBalancer:
			f.deletes++
			uid := owner[ev.ID]
			assert.True(e.t, deletedUIDs[uid], "load balancer %s of Service UID %s deleted, and that Service was not", ev.ID, uid)
			live[uid]--
		}
	}
	assert.LessOrEqual(e.t, f.maxAtOnce, 1, "no Service ever had two load balancers")
	assert.Zero(e.t, f.repeatedCreates, "no load balancer was created twice for a Service")
	assert.Zero(e.t, f.repeatedUpdates, "no update wrote what the load balancer already had")
	return f
}

// checkCloud checks the cloud after convergence: exactly one load balancer per live
// Service, with the Service's address and the targets of every Node (no write lost), and
// none for another Service (no orphan).
func (e *haEnv) checkCloud(live []corev1.Service) {
	e.t.Helper()
	nodes, err := e.client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	var targets []string
	for _, n := range nodes.Items {
		targets = append(targets, strings.TrimPrefix(n.Spec.ProviderID, "restcloud://"))
	}
	slices.Sort(targets)
	want := map[string][]string{}
	for _, s := range live {
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, ing.IP)
		}
		want[string(s.UID)] = ips
	}
	e.eventually("every load balancer targets every Node", func(context.Context) (bool, error) {
		for _, lb := range e.cloud.Inventory().LoadBalancers {
			if got := slices.Sorted(slices.Values(lb.Spec.Targets)); !slices.Equal(got, targets) {
				return false, fmt.Errorf("load balancer %s targets %v, want %v", lb.ID, got, targets)
			}
		}
		return true, nil
	})
	got := map[string][]string{}
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		uid := lb.Spec.Tags[cloudapi.TagService]
		assert.Equal(e.t, haClusterID, lb.Spec.Tags[cloudapi.TagCluster], "load balancer %s", lb.ID)
		_, dup := got[uid]
		assert.False(e.t, dup, "Service UID %s has two load balancers", uid)
		got[uid] = slices.Sorted(slices.Values(lb.Addresses))
	}
	assert.Equal(e.t, want, got, "exactly one load balancer per LoadBalancer Service, with the Service's address: no orphan")
}

// stopAll stops the CCMs still running and the server with SIGTERM: each must exit 0.
func (e *haEnv) stopAll() {
	e.t.Helper()
	for _, c := range e.ccms {
		if !c.dead {
			assert.NoError(e.t, c.p.Stop(), "CCM process %d on SIGTERM", c.i)
			c.dead = true
		}
	}
	assert.NoError(e.t, e.server.Stop(), "the server on SIGTERM")
	e.server = nil
}

// restartBudget is the most reads a takeover may cost when nothing changed: the new
// leader lists the cluster's S load balancers and the account's N instances once each, in
// pages of P, and one call more.
func restartBudget(s, n, p int) int64 {
	return int64(math.Ceil(float64(s)/float64(p)) + math.Ceil(float64(n)/float64(p)) + 1)
}

// TestRestcloudTakeoverCost measures failovers when nothing changes: two restcloud CCM
// processes with deploy/'s flags against the restcloud-server, 30 converged Services and
// 7 Nodes; the leader is killed with SIGKILL, and the standby takes over: with the test's
// short lease, then with deploy/'s lease on both sides. Each takeover's time (to
// the Lease, to the first cloud call) is logged; its cloud calls, from the kill until 2 s
// after the new leader ensured every Service, are reads within the
// restart budget ⌈S/P⌉ + ⌈N/P⌉ + 1 and no write. Both CCMs and the server exit 0 on
// SIGTERM.
func TestRestcloudTakeoverCost(t *testing.T) {
	const services, nodes = 30, 7
	e := newHAEnv(t, haOptions{instances: nodes})
	for i := 1; i <= nodes; i++ {
		e.registerNode(fmt.Sprintf("node-%02d", i), true)
	}
	leader := e.startCCM(testLease)
	e.leads(leader)
	standby := e.startCCM(testLease)
	e.waiting(standby)
	names := e.createServices(0, services)
	live := e.converged(nil)
	require.Len(t, live, services)
	e.logf("converged")
	budget := restartBudget(services, nodes, haPageSize)

	measure := func(leader, next *ccmProc) {
		t.Helper()
		k := e.killLeader(leader, next)
		e.logf("took over")
		e.ensuredSince(k.killedAt, names)
		e.logf("every Service ensured")
		time.Sleep(2 * time.Second) // and whatever the new leader does right after
		calls := e.calls().Sub(k.before)
		t.Logf("takeover, nothing changing: %s; cloud calls %d reads %v, %d writes (budget ⌈%d/%d⌉ + ⌈%d/%d⌉ + 1 = %d reads, 0 writes)",
			k, calls.Reads(), calls, calls.Writes(), services, haPageSize, nodes, haPageSize, budget)
		assert.Zero(t, calls.Writes(), "a takeover with nothing changed writes nothing: %v", calls)
		assert.LessOrEqual(t, calls.Reads(), budget, "a takeover's reads: %v", calls)
	}
	measure(leader, standby)
	// deploy/'s lease on both sides: the new leader stops (SIGTERM: it exits 0, keeping
	// its lease until it expires), and a pair started with deploy/'s lease takes over.
	require.NoError(t, standby.p.Stop(), "the leader on SIGTERM")
	standby.dead = true
	leader = e.startCCM(deployLease)
	e.leads(leader)
	standby = e.startCCM(deployLease)
	e.waiting(standby)
	measure(leader, standby)
	assert.Len(t, e.converged(nil), services)
	e.checkHistory(nil)
	e.stopAll()
}

// TestRestcloudFailoverUnderChurn runs two restcloud CCM processes with deploy/'s flags
// and the test's short lease against the restcloud-server with faults on (seeded:
// throttling with Retry-After, lost write answers, errors), creates 50 LoadBalancer
// Services and churns Nodes (instances added and deleted, a Node NotReady whose instance
// exists), and at seeded moments kills the leader with SIGKILL (FailoverRoundsEnv times,
// default 4), starting a new standby each time. At the end: no Service ever had two load
// balancers and none was created twice or updated with what it had (the server's
// history), no orphan, every Service converged with the address it first got and every
// load balancer targets every Node (no write lost), no Node was deleted whose instance
// exists, and both CCMs and the server exit 0 on SIGTERM.
func TestRestcloudFailoverUnderChurn(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv(SeedEnv); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, SeedEnv)
	}
	rounds := 4
	if s := os.Getenv(FailoverRoundsEnv); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err, FailoverRoundsEnv)
		require.Positive(t, rounds, FailoverRoundsEnv)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: rerun with %s=%d %s=%d", seed, SeedEnv, seed, FailoverRoundsEnv, rounds)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0xfa11))
	const services, firstNodes = 50, 6
	e := newHAEnv(t, haOptions{instances: firstNodes, cacheMaxAge: "2s", serverFaults: []string{
		"--fault-seed=" + strconv.FormatUint(seed, 10),
		"--fault-throttle-rate=0.03", "--fault-retry-after=1s",
		"--fault-lost-write-rate=0.1",
		"--fault-error-rate=0.02",
	}})
	obs := e.observe()
	var nodes []string // the Nodes whose instance the test may delete
	for i := 1; i <= firstNodes; i++ {
		name := fmt.Sprintf("node-%02d", i)
		e.registerNode(name, true)
		obs.keep(name)
		nodes = append(nodes, name)
	}
	leader := e.startCCM(testLease)
	e.leads(leader)
	standby := e.startCCM(testLease)
	e.waiting(standby)

	perRound := (services - 10 + rounds - 1) / rounds
	created := 10
	e.createServices(0, created)
	var deleted []string
	deletedUIDs := map[string]bool{}
	var takeovers []takeover
	for round := range rounds {
		// Changes for the leader to be in the middle of when it is killed.
		to := min(services, created+perRound)
		e.createServices(created, to)
		created = to
		victim := fmt.Sprintf("svc-%02d", round*3) // one of the first Services, each round another
		svc, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, victim, metav1.GetOptions{})
		require.NoError(t, err)
		deletedUIDs[string(svc.UID)] = true
		require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, victim, metav1.DeleteOptions{}))
		deleted = append(deleted, victim)
		added := e.addInstance()
		e.registerNode(added, true)
		obs.keep(added)
		nodes = append(nodes, added)
		gone := nodes[0] // its instance is deleted: the node lifecycle controller deletes it
		nodes = nodes[1:]
		obs.forget(gone)
		id, err := e.providerIDOf(gone)
		require.NoError(t, err)
		require.NoError(t, e.cloud.DeleteInstance(id))
		_, err = harness.SetNodeReady(e.ctx, e.client, gone, false)
		require.NoError(t, err)
		if round == 0 {
			// NotReady, its instance kept: never deleted.
			keep := nodes[0]
			nodes = nodes[1:]
			_, err = harness.SetNodeReady(e.ctx, e.client, keep, false)
			require.NoError(t, err)
		}
		delay := 200*time.Millisecond + time.Duration(rng.Int64N(int64(1800*time.Millisecond)))
		time.Sleep(delay)
		k := e.killLeader(leader, standby)
		takeovers = append(takeovers, k)
		t.Logf("round %d: %d Services created, %s deleted, Node %s added, %s's instance deleted; killed the leader %s after the changes; %s",
			round, created, victim, added, gone, delay.Round(time.Millisecond), k)
		leader, standby = standby, e.startCCM(testLease)
		e.waiting(standby)
	}
	if created < services {
		e.createServices(created, services)
	}
	e.logf("every round done")
	live := e.converged(deleted)
	e.logf("converged")
	e.eventually("the Nodes whose instance is gone deleted", func(ctx context.Context) (bool, error) {
		list, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		inv := e.cloud.Inventory()
		for _, n := range list.Items {
			id := strings.TrimPrefix(n.Spec.ProviderID, "restcloud://")
			if !slices.ContainsFunc(inv.Instances, func(in cloudapi.Instance) bool { return in.ID == id }) {
				return false, fmt.Errorf("Node %s is still there, its instance %s gone", n.Name, id)
			}
		}
		return true, nil
	})
	e.checkCloud(live)
	e.logf("the cloud checked")
	assert.Empty(t, obs.finish(), "what must never happen")
	f := e.checkHistory(deletedUIDs)
	var faults debugCalls
	require.NoError(t, e.getDebug("/debug/calls", &faults))
	injected := map[string]int{}
	for _, c := range faults.Faults {
		for kind, n := range c.Faults {
			injected[kind] += n
		}
		injected["RateLimited"] += c.RateLimited
	}
	t.Logf("%d takeovers under churn and faults (%v injected): to the Lease %v; to the first cloud call %v",
		len(takeovers), injected, durations(takeovers, func(k takeover) time.Duration { return k.toLease }),
		durations(takeovers, func(k takeover) time.Duration { return k.toCall }))
	t.Logf("load balancer writes: %d creates for %d Services, %d updates, %d deletes for %d deleted Services; repeated creates %d, repeated updates %d, lost 0 (every Service's load balancer targets every Node), most load balancers of one Service at once %d",
		f.creates, created, f.updates, f.deletes, len(deleted), f.repeatedCreates, f.repeatedUpdates, f.maxAtOnce)
	e.stopAll()
	_, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, deleted[0], metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
}

func durations(ks []takeover, f func(takeover) time.Duration) []string {
	var out []string
	for _, k := range ks {
		out = append(out, f(k).Round(10*time.Millisecond).String())
	}
	return out
}

// providerIDOf returns the instance ID of the Node name, from its provider ID.
func (e *haEnv) providerIDOf(name string) (string, error) {
	var id string
	err := harness.Eventually(e.ctx, wait, "Node "+name+" initialized", func(ctx context.Context) (bool, error) {
		n, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		id = strings.TrimPrefix(n.Spec.ProviderID, "restcloud://")
		return id != "", nil
	})
	return id, err
}
