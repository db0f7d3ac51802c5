package loadbalancer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicecontroller "k8s.io/cloud-provider/controllers/service"

	"github.com/ccmkit/ccmkit/internal/servicenodes"
)

// TestServiceControllerNodes checks the node set WatchNodeLabels syncs against what the
// service controller passes: its stableNodeSetPredicates.
func TestServiceControllerNodes(t *testing.T) {
	assert.Equal(t, servicecontroller.ToBeDeletedTaint, servicenodes.ToBeDeletedTaint)
	node := func(name string, tweak func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		tweak(n)
		return n
	}
	now := metav1.Now()
	all := []*corev1.Node{
		node("plain", func(*corev1.Node) {}),
		node("not-excluded", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "false" }),
		node("excluded", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }),
		node("excluded-garbled", func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "maybe" }),
		node("deleting", func(n *corev1.Node) { n.DeletionTimestamp = &now }),
		node("autoscaled-away", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: servicenodes.ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("not-ready", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
		}),
		node("other-taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
		}),
	}
	var names []string
	for _, n := range serviceControllerNodes(all) {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"plain", "not-excluded", "not-ready", "other-taint"}, names,
		"as the service controller: readiness is no criterion for its node set")
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
