package targetgroups

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestDeletable(t *testing.T) {
	const maxAge = time.Minute
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		named bool
		since time.Time
		want  bool
	}{
		{name: "not known to be new", want: true},
		{name: "named and let go, made a moment ago", named: true, since: now, want: true},
		{name: "made a moment ago", since: now, want: false},
		{name: "made just under 32 MaxAge ago", since: now.Add(-KeepNew*maxAge + time.Nanosecond), want: false},
		{name: "made 32 MaxAge ago", since: now.Add(-KeepNew * maxAge), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Deletable(tc.named, tc.since, now, maxAge))
		})
	}
}

func TestOwned(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clusterID string
		tags      map[string]string
		want      bool
	}{
		{name: "the cluster's group of Nodes", clusterID: cluster, tags: ours(AllNodes), want: true},
		{name: "with foreign tags too", clusterID: cluster, tags: map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: "selector-x", "team": "a"}, want: true},
		{name: "another cluster's", clusterID: cluster, tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: AllNodes}},
		{name: "the cluster's, not a group of Nodes", clusterID: cluster, tags: map[string]string{cloudapi.TagCluster: cluster}},
		{name: "empty target group tag", clusterID: cluster, tags: map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagTargetGroup: ""}},
		{name: "no tags", clusterID: cluster},
		{name: "no cluster ID", tags: map[string]string{cloudapi.TagCluster: "", cloudapi.TagTargetGroup: AllNodes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Owned(tc.clusterID, tc.tags))
		})
	}
}

// A write the rule refuses makes no call, and its error says why.
func TestMayWrite(t *testing.T) {
	e := newEnv(t)
	assert.NoError(t, e.mayWrite("tg-1", ours(AllNodes)))
	err := e.mayWrite("tg-1", map[string]string{cloudapi.TagCluster: cluster})
	assert.ErrorIs(t, err, errNotOwned)
	assert.Contains(t, err.Error(), "target group tg-1 does not carry tags")
	_, err = e.update(t.Context(), &cloudapi.TargetGroup{ID: "tg-1", Spec: cloudapi.TargetGroupSpec{Tags: map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: AllNodes}}}, cloudapi.TargetGroupUpdate{})
	assert.ErrorIs(t, err, errNotOwned)
	assert.Empty(t, e.cloud.took())
}

func TestKey(t *testing.T) {
	assert.Equal(t, AllNodes, Key(nil))
	assert.Equal(t, AllNodes, Key(labels.Everything()))
	a := Key(labels.SelectorFromSet(labels.Set{"pool": "a"}))
	assert.Regexp(t, `^selector-[0-9a-f]{16}$`, a)
	assert.Equal(t, a, Key(labels.SelectorFromSet(labels.Set{"pool": "a"})), "stable")
	assert.NotEqual(t, a, Key(labels.SelectorFromSet(labels.Set{"pool": "b"})))
}
