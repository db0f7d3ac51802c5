package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/fake"
)

// SeedEnv names the environment variable that sets the seed of the moments at which
// TestCCMProcessKilledKeepsEveryLoadBalancer kills the CCM (default 1); a failure prints
// the seed it ran with.
const SeedEnv = "CCMKIT_E2E_SEED"

// ccmBinary is examples/ccm, built once per test binary (harness.BuildCCM) into binDir.
var (
	binDir    string
	ccmBinary = sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "ccmkit-e2e-bin-")
		if err != nil {
			return "", err
		}
		binDir = dir
		return harness.BuildCCM(context.Background(), dir)
	})
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{binDir, restcloudBinDir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// procEnv is the world of a scenario whose cloud-controller-managers run as their own
// processes (examples/ccm, --cloud-provider=ccmkit) over the cloud of testdata/cloud.yaml
// kept in a state file; the test sees that cloud through a fake.Cloud of its own over the
// same file.
type procEnv struct {
	t      *testing.T
	ctx    context.Context
	cp     *harness.ControlPlane
	client kubernetes.Interface
	bin    string
	// config is the cloud config the processes run with; stateFile its state file.
	config    []byte
	stateFile string
	cloud     *fake.Cloud
	logs      []*syncBuffer
	running   map[*harness.CCMProcess]bool
}

func newProcEnv(t *testing.T) *procEnv {
	t.Helper()
	bin, err := ccmBinary()
	require.NoError(t, err)
	cp, err := harness.StartControlPlane()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e := &procEnv{t: t, ctx: ctx, cp: cp, client: cp.Client, bin: bin, running: map[*harness.CCMProcess]bool{}}
	t.Cleanup(func() {
		cancel()
		for p := range e.running {
			assert.NoError(t, p.Kill())
		}
		if t.Failed() {
			for i, log := range e.logs {
				t.Logf("last lines of the log of CCM process %d:\n%s", i, log.tail(40))
			}
		}
		assert.NoError(t, cp.Stop())
	})
	base, err := os.ReadFile(filepath.Join("testdata", "cloud.yaml"))
	require.NoError(t, err)
	// The kills meet load balancers the cloud is still provisioning too.
	base = withFake(provisioning)(base)
	e.stateFile = filepath.Join(cp.Dir(), "cloud-state.json")
	e.config, err = harness.WithStateFile(base, e.stateFile)
	require.NoError(t, err)
	cloud, err := harness.NewCloud(e.config, faultinject.Config{})
	require.NoError(t, err)
	e.cloud = cloud.Fake
	return e
}

// start starts a CCM process with extra flags.
func (e *procEnv) start(flags ...string) *harness.CCMProcess {
	e.t.Helper()
	log := &syncBuffer{}
	p, err := harness.StartCCMProcess(e.bin, e.cp, e.config, log, flags...)
	require.NoError(e.t, err)
	e.logs = append(e.logs, log)
	e.running[p] = true
	e.t.Logf("started CCM process %d (pid %d)", len(e.logs)-1, p.Pid())
	return p
}

func (e *procEnv) kill(p *harness.CCMProcess) {
	e.t.Helper()
	require.NoError(e.t, p.Kill())
	delete(e.running, p)
}

// eventually fails the test when cond does not hold within wait, or when a running CCM
// process ended.
func (e *procEnv) eventually(what string, cond func(context.Context) (bool, error)) {
	e.t.Helper()
	require.NoError(e.t, harness.Eventually(e.ctx, wait, what, func(ctx context.Context) (bool, error) {
		for p := range e.running {
			if exited, err := p.Exited(); exited {
				return false, fmt.Errorf("%w (stopping the wait)", err)
			}
		}
		return cond(ctx)
	}))
	for p := range e.running {
		exited, err := p.Exited()
		require.False(e.t, exited, "%v", err)
	}
}

func (e *procEnv) registerNodes() {
	e.t.Helper()
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		_, err := harness.RegisterNode(e.ctx, e.client, harness.NodeSpec{Name: name, PodCIDRs: []string{fmt.Sprintf("10.244.%d.0/24", i+1)}})
		require.NoError(e.t, err)
	}
}

func (e *procEnv) createService(name string) {
	e.t.Helper()
	_, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Create(e.ctx, newLBService(name), metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// observer watches, while the CCM processes come and go, what must never happen: a
// Service's addresses changing or going once it had them, and a Service with two load
// balancers or whose load balancer was replaced by another, in the state file.
type observer struct {
	mu         sync.Mutex
	addresses  map[string][]string // Service UID → its first addresses
	lbOf       map[string]string   // Service UID → the ID of its first load balancer
	violations []string
	stop       context.CancelFunc
	done       chan struct{}
}

func (e *procEnv) observe() *observer {
	ctx, cancel := context.WithCancel(e.ctx)
	o := &observer{addresses: map[string][]string{}, lbOf: map[string]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			o.check(ctx, e)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return o
}

func (o *observer) check(ctx context.Context, e *procEnv) {
	svcs, err := e.client.CoreV1().Services(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the API may fail for a moment; the next round checks again
	}
	inv := e.cloud.Inventory()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range svcs.Items {
		uid := string(s.UID)
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, ing.IP)
		}
		slices.Sort(ips)
		first, seen := o.addresses[uid]
		switch {
		case !seen && len(ips) > 0:
			o.addresses[uid] = ips
		case seen && s.DeletionTimestamp == nil && !slices.Equal(first, ips):
			o.violations = append(o.violations, fmt.Sprintf("Service %s: addresses %v, then %v", s.Name, first, ips))
			o.addresses[uid] = ips
		}
	}
	count := map[string]int{}
	for _, lb := range inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: "e2e"}) {
		uid := lb.Spec.Tags[cloudapi.TagService]
		count[uid]++
		if first, ok := o.lbOf[uid]; !ok {
			o.lbOf[uid] = lb.ID
		} else if first != lb.ID {
			o.violations = append(o.violations, fmt.Sprintf("Service UID %s: load balancer %s, then %s", uid, first, lb.ID))
			o.lbOf[uid] = lb.ID
		}
	}
	for uid, n := range count {
		if n > 1 {
			o.violations = append(o.violations, fmt.Sprintf("Service UID %s has %d load balancers at once", uid, n))
		}
	}
}

// finish stops the observer and returns what it saw go wrong.
func (o *observer) finish() []string {
	o.stop()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.violations
}

// servicesConverged waits until every LoadBalancer Service has its addresses and the
// deleted ones are gone, then checks the state file's cloud: one load balancer per
// Service with the Service's addresses, none of another, and the routes of the Nodes' pod
// CIDRs. It returns the file's loadBalancerSeq: how many load balancers were ever created.
func (e *procEnv) servicesConverged(deleted ...string) int {
	e.t.Helper()
	e.eventually("every Service with its addresses, the deleted ones gone", func(ctx context.Context) (bool, error) {
		svcs, err := e.client.CoreV1().Services(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range svcs.Items {
			if slices.Contains(deleted, s.Name) {
				return false, fmt.Errorf("Service %s is still there (finalizers %v)", s.Name, s.Finalizers)
			}
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
				return false, fmt.Errorf("Service %s has no address yet", s.Name)
			}
		}
		return true, nil
	})
	svcs, err := e.client.CoreV1().Services(metav1.NamespaceDefault).List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	want := map[string][]string{} // Service UID → addresses
	for _, s := range svcs.Items {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, ing.IP)
		}
		slices.Sort(ips)
		want[string(s.UID)] = ips
	}
	// The file's cloud, read by a Cloud opened from it now.
	reopened, err := harness.NewCloud(e.config, faultinject.Config{})
	require.NoError(e.t, err)
	inv := reopened.Fake.Inventory()
	got := map[string][]string{}
	for _, lb := range inv.LoadBalancers {
		uid := lb.Spec.Tags[cloudapi.TagService]
		assert.Equal(e.t, "e2e", lb.Spec.Tags[cloudapi.TagCluster], "load balancer %s", lb.ID)
		_, dup := got[uid]
		assert.False(e.t, dup, "Service UID %s has two load balancers", uid)
		got[uid] = slices.Sorted(slices.Values(lb.Addresses))
	}
	assert.Equal(e.t, want, got, "exactly one load balancer per LoadBalancer Service, with the Service's addresses")
	assert.Equal(e.t, inv, e.cloud.Inventory(), "the test's Cloud over the file sees what the file holds")

	nodes, err := e.client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	wantRoutes := map[string]string{}
	for _, n := range nodes.Items {
		for _, cidr := range n.Spec.PodCIDRs {
			wantRoutes[cidr] = strings.TrimPrefix(n.Spec.ProviderID, "ccmkit://")
		}
	}
	gotRoutes := map[string]string{}
	for _, r := range inv.RoutesTagged(map[string]string{cloudapi.TagCluster: "e2e"}) {
		gotRoutes[r.DestinationCIDR] = r.TargetInstanceID
	}
	assert.Equal(e.t, wantRoutes, gotRoutes, "a route per pod CIDR")

	var seq struct {
		LoadBalancerSeq int `json:"loadBalancerSeq"`
	}
	data, err := os.ReadFile(e.stateFile)
	require.NoError(e.t, err)
	require.NoError(e.t, json.Unmarshal(data, &seq))
	return seq.LoadBalancerSeq
}

// TestCCMProcessKilledKeepsEveryLoadBalancer runs examples/ccm as its own process on the
// built-in fake cloud with a state file, and kills it with SIGKILL five times at seeded
// moments while it creates the load balancers of fourteen Services (four at first, two
// after each start, one deleted and two created while it is down), starting it again
// each time. Every Service keeps the address
// it got first, no Service ever has two load balancers or a replaced one, no load
// balancer is created twice, the deleted Service's load balancer goes and its finalizer
// with it, and the file holds exactly one load balancer per Service.
func TestCCMProcessKilledKeepsEveryLoadBalancer(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv(SeedEnv); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, SeedEnv)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kill moments from seed %d: rerun with %s=%d", seed, SeedEnv, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	e := newProcEnv(t)
	e.registerNodes()
	ccm := e.start()
	obs := e.observe()
	created := 0
	addServices := func(n int) {
		for range n {
			e.createService(fmt.Sprintf("svc-%02d", created))
			created++
		}
	}
	addServices(4)
	var sawDeletedLB bool
	for round := range 5 {
		// From a moment the CCM is still starting to one it is done: 0.3 to 2.5 s.
		delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(2200*time.Millisecond)))
		time.Sleep(delay)
		e.kill(ccm)
		inv := e.cloud.Inventory()
		t.Logf("round %d: killed the CCM %s after its start, with %d load balancers in the state file for %d Services", round, delay.Round(time.Millisecond), len(inv.LoadBalancers), created)
		switch round {
		case 1:
			svc, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, "svc-03", metav1.GetOptions{})
			require.NoError(t, err)
			sawDeletedLB = len(inv.LoadBalancersTagged(map[string]string{cloudapi.TagService: string(svc.UID)})) > 0
			require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "svc-03", metav1.DeleteOptions{}))
			t.Logf("round %d: deleted Service svc-03 while the CCM is down (its load balancer exists: %t)", round, sawDeletedLB)
		case 3:
			addServices(2)
			t.Logf("round %d: created two Services while the CCM is down", round)
		}
		ccm = e.start()
		if round != 3 {
			addServices(2) // for the new CCM to create while the next kill approaches
		}
	}
	seq := e.servicesConverged("svc-03")
	assert.Empty(t, obs.finish(), "what must never happen")
	_, err := e.client.CoreV1().Services(metav1.NamespaceDefault).Get(e.ctx, "svc-03", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "svc-03's finalizer is released once its load balancer is gone: %v", err)

	// One create per Service, none for svc-03 unless it had its load balancer when it was
	// deleted (the CCM was down then, and no CCM creates one for a Service being deleted).
	wantSeq := created - 1
	if sawDeletedLB {
		wantSeq = created
	}
	assert.Equal(t, wantSeq, seq, "no load balancer was ever created twice")
	require.NoError(t, ccm.Stop())
	delete(e.running, ccm)
}

// TestCCMFailoverWithASharedStateFile runs two leader-elected replicas of examples/ccm
// over one state file, as a Deployment whose replicas share it would: the standby opens
// the file when it starts and leads only after the leader is killed, by then the file
// holds load balancers the standby never saw. Twice over, the new leader takes the
// Services over with the same load balancers and addresses, and serves new ones.
func TestCCMFailoverWithASharedStateFile(t *testing.T) {
	e := newProcEnv(t)
	e.registerNodes()
	leaderFlags := []string{
		"--leader-elect=true",
		"--leader-elect-lease-duration=3s",
		"--leader-elect-renew-deadline=2s",
		"--leader-elect-retry-period=500ms",
	}
	leads := func(i int) {
		e.eventually(fmt.Sprintf("CCM process %d leading", i), func(context.Context) (bool, error) {
			return strings.Contains(e.logs[i].String(), "Successfully acquired lease"), nil
		})
	}
	// waiting: the replica has built its provider, and so opened the state file, and waits
	// for the lease. Services created from then on are ones it never read at its start.
	waiting := func(i int) {
		e.eventually(fmt.Sprintf("CCM process %d waiting for the lease", i), func(context.Context) (bool, error) {
			return strings.Contains(e.logs[i].String(), "Attempting to acquire leader lease"), nil
		})
	}
	leader := e.start(leaderFlags...)
	leads(0)
	standby := e.start(leaderFlags...)
	waiting(1)
	obs := e.observe()
	services := 0
	addServices := func(n int) {
		for range n {
			e.createService(fmt.Sprintf("svc-%02d", services))
			services++
		}
	}
	addServices(4)
	assert.Equal(t, services, e.servicesConverged(), "one create per Service")
	for round := range 2 {
		next := len(e.logs) - 1 // the standby's log
		e.kill(leader)
		leads(next)
		t.Logf("round %d: killed the leader; process %d leads", round, next)
		leader, standby = standby, e.start(leaderFlags...)
		waiting(len(e.logs) - 1)
		addServices(2)
		assert.Equal(t, services, e.servicesConverged(), "one create per Service: the new leader found its predecessor's load balancers")
	}
	assert.Empty(t, obs.finish(), "what must never happen")
	for _, p := range []*harness.CCMProcess{leader, standby} {
		require.NoError(t, p.Stop())
		delete(e.running, p)
	}
}
