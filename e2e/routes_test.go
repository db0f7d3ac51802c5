package e2e

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// clusterRoutes returns the cloud's routes of the e2e cluster, destination → target.
func (e *env) clusterRoutes() map[string]string {
	out := map[string]string{}
	for _, r := range e.cloud.Fake.Inventory().RoutesTagged(map[string]string{cloudapi.TagCluster: clusterID}) {
		out[r.DestinationCIDR] = r.TargetInstanceID
	}
	return out
}

func (e *env) waitRoutes(what string, want map[string]string) {
	e.t.Helper()
	e.eventually(what, func(context.Context) (bool, error) {
		return maps.Equal(e.clusterRoutes(), want), nil
	})
}

func TestRoutesFollowNodePodCIDRs(t *testing.T) { forEachMode(t, routesFollowNodePodCIDRs) }

func routesFollowNodePodCIDRs(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a", PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}})
	e.registerNode(harness.NodeSpec{Name: "node-b", PodCIDRs: []string{"10.244.2.0/24", "fd00:10:244:2::/64"}})
	e.waitNodesInitialized("node-a", "node-b")

	e.waitRoutes("one route per Node pod CIDR, IPv4 and IPv6", map[string]string{
		"10.244.1.0/24":      "i-0001",
		"fd00:10:244:1::/64": "i-0001",
		"10.244.2.0/24":      "i-0002",
		"fd00:10:244:2::/64": "i-0002",
	})
	for _, r := range e.cloud.Fake.Inventory().Routes {
		assert.False(t, r.Blackhole, "route %s", r.DestinationCIDR)
	}
	e.eventually("NetworkUnavailable=False on node-a", func(context.Context) (bool, error) {
		n, err := e.node("node-a")
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == "NetworkUnavailable" {
				return c.Status == "False", nil
			}
		}
		return false, nil
	})

	require.NoError(t, e.client.CoreV1().Nodes().Delete(e.ctx, "node-b", metav1.DeleteOptions{}))
	e.waitRoutes("node-b's routes removed with it", map[string]string{
		"10.244.1.0/24":      "i-0001",
		"fd00:10:244:1::/64": "i-0001",
	})
}
