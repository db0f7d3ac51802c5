package providertest_test

// The deletion brake (nodes.deletionBrake), proven through the upstream node lifecycle
// controller on the provider's clock: a cloud answering "gone" for the whole cluster
// deletes no Node, a real scale-down still deletes its Nodes within two brake windows,
// and the brake lets go when the cloud lists the instances again or a Node acknowledges.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/testutil"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// brakeCluster is a cluster of ten Nodes, node-0 to node-9 on instances i-0 to i-9, under
// the upstream node lifecycle controller, with the provider's events recorded in kube.
type brakeCluster struct {
	c    *providertest.Cloud
	kube *kubefake.Clientset
	// taglessRoutes is set on a cloud whose routes carry no tags: every pass lists the
	// routes, as the route controller does every 10 s.
	taglessRoutes bool
	// lastStatus is when the cloud node controller's status update last asked for
	// every Node's instance metadata; it does every statusPeriod, so the provider lists
	// the cloud that often.
	lastStatus time.Time
}

// statusPeriod is the cloud node controller's --node-status-update-frequency default.
const statusPeriod = 5 * time.Minute

const brakeNodes = 10

// newBrakeCluster builds a brakeCluster; with taglessRoutes, on a cloud whose routes carry
// no tags, pod CIDRs 10.244.0.0/16.
func newBrakeCluster(t *testing.T, taglessRoutes bool) *brakeCluster {
	t.Helper()
	var insts []fake.Instance
	var objs []runtime.Object
	for i := range brakeNodes {
		insts = append(insts, fake.Instance{ID: fmt.Sprintf("i-%d", i), Name: fmt.Sprintf("node-%d", i)})
		objs = append(objs, newNode(fmt.Sprintf("node-%d", i), fmt.Sprintf("ccmkit://i-%d", i), corev1.ConditionTrue))
	}
	cloud := fake.Config{Instances: insts, Capabilities: fake.Capabilities{TaglessRoutes: taglessRoutes}}
	cidrs := func(c *provider.Config) {
		if taglessRoutes {
			c.Routes.ClusterCIDRs = []string{"10.244.0.0/16"}
		}
	}
	b := &brakeCluster{c: providertest.New(t, providertest.WithFake(cloud), providertest.WithConfig(cidrs)),
		kube: kubefake.NewClientset(objs...), taglessRoutes: taglessRoutes}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	b.c.Provider.Initialize(&providertest.ClientBuilder{Kube: b.kube}, stop)
	b.pass(t) // the first list: every instance live
	return b
}

// pass runs one MonitorNodes pass over the Nodes in kube, after the cloud node
// controller's status update when it is due.
func (b *brakeCluster) pass(t *testing.T) {
	t.Helper()
	list, err := b.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	if b.lastStatus.IsZero() || b.c.Now().Sub(b.lastStatus) >= statusPeriod {
		// What the cloud node controller's UpdateNodeStatus asks (its workqueue's
		// goroutines would outlive the test).
		iv2, _ := b.c.Provider.InstancesV2()
		for i := range list.Items {
			_, _ = iv2.InstanceMetadata(context.Background(), &list.Items[i])
		}
		b.lastStatus = b.c.Now()
	}
	if b.taglessRoutes {
		routes, _ := b.c.Provider.Routes()
		_, err := routes.ListRoutes(context.Background(), providertest.DefaultClusterID)
		require.NoError(t, err)
	}
	providertest.MonitorNodes(t, b.c.Provider, b.kube)
}

// run runs a pass every 30 s of the provider's clock for d.
func (b *brakeCluster) run(t *testing.T, d time.Duration) {
	t.Helper()
	for end := b.c.Now().Add(d); b.c.Now().Before(end); {
		b.c.Advance(30 * time.Second)
		b.pass(t)
	}
}

// change changes a Node in kube.
func (b *brakeCluster) change(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	n, err := b.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	change(n)
	_, err = b.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func (b *brakeCluster) notReady(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		b.change(t, name, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
	}
}

func (b *brakeCluster) names(t *testing.T) []string {
	t.Helper()
	list, err := b.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// refusedEvents returns, by Node, how many InstanceGoneRefused events it got (an event
// repeated counts its repetitions).
func (b *brakeCluster) refusedEvents(t *testing.T) map[string]int {
	t.Helper()
	events, err := b.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int{}
	for _, e := range events.Items {
		if e.Reason == instances.EventDeletionBrake && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "Node" {
			out[e.InvolvedObject.Name] += max(int(e.Count), 1)
		}
	}
	return out
}

// refusedCount returns the provider's count of answers "gone" the brake held back.
func (b *brakeCluster) refusedCount(t *testing.T) float64 {
	t.Helper()
	byResult, err := testutil.GetCounterValuesFromGatherer(b.c.Metrics, "cloudprovider_ccmkit_"+provider.InstanceChecksMetric,
		map[string]string{"reason": "brake"}, "result")
	require.NoError(t, err)
	return byResult["refused"]
}

func nodeNames(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("node-%d", i))
	}
	return out
}

// The CCM is pointed at another project while a zone is out (node-0 to node-2 NotReady,
// their instances running): the cloud lists none of the cluster's instances (an empty
// project, or another's instances) and answers every GetInstance not found. Over three
// brake windows no Node is deleted, each NotReady Node gets a Warning event once a window,
// and the metric counts the refusals. Then the brake lets go: when the cloud lists the
// instances again (only the one really deleted meanwhile goes), or when the operator
// annotates a Node.
func TestDeletionBrakeKeepsNodesWhenTheProjectSwitches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign int
		// taglessRoutes: the cloud's routes carry no tags, and the foreign project has a
		// route into the cluster's pod CIDRs to each of its instances, which the route
		// controller's lists check (they never release the brake).
		taglessRoutes bool
		release       string // "list" or "acknowledge"
	}{
		{name: "empty project, released by the list", release: "list"},
		{name: "foreign project, released by the list", foreign: 4, release: "list"},
		{name: "foreign project with routes the route controller checks, released by the list", foreign: 4, taglessRoutes: true, release: "list"},
		{name: "empty project, acknowledged", release: "acknowledge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrakeCluster(t, tc.taglessRoutes)
			outage := nodeNames(0, 3)
			b.notReady(t, outage...)
			b.pass(t)

			// The project switch.
			for i := range brakeNodes {
				require.NoError(t, b.c.Fake.DeleteInstance(fmt.Sprintf("i-%d", i)))
			}
			for i := range tc.foreign {
				require.NoError(t, b.c.Fake.AddInstance(cloudapi.Instance{ID: fmt.Sprintf("x-%d", i), Name: fmt.Sprintf("other-%d", i), State: cloudapi.InstanceRunning}))
				if tc.taglessRoutes {
					api, _ := b.c.Fake.Routes()
					_, err := api.CreateRoute(context.Background(), cloudapi.RouteSpec{DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", 100+i), TargetInstanceID: fmt.Sprintf("x-%d", i)})
					require.NoError(t, err)
				}
			}
			windows := 3
			b.run(t, time.Duration(windows)*provider.DefaultDeletionBrakeWindow)
			assert.Equal(t, nodeNames(0, brakeNodes), b.names(t), "no Node deleted")
			assert.Positive(t, b.refusedCount(t), "the refusals are counted")
			// The lifecycle controller asks for the NotReady Nodes every pass, the cloud
			// node controller for every Node every statusPeriod: each Node is told.
			eventually(t, func() bool { return len(b.refusedEvents(t)) == brakeNodes }, "each Node gets an event")
			for node, n := range b.refusedEvents(t) {
				assert.LessOrEqual(t, n, windows+1, "%s: an event once a window, not once a pass", node)
			}

			switch tc.release {
			case "list":
				// Credentials fixed; meanwhile i-2 was really deleted.
				for i := range brakeNodes {
					if i != 2 {
						require.NoError(t, b.c.Fake.AddInstance(cloudapi.Instance{ID: fmt.Sprintf("i-%d", i), Name: fmt.Sprintf("node-%d", i), State: cloudapi.InstanceRunning}))
					}
				}
				b.run(t, 2*time.Minute)
				assert.Equal(t, slices.DeleteFunc(nodeNames(0, brakeNodes), func(n string) bool { return n == "node-2" }), b.names(t),
					"released: the Node of the instance really gone goes, the others stay")
			case "acknowledge":
				b.change(t, "node-1", func(n *corev1.Node) {
					n.Annotations = map[string]string{instances.AnnotationAcknowledgeGone: "true"}
				})
				b.pass(t)
				assert.Equal(t, slices.DeleteFunc(nodeNames(0, brakeNodes), func(n string) bool { return n == "node-1" }), b.names(t),
					"the acknowledged Node goes, and only it")
			}
		})
	}
}

// A real scale-down of 60 % of the instances: their Nodes go NotReady and the cloud
// answers their instances gone. Half the known instances go in the first window, the last
// one in the next: every Node of a deleted instance is gone within two brake windows, and
// no other Node is touched.
func TestDeletionBrakeLetsAScaleDownThroughWithinTwoWindows(t *testing.T) {
	b := newBrakeCluster(t, false)
	removed := nodeNames(4, brakeNodes)
	for i := 4; i < brakeNodes; i++ {
		require.NoError(t, b.c.Fake.DeleteInstance(fmt.Sprintf("i-%d", i)))
	}
	b.notReady(t, removed...)
	b.c.ExpireSnapshots()
	start := b.c.Now()
	b.pass(t)
	assert.Len(t, b.names(t), brakeNodes-5, "half the ten known instances read as gone at once")

	b.run(t, provider.DefaultDeletionBrakeWindow-2*time.Minute)
	assert.Len(t, b.names(t), brakeNodes-5, "the sixth waits for the next window")
	eventually(t, func() bool { return len(b.refusedEvents(t)) == 1 }, "the Node kept gets an event")
	assert.Positive(t, b.refusedCount(t))

	for len(b.names(t)) > 4 && b.c.Now().Sub(start) <= 2*provider.DefaultDeletionBrakeWindow {
		b.run(t, 30*time.Second)
	}
	assert.Equal(t, nodeNames(0, 4), b.names(t), "every Node of a deleted instance is gone, no other")
	assert.LessOrEqual(t, b.c.Now().Sub(start), provider.DefaultDeletionBrakeWindow+30*time.Second,
		"the last one goes at the first pass after the first window")
}
