package provider

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// virtualClock is a clock a test moves by hand.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestOptionsNowDrivesSnapshotAge shows that the instance snapshot ages by Options.Now,
// not by the wall clock: lookups are served from it until the virtual clock passes
// cache.maxAge, and the next lookup lists again.
func TestOptionsNowDrivesSnapshotAge(t *testing.T) {
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1", Zone: "z"}}})
	require.NoError(t, err)
	clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := Config{Cluster: ClusterConfig{ID: "c"}, Cache: CacheConfig{MaxAge: time.Minute}}
	p, err := New(cfg, cloud, Options{Metrics: metrics.NewKubeRegistry(), Now: clock.Now})
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

	clock.Advance(59 * time.Second)
	_, err = iv2.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.EqualValues(t, 1, lists(), "59 virtual seconds: still fresh")

	clock.Advance(2 * time.Second)
	_, err = iv2.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.EqualValues(t, 2, lists(), "61 virtual seconds: older than cache.maxAge, listed again")
}
