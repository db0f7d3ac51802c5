package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/sweeper"
)

// sweeperConfig switches the sweeper on with a grace period and interval short enough
// for a test.
const sweeperConfig = "sweeper: {enabled: true, gracePeriod: 3s, interval: 1s}\n"

func TestSweeperDeletesOrphansAndNothingElse(t *testing.T) {
	forEachMode(t, sweeperDeletesOrphansAndNothingElse)
}

// sweeperDeletesOrphansAndNothingElse: a Service force-removed while the CCM was down
// (finalizer removed by hand, then deleted) and a route of a Node that is gone are
// deleted by the sweeper of the next CCM, with events; a live Service's load balancer, a
// foreign load balancer, another cluster's load balancer and route, and the routes of
// live Nodes survive, also across another restart with the sweeper running.
func sweeperDeletesOrphansAndNothingElse(t *testing.T, m mode) {
	e := newEnvWithConfig(t, m, sweeperConfig)
	e.registerNode(harness.NodeSpec{Name: "node-a", PodCIDRs: []string{"10.244.1.0/24"}})
	e.waitNodesInitialized("node-a")
	live := e.createService(newLBService("live"))
	doomed := e.createService(newLBService("doomed"))
	e.waitIngress("live")
	e.waitIngress("doomed")
	liveLB := e.waitLB(live, "exists", func(cloudapi.LoadBalancer) bool { return true })
	doomedLB := e.waitLB(doomed, "exists", func(cloudapi.LoadBalancer) bool { return true })

	// What is not this cluster's, straight into the cloud.
	lbs, _ := e.cloud.Fake.LoadBalancers()
	rts, _ := e.cloud.Fake.Routes()
	foreign, err := lbs.CreateLoadBalancer(e.ctx, cloudapi.LoadBalancerSpec{Name: "operators", Tags: map[string]string{"team": "net"}})
	require.NoError(t, err)
	theirs, err := lbs.CreateLoadBalancer(e.ctx, cloudapi.LoadBalancerSpec{Name: "theirs", Tags: map[string]string{
		cloudapi.TagCluster: "other", cloudapi.TagService: "gone-uid", cloudapi.TagServiceName: "default/gone"}})
	require.NoError(t, err)
	theirRoute, err := rts.CreateRoute(e.ctx, cloudapi.RouteSpec{DestinationCIDR: "10.250.1.0/24", TargetInstanceID: "i-0003",
		Tags: map[string]string{cloudapi.TagCluster: "other", cloudapi.TagNode: "node-gone"}})
	require.NoError(t, err)
	// A route of this cluster to a Node that is gone, outside --cluster-cidr so that the
	// route controller (which deletes only routes in it) leaves it to the sweeper.
	orphanRoute, err := rts.CreateRoute(e.ctx, cloudapi.RouteSpec{DestinationCIDR: "10.250.2.0/24", TargetInstanceID: "i-0003",
		Tags: map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagNode: "node-gone"}})
	require.NoError(t, err)

	// The CCM is down while someone removes doomed's finalizer and deletes it.
	require.NoError(t, e.ccm.Stop())
	e.ccm = nil
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	require.NoError(t, err)
	_, err = e.client.CoreV1().Services(metav1.NamespaceDefault).Patch(e.ctx, "doomed", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "doomed", metav1.DeleteOptions{}))
	_, err = e.service("doomed")
	require.True(t, apierrors.IsNotFound(err), "doomed is gone at once without its finalizer: %v", err)

	started := time.Now()
	e.startCCM()
	e.eventually("the sweeper deleted doomed's load balancer and node-gone's route", func(context.Context) (bool, error) {
		return !slices.Contains(e.lbIDs(), doomedLB.ID) && !slices.Contains(e.routeIDs(), orphanRoute.ID), nil
	})
	t.Logf("swept %s after the CCM started", time.Since(started).Round(100*time.Millisecond))
	e.waitEvent("doomed", corev1.EventTypeNormal, sweeper.EventDeletedLoadBalancer, doomedLB.ID)
	e.waitNodeEvent("node-gone", corev1.EventTypeNormal, sweeper.EventDeletedRoute, orphanRoute.ID)

	survivors := func(what string) {
		t.Helper()
		assert.Subset(t, e.lbIDs(), []string{liveLB.ID, foreign.ID, theirs.ID}, "%s: load balancers that are not orphans of this cluster", what)
		assert.Contains(t, e.routeIDs(), theirRoute.ID, "%s: another cluster's route", what)
		assert.Equal(t, map[string]string{"10.244.1.0/24": "i-0001"}, e.clusterRoutes(), "%s: the live Node's route", what)
	}
	survivors("after the sweep")

	// The sweeper runs through another restart, for longer than its grace period after
	// it: nothing else goes.
	e.restartCCM()
	time.Sleep(3*time.Second + 3*time.Second) // grace period + a few sweeps
	e.waitIngress("live")
	survivors("after a restart")
}

func TestSweeperDeletesOrphanedTargetGroups(t *testing.T) {
	forEachMode(t, sweeperDeletesOrphanedTargetGroups)
}

// sweeperDeletesOrphanedTargetGroups: on a cloud with target groups, the group of a
// Service force-removed while the CCM was down goes after its load balancer, and so does a
// group of the cluster that no load balancer names (left by a CCM that stopped before
// deleting it); the group a live Service's load balancer names, another cluster's and an
// untagged one stay.
func sweeperDeletesOrphanedTargetGroups(t *testing.T, m mode) {
	e := newEnvWithCloud(t, m, func(cfg []byte) []byte {
		return append(withFake("capabilities: {targetGroups: true}")(cfg), sweeperConfig...)
	})
	e.registerNode(harness.NodeSpec{Name: "node-a"}) // labelled ccmkit.io/team=web from its instance's tag
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")
	live := e.createService(newLBService("live"))
	doomedSvc := newLBService("doomed")
	doomedSvc.Annotations = map[string]string{lbAnnotation("node-selector"): "ccmkit.io/team=web"} // a group of its own
	doomed := e.createService(doomedSvc)
	e.waitIngress("live")
	e.waitIngress("doomed")
	grouped := func(lb cloudapi.LoadBalancer) bool { return lb.Spec.TargetGroup != "" }
	liveLB := e.waitLB(live, "names a group", grouped)
	doomedLB := e.waitLB(doomed, "names a group", grouped)
	require.NotEqual(t, liveLB.Spec.TargetGroup, doomedLB.Spec.TargetGroup)

	groups, ok := e.cloud.Fake.TargetGroups()
	require.True(t, ok)
	newGroup := func(name string, tags map[string]string) string {
		t.Helper()
		g, err := groups.CreateTargetGroup(e.ctx, cloudapi.TargetGroupSpec{Name: name, Targets: []string{"i-0001"}, Tags: tags})
		require.NoError(t, err)
		return g.ID
	}
	leftover := newGroup("leftover", map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagTargetGroup: "selector-left"})
	theirs := newGroup("theirs", map[string]string{cloudapi.TagCluster: "other", cloudapi.TagTargetGroup: "all-nodes"})
	untagged := newGroup("untagged", map[string]string{"team": "net"})

	// The CCM is down while someone removes doomed's finalizer and deletes it.
	require.NoError(t, e.ccm.Stop())
	e.ccm = nil
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	require.NoError(t, err)
	_, err = e.client.CoreV1().Services(metav1.NamespaceDefault).Patch(e.ctx, "doomed", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, e.client.CoreV1().Services(metav1.NamespaceDefault).Delete(e.ctx, "doomed", metav1.DeleteOptions{}))

	started := time.Now()
	e.startCCM()
	groupIDs := func() []string {
		var ids []string
		for _, g := range e.cloud.Fake.Inventory().TargetGroups {
			ids = append(ids, g.ID)
		}
		return ids
	}
	e.eventually("the sweeper deleted doomed's load balancer, its group and the leftover group", func(context.Context) (bool, error) {
		ids := groupIDs()
		return !slices.Contains(e.lbIDs(), doomedLB.ID) && !slices.Contains(ids, doomedLB.Spec.TargetGroup) && !slices.Contains(ids, leftover), nil
	})
	t.Logf("swept %s after the CCM started", time.Since(started).Round(100*time.Millisecond))
	assert.ElementsMatch(t, []string{liveLB.Spec.TargetGroup, theirs, untagged}, groupIDs())
	assert.Contains(t, e.lbIDs(), liveLB.ID)
}

func (e *env) lbIDs() []string {
	var ids []string
	for _, lb := range e.cloud.Fake.Inventory().LoadBalancers {
		ids = append(ids, lb.ID)
	}
	return ids
}

func (e *env) routeIDs() []string {
	var ids []string
	for _, rt := range e.cloud.Fake.Inventory().Routes {
		ids = append(ids, rt.ID)
	}
	return ids
}

// waitNodeEvent waits for an event of the type and reason on the Node named name (in the
// namespace default, where a Node's events go) whose message contains part.
func (e *env) waitNodeEvent(name, eventType, reason, part string) {
	e.t.Helper()
	selector := "involvedObject.kind=Node,involvedObject.name=" + name + ",type=" + eventType + ",reason=" + reason
	e.eventually(fmt.Sprintf("a %s %s event on Node %s", eventType, reason, name), func(ctx context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool { return strings.Contains(ev.Message, part) }), nil
	})
}
