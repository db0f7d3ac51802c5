package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// TestRestartOnConvergedClusterWritesNothing converges a cluster (initialized Nodes with
// routes, three LoadBalancer Services), restarts the CCM, and counts what the new one
// asks of the cloud until every controller has been through its startup sync (every
// Service ensured again, per its EnsuredLoadBalancer event) and a full node-status and
// route period more: reads only, no write.
func TestRestartOnConvergedClusterWritesNothing(t *testing.T) {
	e := newEnv(t, mode{})
	e.registerNode(harness.NodeSpec{Name: "node-a", PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}})
	e.registerNode(harness.NodeSpec{Name: "node-b", PodCIDRs: []string{"10.244.2.0/24"}})
	e.registerNode(harness.NodeSpec{Name: "node-c", PodCIDRs: []string{"10.244.3.0/24"}})
	e.waitNodesInitialized("node-a", "node-b", "node-c")
	for _, name := range []string{"web", "api", "db"} {
		e.createService(newLBService(name))
	}
	for _, name := range []string{"web", "api", "db"} {
		e.waitIngress(name)
	}
	e.waitRoutes("routes for every pod CIDR", map[string]string{
		"10.244.1.0/24": "i-0001", "fd00:10:244:1::/64": "i-0001",
		"10.244.2.0/24": "i-0002", "10.244.3.0/24": "i-0003",
	})
	// Converged: a quiet period with no writes before the restart.
	quiet := func(what string) {
		before := e.cloud.Fake.Calls()
		time.Sleep(harness.Periods.NodeStatus + harness.Periods.Routes)
		assert.Zero(t, e.cloud.Fake.Calls().Sub(before).Writes(), "%s: writes in a quiet period: %v", what, e.cloud.Fake.Calls().Sub(before))
	}
	quiet("before the restart")

	seen := e.ensuredEvents()
	e.restartCCM()
	before := e.cloud.Fake.Calls()
	e.eventually("the new CCM's startup sync (instances, load balancers and routes listed)", func(context.Context) (bool, error) {
		c := e.cloud.Fake.Calls().Sub(before)
		return c[cloudapi.OpListInstances] > 0 && c[cloudapi.OpListLoadBalancers] > 0 && c[cloudapi.OpListRoutes] > 1, nil
	})
	e.waitEnsuredAfter(seen, "web", "api", "db")
	time.Sleep(harness.Periods.NodeStatus + harness.Periods.Routes)
	calls := e.cloud.Fake.Calls().Sub(before)
	t.Logf("cloud calls of the restarted CCM until it settled: %v", calls)
	assert.Zero(t, calls.Writes(), "a restart on a converged cluster writes nothing: %v", calls)
}

// ensuredEvents returns the service controller's EnsuredLoadBalancer events in the default
// namespace by UID, with their counts: what waitEnsuredAfter compares with.
func (e *env) ensuredEvents() map[types.UID]int32 {
	e.t.Helper()
	events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(e.ctx, metav1.ListOptions{FieldSelector: "reason=EnsuredLoadBalancer"})
	require.NoError(e.t, err)
	seen := make(map[types.UID]int32, len(events.Items))
	for _, ev := range events.Items {
		seen[ev.UID] = ev.Count
	}
	return seen
}

// waitEnsuredAfter waits until the service controller has recorded an EnsuredLoadBalancer
// event for each of the Services named since seen (ensuredEvents): an event seen does not
// hold, or holds with a lower count. Event times have second precision; this tells an
// ensure just before seen from one just after.
func (e *env) waitEnsuredAfter(seen map[types.UID]int32, names ...string) {
	e.t.Helper()
	e.eventually("the service controller ensured "+strings.Join(names, ", "), func(ctx context.Context) (bool, error) {
		events, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=EnsuredLoadBalancer"})
		if err != nil {
			return false, err
		}
		ensured := map[string]bool{}
		for _, ev := range events.Items {
			if count, ok := seen[ev.UID]; !ok || ev.Count > count {
				ensured[ev.InvolvedObject.Name] = true
			}
		}
		for _, name := range names {
			if !ensured[name] {
				return false, nil
			}
		}
		return true, nil
	})
}
