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

	assert.Equal(t, []string{"i-1", "i-2", "i-3"}, l.targets(logger, []*corev1.Node{c, a, b}, 0, nil))
	_, hit := l.memo.lookup([]*corev1.Node{b, c, a}, 0, "")
	assert.True(t, hit, "the same Node objects in another order")

	got := l.targets(logger, []*corev1.Node{a, b, c}, 0, nil)
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
			l.memo.store([]*corev1.Node{a, b, c}, 0, "", []string{"i-1", "i-2", "i-3"})
			assert.Equal(t, tc.want, l.targets(logger, tc.nodes, 0, nil))
		})
	}

	t.Run("a provider ID changed in place", func(t *testing.T) {
		l.memo.store([]*corev1.Node{a, b, c}, 0, "", []string{"i-1", "i-2", "i-3"})
		changed := *c
		changed.Spec.ProviderID = "ccmkit://i-9"
		*c = changed
		assert.Equal(t, []string{"i-1", "i-2", "i-9"}, l.targets(logger, []*corev1.Node{a, b, c}, 0, nil))
	})

	t.Run("a set holding a Node twice is not stored", func(t *testing.T) {
		l.memo = targetMemo{}
		assert.Equal(t, []string{"i-1"}, l.targets(logger, []*corev1.Node{a, a}, 0, nil))
		_, hit := l.memo.lookup([]*corev1.Node{a, a}, 0, "")
		assert.False(t, hit)
		assert.True(t, slices.Equal([]string{"i-1", "i-2"}, l.targets(logger, []*corev1.Node{a, b}, 0, nil)))
	})

	t.Run("selectors are remembered side by side for one node set", func(t *testing.T) {
		l.memo = targetMemo{}
		p1, err := labels.Parse("pool=p1")
		require.NoError(t, err)
		p0, err := labels.Parse("pool in (p0)")
		require.NoError(t, err)
		nodes := []*corev1.Node{a, b, node(4), node(5)}
		assert.Equal(t, []string{"i-1", "i-5"}, l.targets(logger, nodes, 0, p1))
		assert.Equal(t, []string{"i-2", "i-4"}, l.targets(logger, nodes, 0, p0))
		assert.Equal(t, []string{"i-1", "i-2", "i-4", "i-5"}, l.targets(logger, nodes, 0, nil))
		spaced, err := labels.Parse(" pool in ( p0 ) ")
		require.NoError(t, err)
		assert.Equal(t, p0.String(), spaced.String(), "one selector written two ways has one key")
		reversed := slices.Clone(nodes)
		slices.Reverse(reversed)
		for _, key := range []string{"pool=p1", p0.String(), ""} {
			ids, hit := l.memo.lookup(reversed, 0, key)
			assert.True(t, hit, "selector %q", key)
			assert.NotEmpty(t, ids)
		}
		_, hit := l.memo.lookup(nodes, 0, "pool=p2")
		assert.False(t, hit, "a selector never computed")

		relabelled := node(5)
		relabelled.Labels["pool"] = "p0"
		assert.Equal(t, []string{"i-2", "i-4", "i-5"}, l.targets(logger, []*corev1.Node{a, b, node(4), relabelled}, 0, p0),
			"a Node with new labels is a new object: the node set differs")
		_, hit = l.memo.lookup(nodes, 0, "pool=p1")
		assert.False(t, hit, "a new node set replaces the memo")
	})

	t.Run("a node set named by the node set clock is checked once", func(t *testing.T) {
		l.memo = targetMemo{}
		assert.Equal(t, []string{"i-1", "i-2"}, l.targets(logger, []*corev1.Node{a, b}, 7, nil))
		ids, hit := l.memo.lookup([]*corev1.Node{a}, 7, "")
		assert.True(t, hit, "the clock's name stands for the Nodes: they are not checked")
		assert.Equal(t, []string{"i-1", "i-2"}, ids)
		_, hit = l.memo.lookup([]*corev1.Node{a}, 8, "")
		assert.False(t, hit, "another name: the Nodes are checked")
		_, hit = l.memo.lookup([]*corev1.Node{a}, 0, "")
		assert.False(t, hit, "no name: the Nodes are checked")
		_, hit = l.memo.lookup([]*corev1.Node{b, a}, 9, "")
		assert.True(t, hit, "the same Nodes under a new name")
		_, hit = l.memo.lookup([]*corev1.Node{a}, 9, "")
		assert.True(t, hit, "the memo's set bears the name it was checked for")
		_, hit = l.memo.lookup([]*corev1.Node{a}, 7, "")
		assert.False(t, hit, "and no longer the one before")
		assert.Equal(t, []string{"i-1"}, l.targets(logger, []*corev1.Node{a}, 10, nil))
		_, hit = l.memo.lookup([]*corev1.Node{a, b}, 9, "")
		assert.False(t, hit, "another node set replaced the named one")
		assert.Equal(t, []string{"i-2"}, l.targets(logger, []*corev1.Node{b}, 0, nil))
		_, hit = l.memo.lookup([]*corev1.Node{a}, 10, "")
		assert.False(t, hit, "an unnamed node set (an ensure's) replaced the named one, and its name")
	})

	t.Run("a selector that selects nothing is an empty target list", func(t *testing.T) {
		none, err := labels.Parse("pool=p9")
		require.NoError(t, err)
		assert.Equal(t, []string{}, l.targets(logger, []*corev1.Node{a, b}, 0, none))
	})
}
