package provider

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// TestOptionsClockDrivesSnapshotAge shows that the instance snapshot ages by Options.Clock,
// not by the wall clock: lookups are served from it until the virtual clock passes
// cache.maxAge, and the next lookup lists again.
func TestOptionsClockDrivesSnapshotAge(t *testing.T) {
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1", Zone: "z"}}})
	require.NoError(t, err)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := Config{Cluster: ClusterConfig{ID: "c"}, Cache: CacheConfig{MaxAge: time.Minute}}
	p, err := New(cfg, cloud, Options{Metrics: metrics.NewKubeRegistry(), Clock: clock})
	require.NoError(t, err)
	iv2, ok := p.InstancesV2()
	require.True(t, ok)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-1"}}
	lists := func() int64 { return cloud.Calls()[cloudapi.OpListInstances] }

	for range 3 {
		_, err := iv2.InstanceMetadata(t.Context(), node)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, lists(), "one list serves every lookup while the snapshot is fresh")

	clock.Step(59 * time.Second)
	_, err = iv2.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.EqualValues(t, 1, lists(), "59 virtual seconds: still fresh")

	clock.Step(2 * time.Second)
	_, err = iv2.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.EqualValues(t, 2, lists(), "61 virtual seconds: older than cache.maxAge, listed again")
}
