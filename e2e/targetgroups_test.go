package e2e

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

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// TestLoadBalancersShareTargetGroups: on a cloud with target groups, the load balancers
// that want the same Nodes name one group, a Node added under the upstream service
// controller's node sync is written to the groups and to no load balancer, and the groups
// go with the last load balancer that names them.
func TestLoadBalancersShareTargetGroups(t *testing.T) { forEachMode(t, loadBalancersShareTargetGroups) }

func loadBalancersShareTargetGroups(t *testing.T, m mode) {
	e := newEnvWithCloud(t, m, withFake("capabilities: {targetGroups: true}"))
	e.registerNode(harness.NodeSpec{Name: "node-a"}) // labelled ccmkit.io/team=web from its instance's tag
	e.registerNode(harness.NodeSpec{Name: "node-b"})
	e.waitNodesInitialized("node-a", "node-b")

	const services, selecting = 8, 2
	var svcs []*corev1.Service
	for i := range services {
		svc := newLBService(fmt.Sprintf("svc-%d", i))
		if i < selecting {
			svc.Annotations = map[string]string{lbAnnotation("node-selector"): "ccmkit.io/team=web"}
		}
		svcs = append(svcs, e.createService(svc))
	}
	// reach reports whether every Service's one load balancer names a group whose members
	// are its Nodes' instances, and has no targets of its own.
	reach := func(all ...string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			inv := e.cloud.Fake.Inventory()
			for i, svc := range svcs {
				lbs := inv.LoadBalancersTagged(map[string]string{cloudapi.TagService: string(svc.UID)})
				if len(lbs) != 1 || lbs[0].Spec.TargetGroup == "" || len(lbs[0].Spec.Targets) > 0 {
					return false, nil
				}
				want := all
				if i < selecting {
					want = []string{"i-0001"}
				}
				got := slices.Clone(inv.Targets(lbs[0]))
				slices.Sort(got)
				if !slices.Equal(got, want) {
					return false, nil
				}
			}
			return true, nil
		}
	}
	for _, svc := range svcs {
		e.waitIngress(svc.Name)
	}
	e.eventually("every load balancer names its group", reach("i-0001", "i-0002"))
	require.Len(t, e.cloud.Fake.Inventory().TargetGroups, 2, "one group per node selector")

	t.Run("a Node added is written to its group, not to the load balancers", func(t *testing.T) {
		before := e.cloud.Fake.Calls()
		e.registerNode(harness.NodeSpec{Name: "node-c"})
		e.waitNodesInitialized("node-c")
		e.eventually("every load balancer without a selector reaches node-c", reach("i-0001", "i-0002", "i-0003"))
		calls := e.cloud.Fake.Calls().Sub(before)
		t.Logf("calls from node-c's registration to every load balancer reaching it: %v", calls)
		assert.Zero(t, calls[cloudapi.OpUpdateLoadBalancer], "no load balancer write: %v", calls)
		assert.Positive(t, calls[cloudapi.OpUpdateTargetGroup], calls)
		assert.Less(t, calls[cloudapi.OpUpdateTargetGroup], int64(services-selecting), "fewer group writes than load balancers: %v", calls)
		assert.Len(t, e.cloud.Fake.Inventory().TargetGroups, 2)
	})

	if !m.faults {
		t.Run("a restart writes nothing", func(t *testing.T) {
			seen := e.ensuredEvents()
			e.restartCCM()
			before := e.cloud.Fake.Calls()
			var names []string
			for _, svc := range svcs {
				names = append(names, svc.Name)
			}
			e.waitEnsuredAfter(seen, names...)
			time.Sleep(harness.Periods.NodeStatus)
			calls := e.cloud.Fake.Calls().Sub(before)
			t.Logf("cloud calls of the restarted CCM until it settled: %v", calls)
			assert.Zero(t, calls.Writes(), "a restart writes nothing: %v", calls)
			assert.LessOrEqual(t, calls[cloudapi.OpListTargetGroups], int64(3), "one list per group and one collection: %v", calls)
		})
	}

	t.Run("the groups go with the last load balancer", func(t *testing.T) {
		for _, svc := range svcs {
			require.NoError(t, e.client.CoreV1().Services(svc.Namespace).Delete(e.ctx, svc.Name, metav1.DeleteOptions{}))
		}
		e.eventually("no load balancer and no target group left", func(context.Context) (bool, error) {
			inv := e.cloud.Fake.Inventory()
			return len(inv.LoadBalancers) == 0 && len(inv.TargetGroups) == 0, nil
		})
	})
}
