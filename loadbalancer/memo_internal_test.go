package loadbalancer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/providerid"
)

// TestTargetMemoAnswersOnlyForTheSameNodeSet checks that the memo of the last node set's
// targets is used exactly when the targets cannot differ: the same Node objects in any
// order, each once, with the provider IDs they had.
func TestTargetMemoAnswersOnlyForTheSameNodeSet(t *testing.T) {
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	l := &LoadBalancer{opts: Options{ProviderID: format}}
	logger := klog.Logger{}
	node := func(i int) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n-%d", i)}, Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("ccmkit://i-%d", i)}}
	}
	a, b, c := node(1), node(2), node(3)

	assert.Equal(t, []string{"i-1", "i-2", "i-3"}, l.targets(logger, nil, []*corev1.Node{c, a, b}))
	_, hit := l.memo.lookup([]*corev1.Node{b, c, a})
	assert.True(t, hit, "the same Node objects in another order")

	got := l.targets(logger, nil, []*corev1.Node{a, b, c})
	got[0] = "mutated"
	assert.Equal(t, []string{"i-1", "i-2", "i-3"}, l.targets(logger, nil, []*corev1.Node{a, b, c}), "callers get copies")

	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  []string
	}{
		{"a Node given twice, one missing", []*corev1.Node{a, a, b}, []string{"i-1", "i-2"}},
		{"an equal but different Node object", []*corev1.Node{a, b, node(4)}, []string{"i-1", "i-2", "i-4"}},
		{"one Node fewer", []*corev1.Node{a, b}, []string{"i-1", "i-2"}},
		{"no nodes", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.memo.store([]*corev1.Node{a, b, c}, []string{"i-1", "i-2", "i-3"})
			assert.Equal(t, tc.want, l.targets(logger, nil, tc.nodes))
		})
	}

	t.Run("a provider ID changed in place", func(t *testing.T) {
		l.memo.store([]*corev1.Node{a, b, c}, []string{"i-1", "i-2", "i-3"})
		changed := *c
		changed.Spec.ProviderID = "ccmkit://i-9"
		*c = changed
		assert.Equal(t, []string{"i-1", "i-2", "i-9"}, l.targets(logger, nil, []*corev1.Node{a, b, c}))
	})

	t.Run("a set holding a Node twice is not stored", func(t *testing.T) {
		l.memo = targetMemo{}
		assert.Equal(t, []string{"i-1"}, l.targets(logger, nil, []*corev1.Node{a, a}))
		_, hit := l.memo.lookup([]*corev1.Node{a, a})
		assert.False(t, hit)
		assert.True(t, slices.Equal([]string{"i-1", "i-2"}, l.targets(logger, nil, []*corev1.Node{a, b})))
	})
}
