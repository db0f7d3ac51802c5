package targetgroups

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// A key's group is created once, after a list found none, holding the targets and
// carrying the cluster's tags; within MaxAge it is handed out again without a call; each
// key has its own group.
func TestAcquireCreatesOnceAndReusesPerKey(t *testing.T) {
	e := newEnv(t)
	id, release, err := e.acquire(t, AllNodes, []string{"i-2", "i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes", "create"}, e.cloud.took())
	g, ok := e.cloud.get(id)
	require.True(t, ok)
	assert.ElementsMatch(t, []string{"i-1", "i-2"}, g.Spec.Targets)
	assert.Equal(t, ours(AllNodes), g.Spec.Tags)
	assert.Regexp(t, `^k8s-c1-nodes-[0-9a-f]{16}$`, g.Spec.Name)

	again, release, err := e.acquire(t, AllNodes, []string{"i-1", "i-2"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, id, again)
	assert.Empty(t, e.cloud.took(), "a group that holds the targets, learnt within MaxAge, costs no call")

	other, release, err := e.acquire(t, "selector-x", []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.NotEqual(t, id, other)
	assert.Equal(t, []string{"list selector-x", "create"}, e.cloud.took())
	og, _ := e.cloud.get(other)
	assert.NotEqual(t, g.Spec.Name, og.Spec.Name, "each key has its own name")
}

// A group the cloud already has (a predecessor's) is found by its tags and written, not
// created again; its name and foreign tags are kept.
func TestAcquireAdoptsListedGroup(t *testing.T) {
	e := newEnv(t)
	tags := ours(AllNodes)
	tags["team"] = "a"
	id := e.cloud.put("old-name", tags, "i-1")
	got, release, err := e.acquire(t, AllNodes, []string{"i-1", "i-2"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, id, got)
	assert.Equal(t, []string{"list all-nodes", "update " + id}, e.cloud.took())
	g, _ := e.cloud.get(id)
	assert.Equal(t, "old-name", g.Spec.Name)
	assert.Equal(t, "a", g.Spec.Tags["team"])
	assert.ElementsMatch(t, []string{"i-1", "i-2"}, g.Spec.Targets)
}

// Of two groups of one key, the first by ID is used, and the other is left to the
// collection, which deletes it.
func TestAcquireTwoGroupsOfOneKey(t *testing.T) {
	e := newEnv(t)
	e.cloud.put("a", ours(AllNodes), "i-1")
	e.cloud.put("b", ours(AllNodes), "i-1")
	e.Collect(t.Context()) // the collection a new Store begins with: both unused
	assert.Empty(t, e.cloud.ids())
	first := e.cloud.put("a", ours(AllNodes), "i-1")
	second := e.cloud.put("b", ours(AllNodes), "i-1")
	e.cloud.took()

	got, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, first, got)
	e.lbs.name(first, "lb-1")
	e.Collect(t.Context())
	assert.Equal(t, []string{first}, e.cloud.ids(), "the second is deleted by the collection the list made due")
	assert.Contains(t, e.cloud.took(), "delete "+second)
}

// A group's members are written only from a list begun after the caller's event (since):
// what the store learnt before since is listed again, what it learnt after is written
// without a list; what the store wrote last is no read.
func TestAcquireFreshness(t *testing.T) {
	e := newEnv(t)
	id := e.cloud.put("a", ours(AllNodes), "i-1")
	before := e.lbs.Tick()
	_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes"}, e.cloud.took(), "holds the targets already: no write")

	// A node set that arrived before that list: the list is fresh for it.
	_, release, err = e.acquire(t, AllNodes, []string{"i-1", "i-2"}, before)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"update " + id}, e.cloud.took())

	// What the store wrote is the cloud's answer to a write, no read: a new node set lists.
	since := e.lbs.Tick()
	_, release, err = e.acquire(t, AllNodes, []string{"i-1", "i-2", "i-3"}, since)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes", "update " + id}, e.cloud.took())

	// A list made, then a node set arrives after it: listed again before the write.
	x := e.cloud.put("x", ours("selector-x"), "i-1")
	_, release, err = e.acquire(t, "selector-x", []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	since = e.lbs.Tick()
	_, release, err = e.acquire(t, "selector-x", []string{"i-1", "i-2"}, since)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list selector-x", "update " + x}, e.cloud.took())
}

// A list's fresh read begins at the list: a node set that arrives while it runs makes it
// stale for that node set.
func TestAcquireListBeganBeforeEvent(t *testing.T) {
	e := newEnv(t)
	id := e.cloud.put("a", ours(AllNodes), "i-1")
	var during uint64
	e.cloud.onList = func() {
		if during == 0 {
			during = e.lbs.Tick()
		}
	}
	_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	_, release, err = e.acquire(t, AllNodes, []string{"i-1", "i-2"}, during)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes", "update " + id}, e.cloud.took())
}

// What the store learnt is trusted for MaxAge, not longer.
func TestAcquireMaxAge(t *testing.T) {
	e := newEnv(t)
	_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	e.step(maxAge)
	_, release, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Empty(t, e.cloud.took(), "MaxAge old: still trusted")
	e.step(time.Nanosecond)
	_, release, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes"}, e.cloud.took())

	// A list begun after the caller's event, but more than MaxAge ago: listed again.
	id := e.cloud.put("x", ours("selector-x"), "i-1")
	before := e.lbs.Tick()
	_, release, err = e.acquire(t, "selector-x", []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	e.step(maxAge + time.Nanosecond)
	_, release, err = e.acquire(t, "selector-x", []string{"i-1", "i-2"}, before)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list selector-x", "update " + id}, e.cloud.took())
}

// The ID is handed out only once the group holds the targets: a load balancer never
// names a group whose members are not written. A failed write hands out none, and the
// group is listed again at the next call.
func TestAcquireWritesMembersBeforeNaming(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing bool
		fail     cloudapi.Operation
	}{
		{name: "create fails", fail: cloudapi.OpCreateTargetGroup},
		{name: "update fails", existing: true, fail: cloudapi.OpUpdateTargetGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.existing {
				e.cloud.put("a", ours(AllNodes))
			}
			e.cloud.fail[tc.fail] = cloudapi.NewError(cloudapi.ErrInvalidRequest, tc.fail, "", nil)
			id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
			require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
			assert.Empty(t, id)
			assert.Nil(t, release)

			delete(e.cloud.fail, tc.fail)
			e.cloud.took()
			id, release, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
			require.NoError(t, err)
			release()
			assert.Equal(t, "list all-nodes", e.cloud.took()[0], "after a failed write only the cloud knows")
			g, _ := e.cloud.get(id)
			assert.Equal(t, []string{"i-1"}, g.Spec.Targets)
		})
	}
}

// A cloud error is never read as "no group": a failed list creates nothing, and its
// error is returned wrapped; the next list waits for the backoff.
func TestAcquireListErrorIsNotNotFound(t *testing.T) {
	e := newEnv(t)
	e.cloud.put("a", ours(AllNodes), "i-1")
	e.cloud.fail[cloudapi.OpListTargetGroups] = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListTargetGroups, "", nil)
	_, _, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Contains(t, err.Error(), "looking up target group "+cloudapi.TagTargetGroup+"=all-nodes")
	assert.Equal(t, []string{"list all-nodes"}, e.cloud.took(), "no create after a failed list")

	_, _, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Empty(t, e.cloud.took(), "held back by the list's backoff")

	delete(e.cloud.fail, cloudapi.OpListTargetGroups)
	e.step(time.Second)
	id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, "tg-01", id)
	assert.Equal(t, []string{"list all-nodes"}, e.cloud.took())
}

// A create whose answer was lost, or that conflicts, is listed again and the group found
// adopted; a conflict with no group of the key is another's name, and says so.
func TestAcquireCreateLostOrConflicting(t *testing.T) {
	t.Run("lost answer", func(t *testing.T) {
		e := newEnv(t)
		e.cloud.lost = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpCreateTargetGroup, "", nil)
		id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.NoError(t, err)
		release()
		assert.Equal(t, []string{"list all-nodes", "create", "list all-nodes"}, e.cloud.took())
		assert.Equal(t, []string{id}, e.cloud.ids())
	})
	t.Run("deadline", func(t *testing.T) {
		e := newEnv(t)
		e.cloud.lost = context.DeadlineExceeded
		id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.NoError(t, err)
		release()
		assert.Equal(t, []string{id}, e.cloud.ids())
	})
	t.Run("another process of the cluster made it", func(t *testing.T) {
		e := newEnv(t)
		var made string
		e.cloud.onCreate = func() { made = e.cloud.put(e.name(AllNodes), ours(AllNodes), "i-9") }
		id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.NoError(t, err)
		release()
		assert.Equal(t, made, id)
		assert.Equal(t, []string{"list all-nodes", "create", "list all-nodes", "update " + made}, e.cloud.took())
		g, _ := e.cloud.get(made)
		assert.Equal(t, []string{"i-1"}, g.Spec.Targets, "adopted, then written")
	})
	t.Run("another owns the name", func(t *testing.T) {
		e := newEnv(t)
		e.cloud.put(e.name(AllNodes), map[string]string{"other": "x"})
		_, _, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.ErrorIs(t, err, cloudapi.ErrConflict)
		assert.Contains(t, err.Error(), "another owns the name")
		assert.Equal(t, []string{"list all-nodes", "create", "list all-nodes"}, e.cloud.took())
	})
	t.Run("lost answer, look-up fails", func(t *testing.T) {
		e := newEnv(t)
		e.cloud.lost = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpCreateTargetGroup, "", nil)
		boom := errors.New("boom")
		e.cloud.onCreate = func() { e.cloud.fail[cloudapi.OpListTargetGroups] = boom }
		_, _, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.ErrorIs(t, err, cloudapi.ErrTransient, "the create's error")
		require.ErrorIs(t, err, boom, "the look-up's error")
		assert.Len(t, e.cloud.ids(), 1)
		delete(e.cloud.fail, cloudapi.OpListTargetGroups)
		e.step(time.Minute)
		e.cloud.took()
		e.cloud.lost = nil
		_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
		require.NoError(t, err)
		release()
		assert.Equal(t, []string{"list all-nodes"}, e.cloud.took(), "found, not created again")
	})
}

// A group gone behind the store's back (the update answers not found) fails the call
// with the error, and the next call lists and creates it again.
func TestAcquireGroupGone(t *testing.T) {
	e := newEnv(t)
	id := e.cloud.put("a", ours(AllNodes), "i-1")
	before := e.lbs.Tick()
	_, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	require.NoError(t, e.cloud.DeleteTargetGroup(t.Context(), id))
	e.cloud.took()
	_, _, err = e.acquire(t, AllNodes, []string{"i-1", "i-2"}, before)
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), "updating target group "+id)
	again, release, err := e.acquire(t, AllNodes, []string{"i-1", "i-2"}, before)
	require.NoError(t, err)
	release()
	assert.NotEqual(t, id, again)
	assert.Equal(t, []string{"update " + id, "list all-nodes", "create"}, e.cloud.took())
}

// Forget makes the next call about the group list again, as after a failed call.
func TestForget(t *testing.T) {
	e := newEnv(t)
	id, release, err := e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	e.cloud.took()
	e.Forget("")
	e.Forget("tg-other")
	_, release, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Empty(t, e.cloud.took(), "another group forgotten: still known")
	e.Forget(id)
	_, release, err = e.acquire(t, AllNodes, []string{"i-1"}, 0)
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"list all-nodes"}, e.cloud.took())
}

// A nil Store is a cloud without target groups.
func TestNilStore(t *testing.T) {
	var s *Store
	assert.NotPanics(t, func() {
		s.Forget("tg-1")
		s.Due()
		s.Drop(t.Context(), klogDiscard(), "", "tg-1")
		s.Collect(t.Context())
	})
}
