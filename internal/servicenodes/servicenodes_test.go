package servicenodes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicecontroller "k8s.io/cloud-provider/controllers/service"

	"github.com/ccmkit/ccmkit/internal/servicenodes"
)

func TestUpstreamsNames(t *testing.T) {
	assert.Equal(t, servicecontroller.ToBeDeletedTaint, servicenodes.ToBeDeletedTaint)
}

func TestStable(t *testing.T) {
	now := metav1.Now()
	for _, tt := range []struct {
		name     string
		node     corev1.Node
		included bool
		stable   bool
	}{
		{"plain", corev1.Node{}, true, true},
		{"excluded", corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelNodeExcludeBalancers: "true"}}}, false, false},
		{"exclusion false", corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelNodeExcludeBalancers: "false"}}}, true, true},
		{"exclusion not a boolean", corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelNodeExcludeBalancers: ""}}}, false, false},
		{"being deleted", corev1.Node{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, true, false},
		{"autoscaler taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: servicenodes.ToBeDeletedTaint}}}}, true, false},
		{"NotReady", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.included, servicenodes.Included(&tt.node))
			assert.Equal(t, tt.stable, servicenodes.Stable(&tt.node))
			got := servicenodes.Filter([]*corev1.Node{&tt.node})
			assert.Equal(t, tt.stable, len(got) == 1)
		})
	}
}
