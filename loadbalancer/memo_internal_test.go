package loadbalancer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/providerid"
)

// TestTargetMemoAnswersOnlyForTheSameNodeSet checks that the memo of the last node set's
// targets is used exactly when the targets cannot differ: the same Node objects in any
// order, each once, with the provider IDs they had, and the same node selector.
func TestTargetMemoAnswersOnlyForTheSameNodeSet(t *testing.T) {
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	l := &planner{providerID: format}
	logger := klog.Logger{}
	node := func(i int) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n-%d", i), Labels: map[string]string{"pool": fmt.Sprint("p", i%2)}},
			Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("ccmkit://i-%d", i)},
		}
	}
	a, b, c := node(1), node(2), node(3)

	assert.Equal(t, []string{"i-1", "i-2", "i-3"}, l.targets(logger, []*corev1.Node{c, a, b}, nil))
	_, hit := l.memo.lookup([]*corev1.Node{b, c, a}, "")
	assert.True(t, hit, "the same Node objects in another order")

	got := l.targets(logger, []*corev1.Node{a, b, c}, nil)
	assert.Equal(t, len(got), cap(got), "the memo's targets are clipped: an append copies them")

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
			l.memo.store([]*corev1.Node{a, b, c}, "", []string{"i-1", "i-2", "i-3"})
			assert.Equal(t, tc.want, l.targets(logger, tc.nodes, nil))
		})
	}

	t.Run("a provider ID changed in place", func(t *testing.T) {
		l.memo.store([]*corev1.Node{a, b, c}, "", []string{"i-1", "i-2", "i-3"})
		changed := *c
		changed.Spec.ProviderID = "ccmkit://i-9"
		*c = changed
		assert.Equal(t, []string{"i-1", "i-2", "i-9"}, l.targets(logger, []*corev1.Node{a, b, c}, nil))
	})

	t.Run("a set holding a Node twice is not stored", func(t *testing.T) {
		l.memo = targetMemo{}
		assert.Equal(t, []string{"i-1"}, l.targets(logger, []*corev1.Node{a, a}, nil))
		_, hit := l.memo.lookup([]*corev1.Node{a, a}, "")
		assert.False(t, hit)
		assert.True(t, slices.Equal([]string{"i-1", "i-2"}, l.targets(logger, []*corev1.Node{a, b}, nil)))
	})

	t.Run("selectors are remembered side by side for one node set", func(t *testing.T) {
		l.memo = targetMemo{}
		p1, err := labels.Parse("pool=p1")
		require.NoError(t, err)
		p0, err := labels.Parse("pool in (p0)")
		require.NoError(t, err)
		nodes := []*corev1.Node{a, b, node(4), node(5)}
		assert.Equal(t, []string{"i-1", "i-5"}, l.targets(logger, nodes, p1))
		assert.Equal(t, []string{"i-2", "i-4"}, l.targets(logger, nodes, p0))
		assert.Equal(t, []string{"i-1", "i-2", "i-4", "i-5"}, l.targets(logger, nodes, nil))
		spaced, err := labels.Parse(" pool in ( p0 ) ")
		require.NoError(t, err)
		assert.Equal(t, p0.String(), spaced.String(), "one selector written two ways has one key")
		reversed := slices.Clone(nodes)
		slices.Reverse(reversed)
		for _, key := range []string{"pool=p1", p0.String(), ""} {
			ids, hit := l.memo.lookup(reversed, key)
			assert.True(t, hit, "selector %q", key)
			assert.NotEmpty(t, ids)
		}
		_, hit := l.memo.lookup(nodes, "pool=p2")
		assert.False(t, hit, "a selector never computed")

		relabelled := node(5)
		relabelled.Labels["pool"] = "p0"
		assert.Equal(t, []string{"i-2", "i-4", "i-5"}, l.targets(logger, []*corev1.Node{a, b, node(4), relabelled}, p0),
			"a Node with new labels is a new object: the node set differs")
		_, hit = l.memo.lookup(nodes, "pool=p1")
		assert.False(t, hit, "a new node set replaces the memo")
	})

	t.Run("a selector that selects nothing is an empty target list", func(t *testing.T) {
		none, err := labels.Parse("pool=p9")
		require.NoError(t, err)
		assert.Equal(t, []string{}, l.targets(logger, []*corev1.Node{a, b}, none))
	})
}
