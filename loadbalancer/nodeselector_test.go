package loadbalancer_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// labelled returns a copy of the env's nodes where node i has the label pool=pools[i]
// (none for ""): new Node objects, as an informer hands out after a change.
func (e *env) labelled(pools ...string) []*corev1.Node {
	out := make([]*corev1.Node, len(e.nodes))
	for i, n := range e.nodes {
		c := n.DeepCopy()
		c.Labels = map[string]string{}
		if i < len(pools) && pools[i] != "" {
			c.Labels["pool"] = pools[i]
		}
		out[i] = c
	}
	return out
}

func withNodeSelector(sel string) func(*corev1.Service) {
	return withAnnotation(loadbalancer.AnnotationNodeSelector, sel)
}

func TestNodeSelector(t *testing.T) {
	e := newEnv(t, fake.Config{})
	nodes := e.labelled("web", "web", "db", "", "web")
	svc := newService("web", withNodeSelector("pool=web"))
	e.ensure(t, svc, nodes)
	assert.Equal(t, []string{"i-0", "i-1", "i-4"}, e.only(t).Spec.Targets)

	before := e.cloud.Calls()
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	e.ensure(t, svc, reversed)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "converged with a node selector: no call")

	t.Run("a Node's labels change: one update", func(t *testing.T) {
		relabelled := e.labelled("web", "db", "web", "", "web")
		before := e.cloud.Calls()
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, relabelled))
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
		hist := e.cloud.LoadBalancerHistory()
		last := hist[len(hist)-1]
		assert.Equal(t, cloudapi.LoadBalancerChanges{AddTargets: []string{"i-2"}, RemoveTargets: []string{"i-1"}}, last.Changes)
		assert.True(t, last.ChangesMatch())
		nodes = relabelled
	})

	t.Run("a selector that selects the same nodes: no call", func(t *testing.T) {
		before := e.cloud.Calls()
		e.ensure(t, newService("web", withNodeSelector("pool in (web, db), pool notin (db)")), nodes)
		assert.Empty(t, e.cloud.Calls().Sub(before))
	})

	t.Run("the selector changes: one update", func(t *testing.T) {
		before := e.cloud.Calls()
		e.ensure(t, newService("web", withNodeSelector("pool")), nodes)
		assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
		assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-4"}, e.only(t).Spec.Targets)
	})

	t.Run("a selector that matches no Node: no targets, logged", func(t *testing.T) {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
		ctx := klog.NewContext(t.Context(), logger)
		_, err := e.lb.EnsureLoadBalancer(ctx, "c", newService("web", withNodeSelector("pool=cache")), nodes)
		require.NoError(t, err)
		assert.Empty(t, e.only(t).Spec.Targets, "allowed: a load balancer without targets")
		logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
		assert.Contains(t, logs, "The node selector selects none of the nodes")
		assert.Contains(t, logs, `nodeSelector="pool=cache"`)
	})

	t.Run("no selector: every node again", func(t *testing.T) {
		e.ensure(t, newService("web"), nodes)
		assert.Len(t, e.only(t).Spec.Targets, len(nodes))
	})
}

// TestMalformedNodeSelectorLeavesTheTargets: a malformed selector is the annotation's
// error (a Warning event), and neither EnsureLoadBalancer nor UpdateLoadBalancer writes:
// every node is not what the Service's owner asked for.
func TestMalformedNodeSelectorLeavesTheTargets(t *testing.T) {
	e := newEnv(t, fake.Config{})
	nodes := e.labelled("web", "web", "db")
	e.ensure(t, newService("web", withNodeSelector("pool=web")), nodes)
	require.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets)

	bad := newService("web", withNodeSelector("pool in (web"))
	before := e.cloud.Calls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", bad, nodes)
	var aerr *loadbalancer.AnnotationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, prefix+loadbalancer.AnnotationNodeSelector, aerr.Key)
	assert.Contains(t, err.Error(), `annotation loadbalancer.ccmkit.io/node-selector: "pool in (web"`)

	err = e.lb.UpdateLoadBalancer(t.Context(), "c", bad, e.labelled("db", "web", "web", "web"))
	require.ErrorAs(t, err, &aerr)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "no write: the targets stay")
	assert.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets)

	// Another annotation malformed, the selector fine: the node sync still moves the targets.
	typo := newService("web", withNodeSelector("pool=web"), withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "ten seconds"))
	err = e.lb.UpdateLoadBalancer(t.Context(), "c", typo, e.labelled("db", "web", "web"))
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, []string{"i-1", "i-2"}, e.only(t).Spec.Targets, "the selector applies to the new node set")
}

func TestSyncNodeLabels(t *testing.T) {
	e := newEnv(t, fake.Config{})
	nodes := e.labelled("web", "web", "db", "db", "db")
	selecting := newService("web", withNodeSelector("pool=web"))
	plain := newService("plain")
	e.ensure(t, selecting, nodes)
	e.ensure(t, plain, nodes)
	target := func(svc *corev1.Service) []string {
		lbs := e.cloud.Inventory().LoadBalancersTagged(map[string]string{cloudapi.TagService: string(svc.UID)})
		require.Len(t, lbs, 1)
		return lbs[0].Spec.Targets
	}

	before := e.cloud.Calls()
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "labels as they were: no call")

	relabelled := e.labelled("db", "web", "web", "db", "db")
	before = e.cloud.Calls()
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), relabelled[:4]))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before),
		"only the Service with a node selector is synced")
	assert.Equal(t, []string{"i-1", "i-2"}, target(selecting))
	assert.Len(t, target(plain), 5, "a Service without a node selector is the service controller's alone")

	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", selecting))
	before = e.cloud.Calls()
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "a deleted Service is no longer synced")

	// A Service whose node selector was removed is no longer synced either.
	again := newService("again", withNodeSelector("pool=web"))
	e.ensure(t, again, nodes)
	e.ensure(t, newService("again"), nodes)
	before = e.cloud.Calls()
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), relabelled))
	assert.Empty(t, e.cloud.Calls().Sub(before))
}

// A Service with a node selector and a malformed annotation: a sync of node labels writes
// the new targets and leaves the annotation to the service controller's sync (its event),
// never returning it, which would make the Node label watch retry every Service for ever.
func TestSyncNodeLabelsLeavesAMalformedAnnotationToTheServiceController(t *testing.T) {
	e := newEnv(t, fake.Config{})
	nodes := e.labelled("web", "web", "db")
	e.ensure(t, newService("web", withNodeSelector("pool=web")), nodes)
	typo := newService("web", withNodeSelector("pool=web"), withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "ten seconds"))
	require.Error(t, e.lb.UpdateLoadBalancer(t.Context(), "c", typo, nodes), "the service controller's sync reports it")
	relabelled := e.labelled("db", "web", "web")
	require.NoError(t, e.lb.SyncNodeLabels(t.Context(), relabelled))
	assert.Equal(t, []string{"i-1", "i-2"}, e.only(t).Spec.Targets)
}
