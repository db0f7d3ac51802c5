package targetgroups

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// settled returns an env whose first collection (the one a new Store begins with) ran on
// an empty cloud, and the group of AllNodes it made for the targets, released.
func settled(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.Collect(t.Context())
	id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	return e, id
}

// Drop deletes, without a list, a group of the cluster's that nothing may want: no other
// load balancer names it and no Acquire of it is unreleased. A later call makes it again.
func TestDrop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		except   string
		namedBy  []string
		held     bool
		deleted  bool
		deleteOp bool
	}{
		{name: "unused", deleted: true, deleteOp: true},
		{name: "named only by the load balancer that let it go", except: "lb-1", namedBy: []string{"lb-1"}, deleted: true, deleteOp: true},
		{name: "named by another load balancer", except: "lb-1", namedBy: []string{"lb-1", "lb-2"}},
		{name: "named, no load balancer excepted", namedBy: []string{"lb-1"}},
		{name: "acquired, not released", held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, id := settled(t)
			e.lbs.name(id, tc.namedBy...)
			if tc.held {
				_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
				require.NoError(t, err)
				defer release()
			}
			e.drop(t, tc.except, "", id)
			_, there := e.cloud.get(id)
			assert.Equal(t, !tc.deleted, there)
			if tc.deleteOp {
				assert.Equal(t, []string{"delete " + id}, e.cloud.took())
			} else {
				assert.Empty(t, e.cloud.took())
			}
			if tc.deleted {
				again, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
				require.NoError(t, err)
				release()
				assert.NotEqual(t, id, again)
				assert.Equal(t, []string{"list all-nodes", "create"}, e.cloud.took(), "the store knows it gone")
			}
		})
	}
}

// A group released once its load balancer is written may be dropped; release may be
// called more than once and counts once.
func TestDropAfterRelease(t *testing.T) {
	e, id := settled(t)
	_, first, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	_, second, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	first()
	first()
	e.drop(t, "", id)
	assert.Empty(t, e.cloud.took(), "the second Acquire is not released")
	second()
	e.drop(t, "", id)
	assert.Equal(t, []string{"delete " + id}, e.cloud.took())
}

// Drop deletes only a group known to be the cluster's: one it never learnt (another
// cluster's, or forgotten by a restart) is left to the collection, which deletes only the
// cluster's own groups of Nodes.
func TestDropOnlyTheClustersOwn(t *testing.T) {
	e := newEnv(t)
	e.Collect(t.Context()) // the first collection, on an empty cloud
	foreign := e.cloud.put("f", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: AllNodes})
	handmade := e.cloud.put("h", map[string]string{cloudapi.TagCluster: cluster})
	forgotten := e.cloud.put("o", ours(AllNodes))
	e.cloud.took()
	e.drop(t, "", foreign, handmade, forgotten)
	assert.Empty(t, e.cloud.took(), "unknown groups: no call")
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete " + forgotten}, e.cloud.took())
	assert.Equal(t, []string{foreign, handmade}, e.cloud.ids())
}

// A delete that fails, or that the cloud refuses as in use, keeps the group and makes a
// collection due; not found is gone.
func TestDropDeleteErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		inUse bool
		due   bool
	}{
		{name: "not found", err: cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteTargetGroup, "", nil)},
		{name: "in use", inUse: true, due: true},
		{name: "fails", err: errors.New("boom"), due: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, id := settled(t)
			e.cloud.fail[cloudapi.OpDeleteTargetGroup] = tc.err
			e.cloud.inUse[id] = tc.inUse
			e.drop(t, "", id)
			assert.Equal(t, []string{"delete " + id}, e.cloud.took())
			delete(e.cloud.fail, cloudapi.OpDeleteTargetGroup)
			delete(e.cloud.inUse, id)
			e.step(KeepNew * maxAge) // the store made it: no longer new
			e.Collect(t.Context())
			calls := e.cloud.took()
			if tc.due {
				assert.Equal(t, []string{"list cluster", "delete " + id}, calls)
			} else {
				assert.Empty(t, calls, "no collection due")
			}
		})
	}
}

// A collection runs only when due (a new Store, Due, or an event that may leave a group
// unused), refreshes what the load balancers name first, lists the cluster's groups once,
// and deletes those of its groups of Nodes that nothing names.
func TestCollect(t *testing.T) {
	e := newEnv(t)
	used := e.cloud.put("u", ours(AllNodes))
	unused := e.cloud.put("n", ours("selector-x"))
	handmade := e.cloud.put("h", map[string]string{cloudapi.TagCluster: cluster})
	foreign := e.cloud.put("f", map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagTargetGroup: AllNodes})
	e.lbs.name(used, "lb-1")
	e.lbs.name(handmade, "")
	e.Collect(t.Context())
	assert.Equal(t, 1, e.lbs.refreshes)
	assert.Equal(t, []string{"list cluster", "delete " + unused}, e.cloud.took())
	assert.Equal(t, []string{used, handmade, foreign}, e.cloud.ids())

	e.lbs.name(used)
	e.Collect(t.Context())
	assert.Empty(t, e.cloud.took(), "not due")
	assert.Equal(t, 1, e.lbs.refreshes)
	e.Due()
	e.Collect(t.Context())
	assert.Equal(t, 2, e.lbs.refreshes)
	assert.Equal(t, []string{"list cluster", "delete " + used}, e.cloud.took())
}

// A collection whose refresh or list fails deletes nothing and comes back after MaxAge,
// the wait doubling with each such collection in a row, up to KeepNew times MaxAge; a
// clean one resets it.
func TestCollectBackoff(t *testing.T) {
	e := newEnv(t)
	unused := e.cloud.put("n", ours(AllNodes))
	e.lbs.refreshErr = errors.New("boom")
	e.Collect(t.Context())
	assert.Empty(t, e.cloud.took(), "no list without a refresh")
	e.lbs.refreshErr = nil
	e.cloud.fail[cloudapi.OpListTargetGroups] = errors.New("boom")

	waits := []time.Duration{maxAge, 2 * maxAge, 4 * maxAge, 8 * maxAge, 16 * maxAge, 32 * maxAge, 32 * maxAge}
	for i, wait := range waits {
		e.step(wait - time.Nanosecond)
		e.Collect(t.Context())
		assert.Empty(t, e.cloud.took(), "collection %d: before its wait", i)
		e.step(time.Nanosecond)
		e.Collect(t.Context())
		assert.Equal(t, []string{"list cluster"}, e.cloud.took(), "collection %d: after %s", i, wait)
	}
	delete(e.cloud.fail, cloudapi.OpListTargetGroups)
	e.step(KeepNew * maxAge)
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete " + unused}, e.cloud.took())
	e.Due()
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster"}, e.cloud.took(), "after a clean collection a due one runs at once")
}

// A collection that cannot delete an unused group comes back for it after MaxAge.
func TestCollectFailedDeleteComesBack(t *testing.T) {
	e := newEnv(t)
	unused := e.cloud.put("n", ours(AllNodes))
	e.cloud.inUse[unused] = true
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete " + unused}, e.cloud.took())
	delete(e.cloud.inUse, unused)
	e.Collect(t.Context())
	assert.Empty(t, e.cloud.took(), "before MaxAge")
	e.step(maxAge)
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete " + unused}, e.cloud.took())
}

// A group the store made is kept by the collection for KeepNew times MaxAge (its load
// balancer's create may keep failing), and the collection comes back for it then.
func TestCollectKeepsNewGroups(t *testing.T) {
	e := newEnv(t)
	e.Collect(t.Context())
	id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release() // the load balancer's create failed
	e.cloud.took()
	e.Due()
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster"}, e.cloud.took(), "made a moment ago: kept")
	e.step(KeepNew*maxAge - time.Nanosecond)
	e.Collect(t.Context())
	assert.Empty(t, e.cloud.took(), "the collection comes back when the group stops being new")
	e.step(time.Nanosecond)
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete " + id}, e.cloud.took())
}

// A group the store made lately that a load balancer names is in use, not new: the
// collection does not come back for it.
func TestCollectNamedNewGroup(t *testing.T) {
	e := newEnv(t)
	e.Collect(t.Context())
	id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.lbs.name(id, "lb-1")
	e.cloud.took()
	e.Due()
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster"}, e.cloud.took())
	e.step(KeepNew * maxAge)
	e.Collect(t.Context())
	assert.Empty(t, e.cloud.took(), "a clean collection: none due")
}

// One collection runs at a time.
func TestCollectOneAtATime(t *testing.T) {
	e := newEnv(t)
	e.cloud.put("n", ours(AllNodes))
	e.cloud.onList = func() {
		e.Due()
		e.Collect(t.Context()) // while the first one runs
	}
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster", "delete tg-01"}, e.cloud.took())
	e.cloud.onList = nil
	e.Collect(t.Context())
	assert.Equal(t, []string{"list cluster"}, e.cloud.took(), "the Due during the first one holds")
}
