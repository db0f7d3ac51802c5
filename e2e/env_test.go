package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// wait bounds every wait for a controller: generous, because a 2-core CI machine runs the
// apiserver, etcd, the CCM and the test at once; scenarios converge in seconds.
const wait = 90 * time.Second

// env is one scenario's world: a fresh control plane, the fake cloud from
// testdata/cloud.yaml and a CCM over both.
type env struct {
	t      *testing.T
	ctx    context.Context // lives until the end of the test's cleanups
	cp     *harness.ControlPlane
	cloud  *harness.Cloud
	client kubernetes.Interface
	ccm    *harness.CCM
	log    *syncBuffer
	flags  []string
}

// clusterID is cluster.id in testdata/cloud.yaml: the tag of the cluster's load balancers
// and routes.
const clusterID = "e2e"

// syncBuffer is the CCM's log, kept in memory and printed when the test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) tail(lines int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// faultyCloud is the fault mix of the scenarios' "under faults" runs: throttling,
// transient errors, timeouts and writes whose answer is lost, on about 15 % of the calls
// (before ccmkit's client retries them). Seeded, so a run's decisions repeat.
var faultyCloud = faultinject.Config{
	Seed: 7,
	Rules: []faultinject.Rule{
		{Kind: faultinject.Throttle, Probability: 0.05},
		{Kind: faultinject.Transient, Probability: 0.04},
		{Kind: faultinject.Timeout, Probability: 0.01},
		{Ops: []cloudapi.Operation{cloudapi.OpCreateLoadBalancer, cloudapi.OpUpdateLoadBalancer, cloudapi.OpDeleteLoadBalancer, cloudapi.OpCreateRoute, cloudapi.OpDeleteRoute},
			Kind: faultinject.Ambiguous, Probability: 0.15},
	},
	Timeout:            200 * time.Millisecond,
	ThrottleRetryAfter: 100 * time.Millisecond,
}

// mode is how a scenario runs: on a healthy cloud, or with faultyCloud's faults on until
// the scenario's checks, after which they are switched off for the final invariants.
type mode struct {
	name   string
	faults bool
}

var modes = []mode{{name: "healthy"}, {name: "under faults", faults: true}}

// forEachMode runs a scenario once per mode, each in its own environment.
func forEachMode(t *testing.T, scenario func(t *testing.T, m mode)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { scenario(t, m) })
	}
}

// newEnv starts a control plane and a CCM over the cloud described by testdata/cloud.yaml;
// everything is stopped and removed when the test ends, after checking the cloud's
// invariants (checkCloud). With m.faults the cloud injects faultyCloud's faults.
func newEnv(t *testing.T, m mode, ccmFlags ...string) *env {
	t.Helper()
	return newEnvWithCloud(t, m, func(cfg []byte) []byte { return cfg }, ccmFlags...)
}

// newEnvWithConfig is newEnv with extraConfig, top-level keys that testdata/cloud.yaml does
// not set, appended to the cloud config.
func newEnvWithConfig(t *testing.T, m mode, extraConfig string, ccmFlags ...string) *env {
	t.Helper()
	return newEnvWithCloud(t, m, func(cfg []byte) []byte { return append(cfg, extraConfig...) }, ccmFlags...)
}

// withFake returns the edit of testdata/cloud.yaml (for newEnvWithCloud) that adds
// settings, each one line of YAML, to its `fake:` section.
func withFake(settings ...string) func(cloudYAML []byte) []byte {
	return func(cfg []byte) []byte {
		lines := "\nfake:\n"
		for _, s := range settings {
			lines += "  " + s + "\n"
		}
		return bytes.Replace(cfg, []byte("\nfake:\n"), []byte(lines), 1)
	}
}

// provisioning is the `fake:` setting that keeps a new load balancer provisioning for its
// first read, as a real cloud takes its time: the controller that syncs the Service comes
// back after loadbalancer.ProvisioningRetryDelay (5 s). testdata/cloud.yaml's load
// balancers are active at once, so that the scenarios in which provisioning plays no part
// do not wait for it; the scenarios of each controller that waits for it (the upstream
// service controller, the class controller) set it, and check that it was waited for
// (waitedForProvisioning).
const provisioning = "provisioning: {reads: 1}"

// waitedForProvisioning checks that the CCM came back for a load balancer the cloud was
// provisioning: the controller's log quotes the RetryError.
func (e *env) waitedForProvisioning() {
	e.t.Helper()
	assert.True(e.t, strings.Contains(e.log.String(), " is "+string(cloudapi.LoadBalancerProvisioning)),
		"the CCM's log quotes no RetryError of a provisioning load balancer")
}

// newEnvWithCloud is newEnv over the cloud config that edit makes of testdata/cloud.yaml.
func newEnvWithCloud(t *testing.T, m mode, edit func(cloudYAML []byte) []byte, ccmFlags ...string) *env {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("testdata", "cloud.yaml"))
	require.NoError(t, err)
	cloud, err := harness.NewCloud(edit(cfg), faultyCloud)
	require.NoError(t, err)
	cloud.Faults.SetEnabled(m.faults)
	cp, err := harness.StartControlPlane()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs last: the checks below still have a context
	e := &env{t: t, ctx: ctx, cp: cp, cloud: cloud, client: cp.Client, log: &syncBuffer{}, flags: ccmFlags}
	t.Cleanup(func() {
		// Deferred, so they run even when a check below stops the test.
		defer func() {
			if err := cp.Stop(); err != nil {
				t.Errorf("stopping the control plane: %v", err)
			}
		}()
		defer func() {
			if e.ccm != nil {
				if err := e.ccm.Stop(); err != nil {
					t.Errorf("stopping the CCM: %v", err)
				}
			}
			if t.Failed() {
				t.Logf("last lines of the CCM's log:\n%s", e.log.tail(80))
			}
		}()
		if !t.Failed() && e.ccm != nil {
			e.checkCloud()
		}
	})
	e.startCCM()
	return e
}

// startCCM starts a CCM; the previous one must have been stopped.
func (e *env) startCCM() {
	e.t.Helper()
	ccm, err := harness.StartCCM(e.cp, e.cloud, e.log, e.flags...)
	require.NoError(e.t, err)
	e.ccm = ccm
}

// restartCCM stops the CCM and starts a new one over the same cloud and cluster: a new
// process as far as ccmkit is concerned (no state survives but the cloud's and the API's).
func (e *env) restartCCM() {
	e.t.Helper()
	require.NoError(e.t, e.ccm.Stop())
	e.ccm = nil
	e.startCCM()
}

// eventually fails the test when cond does not hold within wait.
func (e *env) eventually(what string, cond func(context.Context) (bool, error)) {
	e.t.Helper()
	if exited, err := e.ccm.Exited(); exited {
		e.t.Fatalf("the CCM exited: %v", err)
	}
	require.NoError(e.t, harness.Eventually(e.ctx, wait, what, cond))
}

func (e *env) node(name string) (*corev1.Node, error) {
	return e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
}

func (e *env) registerNode(spec harness.NodeSpec) {
	e.t.Helper()
	_, err := harness.RegisterNode(e.ctx, e.client, spec)
	require.NoError(e.t, err)
}

// initialized reports whether the cloud node controller has initialized the Node: its
// provider ID set, the uninitialized taint gone and its addresses in its status (a
// separate write of the controller, so it may come last).
func initialized(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == cloudproviderapi.TaintExternalCloudProvider {
			return false
		}
	}
	return n.Spec.ProviderID != "" && len(n.Status.Addresses) > 0
}

// shareOwner is the owner checkCloud gives the load balancer of the share with key
// (cloudapi.TagShare: "namespace/name", the suite's cloud config not sharing across
// namespaces).
func shareOwner(key string) string { return "share " + key }

// checkCloud switches faults off, lets the controllers converge, and checks what must hold
// of the cloud after any scenario: no Service (or share) ever had two load balancers at
// once (replayed from the cloud's history), no load balancer outlives its Service or its
// type LoadBalancer (a shared one, the last such Service of its share), and the cluster's
// routes are exactly the Nodes' pod CIDRs.
func (e *env) checkCloud() {
	e.t.Helper()
	e.cloud.Faults.SetEnabled(false)
	injected := e.cloud.Faults.Injected().Total()
	if len(injected.Faults) > 0 {
		e.t.Logf("faults injected: %v (of %d calls)", injected.Faults, injected.Calls)
	}

	// Ownership follows the tags: a create gives a load balancer its owner, an update may
	// adopt (tags added) or release (tags removed) it, a delete ends it. Load balancers of
	// no Service of this cluster (an operator's, a released one) count for none. A shared
	// load balancer's owner is its share.
	ownerOf := func(spec cloudapi.LoadBalancerSpec) string {
		if spec.Tags[cloudapi.TagCluster] != clusterID {
			return ""
		}
		if share := spec.Tags[cloudapi.TagShare]; share != "" {
			return shareOwner(share)
		}
		return spec.Tags[cloudapi.TagService]
	}
	owner := map[string]string{} // LB ID → owner (Service UID or share), "" for none
	open := map[string]int{}     // owner → LBs existing now
	own := func(id, uid string) {
		if old := owner[id]; old != "" {
			open[old]--
		}
		owner[id] = uid
		if uid == "" {
			return
		}
		if open[uid]++; open[uid] > 1 {
			e.t.Errorf("%s had %d load balancers at once (%s became its)", uid, open[uid], id)
		}
	}
	for _, ev := range e.cloud.Fake.LoadBalancerHistory() {
		switch ev.Op {
		case cloudapi.OpCreateLoadBalancer:
			own(ev.ID, ownerOf(ev.Spec))
		case cloudapi.OpDeleteLoadBalancer:
			own(ev.ID, "")
		case cloudapi.OpUpdateLoadBalancer:
			if !ev.ChangesMatch() {
				e.t.Errorf("update of %s described changes %+v but made %+v", ev.ID, ev.Changes, ev.Actual)
			}
			own(ev.ID, ownerOf(ev.Spec))
		}
	}

	e.eventually("no orphaned load balancer and no stale route", func(ctx context.Context) (bool, error) {
		svcs, err := e.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		wantLB := map[string]bool{} // by owner
		for _, s := range svcs.Items {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.DeletionTimestamp == nil {
				wantLB[string(s.UID)] = true
				if share := s.Annotations[lbAnnotation(loadbalancer.AnnotationShare)]; share != "" {
					wantLB[shareOwner(s.Namespace+"/"+share)] = true
				}
			}
		}
		for _, lb := range e.cloud.Fake.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagCluster: clusterID}) {
			if !wantLB[ownerOf(lb.Spec)] {
				return false, fmt.Errorf("load balancer %s (%s) has no LoadBalancer Service", lb.ID, lb.Spec.Name)
			}
		}
		nodes, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		wantRoutes := map[string]string{}
		for _, n := range nodes.Items {
			for _, cidr := range n.Spec.PodCIDRs {
				wantRoutes[cidr] = strings.TrimPrefix(n.Spec.ProviderID, "ccmkit://")
			}
		}
		if got := e.clusterRoutes(); !maps.Equal(got, wantRoutes) {
			return false, fmt.Errorf("routes %v, want %v", got, wantRoutes)
		}
		return true, nil
	})
}
