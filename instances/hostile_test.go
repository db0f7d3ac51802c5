package instances_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/nodecontrollers"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/providerid"
)

// hostile is a cloud that misbehaves as a cloud does in an incident, or as an adapter
// with a wrong error mapping does: its instance list can fail, or answer only the first
// keep instances, or answer every instance terminated; its GetInstance can answer not
// found for every instance (a wrong base path's 404 read as not found).
type hostile struct {
	cloudapi.Client
	mu             sync.Mutex
	listFails      bool
	keep           int // -1: the whole list
	listTerminated bool
	getNotFound    bool
	lists          int // lists begun (first pages asked for)
}

func (h *hostile) Instances() cloudapi.InstanceAPI { return hostileInstances{h} }

type hostileInstances struct{ h *hostile }

func (i hostileInstances) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	i.h.mu.Lock()
	lie := i.h.getNotFound
	i.h.mu.Unlock()
	if lie {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, fmt.Errorf("404 page not found"))
	}
	return i.h.Client.Instances().GetInstance(ctx, id)
}

func (i hostileInstances) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	i.h.mu.Lock()
	fails, keep, terminated := i.h.listFails, i.h.keep, i.h.listTerminated
	if opts.PageToken == "" {
		i.h.lists++
	}
	i.h.mu.Unlock()
	if fails {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpListInstances, "", fmt.Errorf("502 bad gateway"))
	}
	page, err := i.h.Client.Instances().ListInstances(ctx, opts)
	if err != nil {
		return nil, err
	}
	if keep >= 0 {
		page.Items, page.NextPageToken = page.Items[:min(keep, len(page.Items))], ""
	}
	if terminated {
		for j := range page.Items {
			page.Items[j].State = cloudapi.InstanceTerminated
		}
	}
	return page, nil
}

func (h *hostile) set(f func(h *hostile)) { h.mu.Lock(); f(h); h.mu.Unlock() }

func (h *hostile) listed() int { h.mu.Lock(); defer h.mu.Unlock(); return h.lists }

// hostileCluster is n NotReady Nodes, their instances in the fake cloud behind hostile,
// and the upstream node lifecycle controller over the ccmkit provider.
type hostileCluster struct {
	cloud   *fakecloud.Cloud
	hostile *hostile
	reg     metrics.KubeRegistry
	kube    *fake.Clientset
	ctrl    *nodelifecycle.CloudNodeLifecycleController
	events  *record.FakeRecorder
	clock   *clocktesting.FakeClock // the provider's
}

// setRecorder gives the controller the event recorder that its Run would create: the
// tests call MonitorNodes pass by pass, on the provider's virtual clock, and a Node
// deletion records an event.
func setRecorder(t *testing.T, ctrl *nodelifecycle.CloudNodeLifecycleController, rec record.EventRecorder) {
	t.Helper()
	f := reflect.ValueOf(ctrl).Elem().FieldByName("recorder")
	require.True(t, f.IsValid(), "the upstream node lifecycle controller has no recorder field any more: update setRecorder")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(rec))
}

func newHostileCluster(t *testing.T, n int, withProviderID bool) *hostileCluster {
	t.Helper()
	providerID := func(int, string) string { return "" }
	if withProviderID {
		providerID = func(_ int, id string) string { return "ccmkit://" + id }
	}
	return newHostileClusterWith(t, n, providerID)
}

// newHostileClusterWith is newHostileCluster with the spec.providerID of Node i, whose
// instance has the ID id, set to providerID(i, id).
func newHostileClusterWith(t *testing.T, n int, providerID func(i int, id string) string) *hostileCluster {
	t.Helper()
	cfg := fakecloud.Config{}
	var objs []runtime.Object
	for i := range n {
		id := fmt.Sprintf("i-%03d", i)
		cfg.Instances = append(cfg.Instances, fakecloud.Instance{ID: id, Name: fmt.Sprintf("node-%03d", i), Zone: "eu-1a", Region: "eu-1"})
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", i)},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}},
		}
		node.Spec.ProviderID = providerID(i, id)
		objs = append(objs, node)
	}
	cloud, err := fakecloud.New(cfg)
	require.NoError(t, err)
	c := &hostileCluster{cloud: cloud, hostile: &hostile{Client: cloud, keep: -1}, reg: metrics.NewKubeRegistry(), clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))}
	p, err := provider.New(provider.Config{
		Cluster: provider.ClusterConfig{ID: "c1"},
		// One attempt a call: the retries' backoff is real time, and this test counts
		// answers, not attempts.
		CloudAPI: provider.CloudAPIConfig{QPS: 1000, Burst: 1000, Retry: provider.RetryConfig{MaxAttempts: 1}},
	}, c.hostile, provider.Options{Metrics: c.reg, Clock: c.clock})
	require.NoError(t, err)
	c.kube = fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(c.kube, 0)
	for _, o := range objs {
		require.NoError(t, factory.Core().V1().Nodes().Informer().GetStore().Add(o))
	}
	// One worker: the Nodes are checked one after another, so the checks are countable.
	c.ctrl, err = nodecontrollers.NewLifecycle(factory.Core().V1().Nodes(), c.kube, p, 5*time.Second, 1)
	require.NoError(t, err)
	c.events = &record.FakeRecorder{} // no channel: events are dropped, never block
	setRecorder(t, c.ctrl, c.events)
	return c
}

// monitor runs MonitorNodes passes times, 5 s of the provider's clock apart.
func (c *hostileCluster) monitor(passes int) {
	for range passes {
		c.ctrl.MonitorNodes(context.Background())
		c.clock.Step(5 * time.Second)
	}
}

func (c *hostileCluster) nodes(t *testing.T) []string {
	t.Helper()
	list, err := c.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	return names
}

// count returns the checks of a shrunken list's lost instances with result.
func (c *hostileCluster) count(t *testing.T, result string) float64 {
	t.Helper()
	families, err := c.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "cloudprovider_ccmkit_"+provider.InstanceChecksMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["reason"] == "list_shrank" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func (c *hostileCluster) checks(t *testing.T, want string) {
	t.Helper()
	if want != "" {
		want = "# HELP cloudprovider_ccmkit_instance_gone_checks_total [ALPHA] Answers \"instance gone\" that were checked instead of trusted: a GetInstance not found while the instance list fails (reason list_failing, result refused), an instance a shrunken list lost (reason list_shrank; result gone, exists or error), or an answer gone that the deletion brake held back (reason brake, result refused).\n" +
			"# TYPE cloudprovider_ccmkit_instance_gone_checks_total counter\n" + want
	}
	require.NoError(t, testutil.GatherAndCompare(c.reg, strings.NewReader(want), "cloudprovider_ccmkit_"+provider.InstanceChecksMetric))
}

const monitorPasses = 10 * 60 / 5 // ten minutes of the controller's 5 s period

// An adapter that reads a proxy's 404 as not found, while the instance list fails: the
// upstream node lifecycle controller deletes no Node over ten minutes of NotReady Nodes,
// and every refused not-found is counted. When the list works again and an instance is
// really gone, its Node goes, and only that one.
func TestNoNodeDeletedOnNotFoundWhileTheListFails(t *testing.T) {
	c := newHostileCluster(t, 5, true)
	c.hostile.set(func(h *hostile) { h.listFails, h.getNotFound = true, true })
	c.monitor(monitorPasses)
	assert.Len(t, c.nodes(t), 5, "no Node deleted on a not-found while the cloud's list fails")
	c.checks(t, fmt.Sprintf("cloudprovider_ccmkit_instance_gone_checks_total{reason=\"list_failing\",result=\"refused\"} %d\n", monitorPasses*5))

	c.hostile.set(func(h *hostile) { h.listFails, h.getNotFound = false, false })
	require.NoError(t, c.cloud.DeleteInstance("i-002"))
	c.monitor(7) // the list is retried within its backoff's 30 s
	assert.Equal(t, []string{"node-000", "node-001", "node-003", "node-004"}, c.nodes(t))
}

// A cloud answering a truncated list in an incident, for Nodes found by name (no
// provider ID yet): each lost instance is checked with GetInstance, and the controller
// deletes no Node whose instance runs; the one really gone is deleted.
func TestNoNodeDeletedOnATruncatedList(t *testing.T) {
	c := newHostileCluster(t, 10, false)
	c.monitor(1) // the snapshot, whole
	require.NoError(t, c.cloud.DeleteInstance("i-009"))
	c.hostile.set(func(h *hostile) { h.keep = 1 }) // the list now answers i-000 only
	before := c.hostile.listed()
	c.monitor(monitorPasses)
	lists := c.hostile.listed() - before
	assert.Len(t, c.nodes(t), 9, "only node-009, whose instance is gone, was deleted")
	assert.NotContains(t, c.nodes(t), "node-009")
	// Every list loses again the lost instances that a check put back into the snapshot:
	// each is checked at most once per list; i-009 once.
	exists, gone := c.count(t, "exists"), c.count(t, "gone")
	assert.Equal(t, 1.0, gone)
	assert.Positive(t, exists)
	assert.LessOrEqual(t, exists, float64(8*lists), "at most one GetInstance per lost instance and list")
}

// A cloud whose list answers every instance terminated while GetInstance says they run:
// no Node is deleted.
func TestNoNodeDeletedWhenTheListSaysTerminated(t *testing.T) {
	c := newHostileCluster(t, 5, true)
	c.monitor(1)
	c.hostile.set(func(h *hostile) { h.listTerminated = true })
	before := c.hostile.listed()
	c.monitor(monitorPasses)
	lists := c.hostile.listed() - before
	assert.Len(t, c.nodes(t), 5)
	// A list every cache.maxAge of the provider's clock; each checks the five once.
	require.Positive(t, lists)
	c.checks(t, fmt.Sprintf("cloudprovider_ccmkit_instance_gone_checks_total{reason=\"list_shrank\",result=\"exists\"} %d\n", 5*lists))
}

// A provider ID with a character no provider ID has (a control character, a space, a
// non-ASCII letter) is malformed, never an instance the cloud does not know: the upstream
// node lifecycle controller deletes none of these NotReady Nodes, though GetInstance of
// what such an ID would name answers not found.
func TestNoNodeDeletedForANonPrintableProviderID(t *testing.T) {
	bad := []string{"ccmkit://i-000\x00", "ccmkit://i-001\x1b[0m", "ccmkit://i-002 x", "ccmkit://i-003\u00e9", "ccmkit://i-004\x7f",
		"ccmkit://" + strings.Repeat("i", 600)}
	c := newHostileClusterWith(t, len(bad), func(i int, _ string) string { return bad[i] })
	c.monitor(monitorPasses)
	assert.Len(t, c.nodes(t), len(bad), "no Node deleted for a malformed provider ID")

	p, err := provider.New(provider.Config{Cluster: provider.ClusterConfig{ID: "c1"}}, c.cloud, provider.Options{})
	require.NoError(t, err)
	v2, ok := p.InstancesV2()
	require.True(t, ok)
	legacy, ok := p.Instances()
	require.True(t, ok)
	ctx := context.Background()
	for _, id := range bad {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}, Spec: corev1.NodeSpec{ProviderID: id}}
		exists, err := v2.InstanceExists(ctx, node)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q: an error, never exists=false", id)
		assert.False(t, exists)
		_, err = v2.InstanceShutdown(ctx, node)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q", id)
		_, err = v2.InstanceMetadata(ctx, node)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q", id)
		_, err = legacy.InstanceExistsByProviderID(ctx, id)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q", id)
		_, err = legacy.InstanceShutdownByProviderID(ctx, id)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q: never InstanceNotFound", id)
		_, err = legacy.NodeAddressesByProviderID(ctx, id)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q", id)
		_, err = legacy.InstanceTypeByProviderID(ctx, id)
		require.ErrorIs(t, err, providerid.ErrMalformed, "%q", id)
	}
}
