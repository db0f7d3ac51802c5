package labelwatch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/internal/servicenodes"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// recorder is a Syncer that sends each sync's Nodes, as "name:pool" sorted, on syncs, and
// fails the calls fail says to (by their number, from 1).
type recorder struct {
	syncs chan []string
	calls int
	fail  func(call int) error
}

func newRecorder() *recorder { return &recorder{syncs: make(chan []string, 100)} }

func (r *recorder) SyncNodeLabels(ctx context.Context, nodes []*corev1.Node) error {
	r.calls++ // one sync at a time: Run's loop
	got := make([]string, 0, len(nodes))
	for _, n := range nodes {
		got = append(got, n.Name+":"+n.Labels["pool"])
	}
	slices.Sort(got)
	select {
	case r.syncs <- got:
	case <-ctx.Done():
	}
	if r.fail != nil {
		return r.fail(r.calls)
	}
	return nil
}

// next returns the next sync's Nodes, failing the test when none comes in time.
func (r *recorder) next(t *testing.T) []string {
	t.Helper()
	select {
	case got := <-r.syncs:
		return got
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no sync")
		return nil
	}
}

// none checks that no sync comes for a while.
func (r *recorder) none(t *testing.T, why string) {
	t.Helper()
	select {
	case got := <-r.syncs:
		assert.Failf(t, "a sync came", "%s: %v", why, got)
	case <-time.After(300 * time.Millisecond):
	}
}

// run starts Run over client and syncer and returns the function that stops it, which
// waits for Run to return and checks that no goroutine of it is left.
func run(t *testing.T, ctx context.Context, client *kubefake.Clientset, syncer Syncer) (stop func()) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	watching := providertest.WatchesStarted(client, "nodes")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, client, syncer)
	}()
	select { // a Node written before the watch starts would be lost to Run
	case <-watching:
	case <-time.After(time.Minute):
		cancel()
		<-done
		require.FailNow(t, "the Node informer's watch did not start")
	}
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "Run did not return after its context ended")
		}
		// The work queue's last goroutine ends just after Run returns.
		assert.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NoError(c, goleak.Find(before))
		}, 10*time.Second, 20*time.Millisecond, "no goroutine left once Run returned")
	}
}

func node(name, pool string, tweak func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}},
		Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-" + name}}
	if tweak != nil {
		tweak(n)
	}
	return n
}

// TestRun runs the watch over a fake clientset: it syncs the Nodes the service
// controller would pass once its cache has synced and after each change of a Node's
// labels, not after other changes, and returns when its context ends, leaving no
// goroutine behind.
func TestRun(t *testing.T) {
	now := metav1.Now()
	objects := []runtime.Object{
		node("a", "web", nil),
		node("b", "web", nil),
		node("c", "db", func(n *corev1.Node) { // readiness is no criterion for the service controller's node set
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
		}),
		node("autoscaled", "db", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: servicenodes.ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("excluded", "db", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }),
		node("deleting", "db", func(n *corev1.Node) {
			n.DeletionTimestamp = &now
			n.Finalizers = []string{"example.com/hold"}
		}),
	}
	client := kubefake.NewClientset(objects...)
	_, ctx := ktesting.NewTestContext(t)
	syncer := newRecorder()
	stop := run(t, ctx, client, syncer)
	defer stop()

	assert.Equal(t, []string{"a:web", "b:web", "c:db"}, syncer.next(t), "the first sync, once the cache has synced")
	update := func(name string, change func(*corev1.Node)) {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		change(n)
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	update("a", func(n *corev1.Node) { n.Labels["pool"] = "db" })
	assert.Equal(t, []string{"a:db", "b:web", "c:db"}, syncer.next(t))
	update("b", func(n *corev1.Node) { n.Annotations = map[string]string{"note": "x"} })
	update("c", func(n *corev1.Node) { n.Spec.Unschedulable = true })
	syncer.none(t, "changes but to labels")
	update("excluded", func(n *corev1.Node) { delete(n.Labels, corev1.LabelNodeExcludeBalancers) })
	assert.Equal(t, []string{"a:db", "b:web", "c:db", "excluded:db"}, syncer.next(t), "no longer excluded")
	update("autoscaled", func(n *corev1.Node) { n.Labels["zone"] = "z1" })
	assert.Equal(t, []string{"a:db", "b:web", "c:db", "excluded:db"}, syncer.next(t), "a label change of a Node the service controller does not pass")
}

// A sync that fails is logged and retried after a backoff until one succeeds; then no
// sync follows until the labels change again.
func TestRunRetriesAFailedSync(t *testing.T) {
	client := kubefake.NewClientset(node("a", "web", nil))
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(t.Context(), logger)
	failure := errors.New("cloud says no")
	syncer := newRecorder()
	syncer.fail = func(call int) error {
		if call <= 3 {
			return failure
		}
		return nil
	}
	stop := run(t, ctx, client, syncer)
	defer stop()

	for range 4 {
		assert.Equal(t, []string{"a:web"}, syncer.next(t))
	}
	syncer.none(t, "the fourth sync succeeded")
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	assert.Equal(t, 3, strings.Count(logs, "Syncing the targets of Services with a node selector after Node labels changed; retrying"), logs)
	assert.Contains(t, logs, `err="cloud says no"`)
	assert.Contains(t, logs, "retries=2")
	assert.Contains(t, logs, "node-labels", "the logger's name")
}

// TestSyncNext checks one step of the queue: a failed list or sync requeues the key with
// a backoff, a sync that succeeds forgets its failures, a shut down queue ends the loop.
func TestSyncNext(t *testing.T) {
	logger := klog.Background()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second))
	defer queue.ShutDown()
	nodes := []*corev1.Node{
		node("a", "web", nil),
		node("excluded", "web", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }),
	}
	list := func(labels.Selector) ([]*corev1.Node, error) { return nodes, nil }
	var synced [][]string
	syncErr := errors.New("sync failed")
	sync := func(err error) func(context.Context, []*corev1.Node) error {
		return func(_ context.Context, nodes []*corev1.Node) error {
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			synced = append(synced, names)
			return err
		}
	}

	// requeued waits for the key to come back after its backoff (a step would block on
	// an empty queue).
	requeued := func(why string) {
		t.Helper()
		require.Eventually(t, func() bool { return queue.Len() == 1 }, 5*time.Second, time.Millisecond, why)
	}
	queue.Add(queueKey)
	require.True(t, syncNext(t.Context(), logger, queue, list, sync(syncErr)))
	assert.Equal(t, [][]string{{"a"}}, synced, "the Nodes the service controller would pass")
	assert.Equal(t, 1, queue.NumRequeues(queueKey), "a failed sync is requeued")
	requeued("a failed sync is requeued")

	listErr := errors.New("list failed")
	require.True(t, syncNext(t.Context(), logger, queue, func(labels.Selector) ([]*corev1.Node, error) { return nil, listErr }, sync(nil)))
	assert.Len(t, synced, 1, "no sync without a list")
	assert.Equal(t, 2, queue.NumRequeues(queueKey), "a failed list is requeued")
	requeued("a failed list is requeued")

	require.True(t, syncNext(t.Context(), logger, queue, list, sync(nil)))
	assert.Len(t, synced, 2)
	assert.Zero(t, queue.NumRequeues(queueKey), "a sync that succeeds forgets the failures")
	assert.Zero(t, queue.Len(), "nothing requeued after a success")

	queue.ShutDown()
	assert.False(t, syncNext(t.Context(), logger, queue, list, sync(nil)), "a shut down queue")
	assert.Len(t, synced, 2)
}

func TestSlimNodeKeepsWhatTargetsDependOn(t *testing.T) {
	now := metav1.Now()
	full := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"big": "x"}, DeletionTimestamp: &now},
		Spec:   corev1.NodeSpec{ProviderID: "ccmkit://i-1", Taints: []corev1.Taint{{Key: "k"}}, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}}}},
	}
	got, err := slimNode(full)
	assert.NoError(t, err)
	assert.Equal(t, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"}, DeletionTimestamp: &now},
		Spec:       corev1.NodeSpec{ProviderID: "ccmkit://i-1", Taints: []corev1.Taint{{Key: "k"}}},
	}, got)
	other := "a tombstone"
	got, err = slimNode(other)
	assert.NoError(t, err)
	assert.Equal(t, other, got)
}
