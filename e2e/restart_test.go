package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// TestRestartOnConvergedClusterWritesNothing converges a cluster (initialized Nodes with
// routes, three LoadBalancer Services), restarts the CCM, and counts what the new one
// asks of the cloud until every controller has been through its startup sync and a full
// node-status period more: reads only, no write.
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

	e.restartCCM()
	before := e.cloud.Fake.Calls()
	e.eventually("the new CCM's startup sync (instances, load balancers and routes listed)", func(context.Context) (bool, error) {
		c := e.cloud.Fake.Calls().Sub(before)
		return c[cloudapi.OpListInstances] > 0 && c[cloudapi.OpListLoadBalancers] > 0 && c[cloudapi.OpListRoutes] > 1, nil
	})
	time.Sleep(harness.Periods.NodeStatus + harness.Periods.Routes)
	calls := e.cloud.Fake.Calls().Sub(before)
	t.Logf("cloud calls of the restarted CCM until it settled: %v", calls)
	assert.Zero(t, calls.Writes(), "a restart on a converged cluster writes nothing: %v", calls)
}
