package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

func TestNodeInitialization(t *testing.T) { forEachMode(t, nodeInitialization) }

func nodeInitialization(t *testing.T, m mode) {
	e := newEnv(t, m)
	e.registerNode(harness.NodeSpec{Name: "node-a"})
	e.registerNode(harness.NodeSpec{Name: "node-b", ProvidedIP: "10.0.1.12,fd00::12"})

	var a, b *corev1.Node
	e.eventually("node-a and node-b initialized", func(context.Context) (bool, error) {
		var err error
		if a, err = e.node("node-a"); err != nil {
			return false, err
		}
		if b, err = e.node("node-b"); err != nil {
			return false, err
		}
		return initialized(a) && initialized(b), nil
	})

	assert.Equal(t, "ccmkit://i-0001", a.Spec.ProviderID)
	assert.Equal(t, "m5.large", a.Labels[corev1.LabelInstanceTypeStable])
	assert.Equal(t, "eu-1a", a.Labels[corev1.LabelTopologyZone])
	assert.Equal(t, "eu-1", a.Labels[corev1.LabelTopologyRegion])
	assert.Equal(t, "true", a.Labels["ccmkit.io/e2e"], "nodes.additionalLabels from the cloud config")
	assert.Equal(t, "web", a.Labels["ccmkit.io/team"], "nodes.labelsFromTags: the instance's team tag")
	assert.Equal(t, "cc-42", a.Labels["ccmkit.io/cost-center"], "nodes.labelsFromTags: the instance's cost-center tag")
	assert.Equal(t, "cc-7", b.Labels["ccmkit.io/cost-center"])
	assert.NotContains(t, b.Labels, "ccmkit.io/team", "a tag value that is no label value adds no label")
	assert.Contains(t, e.log.String(), `"Skipping the Node label of an instance tag whose value is not a valid label value" node="node-b" instance="i-0002" tag="team" value="Data Team"`,
		"and is logged with the Node, instance, tag and value")
	assert.Equal(t, []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.11"},
		{Type: corev1.NodeInternalIP, Address: "fd00::11"},
		{Type: corev1.NodeExternalIP, Address: "198.51.100.11"},
		{Type: corev1.NodeHostName, Address: "node-a"},
	}, a.Status.Addresses, "dual-stack addresses in the cloud's order")

	// A dual-stack kubelet's --node-ip=<v4>,<v6> picks which of the instance's
	// InternalIPs the Node reports: the other InternalIP (10.0.0.12) is dropped.
	assert.Equal(t, "ccmkit://i-0002", b.Spec.ProviderID)
	assert.Equal(t, []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.1.12"},
		{Type: corev1.NodeInternalIP, Address: "fd00::12"},
		{Type: corev1.NodeHostName, Address: "node-b"},
	}, b.Status.Addresses, "provided-node-ip's addresses, then the other types")
}

func TestNodeShutdownAndDeletion(t *testing.T) {
	e := newEnv(t, mode{})
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		e.registerNode(harness.NodeSpec{Name: name})
	}
	e.eventually("three Nodes initialized", func(context.Context) (bool, error) {
		for _, name := range []string{"node-a", "node-b", "node-c"} {
			n, err := e.node(name)
			if err != nil || !initialized(n) {
				return false, err
			}
		}
		return true, nil
	})

	// A stopped instance: its kubelet stops posting, the shutdown taint appears; started
	// again and Ready, the taint goes.
	require.NoError(t, e.cloud.Fake.SetInstanceState("i-0003", cloudapi.InstanceStopped))
	_, err := harness.SetNodeReady(e.ctx, e.client, "node-c", false)
	require.NoError(t, err)
	e.eventually("shutdown taint on node-c", func(context.Context) (bool, error) {
		n, err := e.node("node-c")
		return err == nil && hasTaint(n, cloudproviderapi.TaintNodeShutdown), err
	})
	require.NoError(t, e.cloud.Fake.SetInstanceState("i-0003", cloudapi.InstanceRunning))
	_, err = harness.SetNodeReady(e.ctx, e.client, "node-c", true)
	require.NoError(t, err)
	e.eventually("shutdown taint removed from node-c", func(context.Context) (bool, error) {
		n, err := e.node("node-c")
		return err == nil && !hasTaint(n, cloudproviderapi.TaintNodeShutdown), err
	})

	// The cloud API fails for every instance call, node-b is NotReady: the lifecycle
	// controller must not take the errors for "instance gone". Let it run through many
	// monitor periods, then check node-b is still there.
	e.cloud.Faults.SetRules([]faultinject.Rule{{
		Ops:         []cloudapi.Operation{cloudapi.OpGetInstance, cloudapi.OpListInstances},
		Kind:        faultinject.Transient,
		Probability: 1,
	}})
	e.cloud.Faults.SetEnabled(true)
	_, err = harness.SetNodeReady(e.ctx, e.client, "node-b", false)
	require.NoError(t, err)
	faultsBefore := e.cloud.Faults.Injected().Total().Faults[faultinject.Transient]
	e.eventually("instance calls failing for a while", func(context.Context) (bool, error) {
		return e.cloud.Faults.Injected().Total().Faults[faultinject.Transient]-faultsBefore >= 20, nil
	})
	time.Sleep(3 * harness.Periods.NodeMonitor) // a few more monitor passes while failing
	_, err = e.node("node-b")
	require.NoError(t, err, "a NotReady Node must survive a cloud API outage")

	// The outage ends and i-0002 is really gone: now node-b is deleted, nobody else.
	e.cloud.Faults.SetEnabled(false)
	require.NoError(t, e.cloud.Fake.DeleteInstance("i-0002"))
	e.eventually("node-b deleted", func(context.Context) (bool, error) {
		_, err := e.node("node-b")
		return apierrors.IsNotFound(err), nil
	})
	for _, name := range []string{"node-a", "node-c"} {
		_, err := e.node(name)
		assert.NoError(t, err, "%s's instance exists: the Node must stay", name)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == key {
			return true
		}
	}
	return false
}
