package instancecache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// testBrake is the brake of the tests: the defaults.
var testBrake = Brake{Window: DefaultBrakeWindow, Share: DefaultBrakeShare, Minimum: DefaultBrakeMinimum}

// newBraked returns a Cache with testBrake over a cloud of n instances, listed once.
func newBraked(t *testing.T, n int) (*cloud, *Cache, *clocktesting.FakeClock, *checks) {
	t.Helper()
	c := newCloud(n)
	seen := &checks{got: map[string]int{}}
	clk := clocktesting.NewFakeClock(t0)
	cache := New(c, Options{MaxAge: time.Minute, PageSize: 500, Clock: clk, OnCheck: seen.observe, Brake: testBrake})
	if n > 0 {
		_, err := cache.ByID(context.Background(), "i-00000")
		require.NoError(t, err)
	}
	return c, cache, clk, seen
}

// goneAnswers looks up each ID for its Node after the snapshot aged and returns how many
// read as gone and how many the brake refused; any other answer fails the test.
func goneAnswers(t *testing.T, cache *Cache, ids []string) (gone, refused int) {
	t.Helper()
	for _, id := range ids {
		_, err := cache.ByIDForNode(context.Background(), id)
		switch {
		case cloudapi.IsNotFound(err):
			gone++
		case errors.Is(err, ErrBrake):
			require.NotErrorIs(t, err, cloudapi.ErrNotFound, "a refused answer never reads as gone")
			refused++
		default:
			t.Fatalf("lookup of %s: want gone or refused, got %v", id, err)
		}
	}
	return gone, refused
}

func ids(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("i-%05d", i))
	}
	return out
}

// The brake's rule, case by case: how many answers "gone" pass in the first window and
// in the next, after the cloud lost some of its instances.
func TestBrakeBoundsGoneAnswersPerWindow(t *testing.T) {
	for _, tc := range []struct {
		name              string
		instances, remove int
		first, second     int // answers gone passed in the first window and in the next
	}{
		{name: "one of three (a small cluster)", instances: 3, remove: 1, first: 1},
		{name: "two of three (the minimum)", instances: 3, remove: 2, first: 2},
		{name: "60 % (half, then half of what is left)", instances: 10, remove: 6, first: 5, second: 1},
		{name: "two thirds of 30 within two windows", instances: 30, remove: 20, first: 15, second: 5},
		{name: "90 % of 100 (half, then the minimum or half of the rest)", instances: 100, remove: 90, first: 50, second: 5},
		{name: "all of them (engaged: nothing)", instances: 10, remove: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cache, clk, seen := newBraked(t, tc.instances)
			lost := ids(tc.instances-tc.remove, tc.instances)
			for _, id := range lost {
				c.remove(id)
			}
			clk.Step(2 * time.Minute) // the next lookup lists

			gone, refused := goneAnswers(t, cache, lost)
			assert.Equal(t, tc.first, gone, "gone in the first window")
			assert.Equal(t, tc.remove-tc.first, refused)
			gone, refused = goneAnswers(t, cache, lost[:tc.first])
			assert.Equal(t, tc.first, gone, "an instance let go stays gone")
			assert.Zero(t, refused)
			assert.Equal(t, tc.remove-tc.first, seen.counts()["brake/refused"], "each refusal is counted")

			clk.Step(testBrake.Window)
			gone, refused = goneAnswers(t, cache, lost[tc.first:])
			assert.Equal(t, tc.second, gone, "gone in the next window")
			assert.Equal(t, tc.remove-tc.first-tc.second, refused)
		})
	}
}

// A list that has none of the instances the list before had live (a project or
// credentials switch) engages the brake: no answer "gone" passes, by ID or by name,
// whatever the window, until a list has those instances again.
func TestBrakeEngagedByAForeignOrEmptyList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign int // instances of the other project
	}{
		{name: "empty list"},
		{name: "foreign list", foreign: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, cache, clk, seen := newBraked(t, 10)
			for _, id := range ids(0, 10) {
				c.remove(id)
			}
			for i := range tc.foreign {
				c.add(fmt.Sprintf("x-%d", i), fmt.Sprintf("other-%d", i), cloudapi.InstanceRunning)
			}
			clk.Step(2 * time.Minute)

			var reports int
			for round := range 3 {
				for _, id := range append(ids(0, 3), ids(0, 3)...) {
					_, err := cache.ByIDForNode(ctx, id)
					var braked *BrakeError
					require.ErrorAs(t, err, &braked, "round %d: %s", round, id)
					require.NotErrorIs(t, err, cloudapi.ErrNotFound)
					assert.True(t, braked.Engaged)
					if braked.Report {
						reports++
					}
				}
				clk.Step(testBrake.Window) // a window later still nothing
			}
			assert.Equal(t, 9, reports, "one report per instance and window, not one per lookup")
			_, err := cache.ByNameForNode(ctx, "node-00004")
			require.ErrorIs(t, err, ErrBrake, "by name too")
			assert.Equal(t, 19, seen.counts()["brake/refused"])

			// The project is back: released.
			for i := 3; i < 10; i++ {
				c.add(fmt.Sprintf("i-%05d", i), fmt.Sprintf("node-%05d", i), cloudapi.InstanceRunning)
			}
			clk.Step(2 * time.Minute)
			gone, refused := goneAnswers(t, cache, ids(0, 3))
			assert.Equal(t, 3, gone, "released: the three really gone read as gone")
			assert.Zero(t, refused)
		})
	}
}

// A node pool replaced between two lists (a surge upgrade of a small cluster in a quiet
// hour) engages the brake, as a project switch does; the new Nodes' instances, looked up
// by ID as the cloud node controller does, are live in the next list: released, and a
// later scale-down reads as gone again.
func TestBrakeReleasedByTheNewPoolsInstances(t *testing.T) {
	ctx := context.Background()
	c, cache, clk, _ := newBraked(t, 3)
	for i := range 3 {
		c.remove(fmt.Sprintf("i-%05d", i))
		c.add(fmt.Sprintf("n-%d", i), fmt.Sprintf("new-%d", i), cloudapi.InstanceRunning)
	}
	clk.Step(2 * time.Minute)
	_, err := cache.ByID(ctx, "i-00000")
	require.ErrorIs(t, err, ErrBrake, "a list with none of the instances before: engaged")
	for i := range 3 {
		_, err := cache.ByIDForNode(ctx, fmt.Sprintf("n-%d", i)) // the new Nodes' status updates
		require.NoError(t, err)
	}
	clk.Step(2 * time.Minute)
	gone, refused := goneAnswers(t, cache, ids(0, 2))
	assert.Equal(t, 2, gone, "released: the old pool's instances read as gone")
	assert.Zero(t, refused)

	c.remove("n-2")
	clk.Step(testBrake.Window + time.Minute)
	gone, _ = goneAnswers(t, cache, []string{"n-2"})
	assert.Equal(t, 1, gone, "a later scale-down")
}

// A first list without any live instance (a start against an empty project) engages the
// brake; a list with a live instance releases it.
func TestBrakeEngagedByAnEmptyFirstList(t *testing.T) {
	c, cache, clk, _ := newBraked(t, 0)
	_, err := cache.ByID(context.Background(), "i-00001")
	require.ErrorIs(t, err, ErrBrake)
	require.NotErrorIs(t, err, cloudapi.ErrNotFound)

	c.add("i-00002", "node-00002", cloudapi.InstanceRunning)
	clk.Step(2 * time.Minute)
	gone, _ := goneAnswers(t, cache, []string{"i-00001"})
	assert.Equal(t, 1, gone)
}

// reads are the Cache's reads of the brake's tests: the Node's (package instances') and
// those for another purpose (routes, zones).
var reads = []struct {
	name    string
	forNode bool
	byName  bool
	read    func(c *Cache, ctx context.Context, key string) (*cloudapi.Instance, error)
}{
	{name: "another purpose's read by ID (a route's ownership check)", read: (*Cache).ByID},
	{name: "another purpose's read by name (the Node of a route to create)", byName: true, read: (*Cache).ByName},
	{name: "a Node's read by name", forNode: true, byName: true, read: (*Cache).ByNameForNode},
	{name: "a Node's read by ID", forNode: true, read: (*Cache).ByIDForNode},
}

// switchProject makes the cloud of newBraked(t, 10) another project's: none of the
// cluster's instances, five others (x-0 to x-4, named other-0 to other-4) running.
func switchProject(c *cloud) {
	for _, id := range ids(0, 10) {
		c.remove(id)
	}
	for i := range 5 {
		c.add(fmt.Sprintf("x-%d", i), fmt.Sprintf("other-%d", i), cloudapi.InstanceRunning)
	}
}

// requireEngaged requires that a Node's read of the cluster's gone instance i-00000 is
// refused by the engaged brake.
func requireEngaged(t *testing.T, cache *Cache, msg string) {
	t.Helper()
	_, err := cache.ByIDForNode(context.Background(), "i-00000")
	var braked *BrakeError
	require.ErrorAs(t, err, &braked, msg)
	require.True(t, braked.Engaged, msg)
}

// After a project switch, the other project's instances are found running by every kind
// of read, and are live in every later list: only a Node's read by ID releases the brake
// (its instance is the cluster's); a read for another purpose (a route's target after the
// switch is the other project's instance) or by name (another project may have an
// instance of the Node's name) leaves it engaged.
func TestBrakeReleasedOnlyByANodesReadByID(t *testing.T) {
	for _, tc := range reads {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, cache, clk, _ := newBraked(t, 10)
			switchProject(c)
			clk.Step(2 * time.Minute)
			requireEngaged(t, cache, "the list of the other project engages the brake")

			key := "x-0"
			if tc.byName {
				key = "other-0"
			}
			inst, err := tc.read(cache, ctx, key)
			require.NoError(t, err)
			require.Equal(t, cloudapi.InstanceRunning, inst.State)

			clk.Step(2 * time.Minute) // a list that has x-0 live
			_, err = cache.ByIDForNode(ctx, "i-00000")
			if tc.forNode && !tc.byName {
				require.True(t, cloudapi.IsNotFound(err), "released: the Node's instance reads as gone, got %v", err)
				return
			}
			requireEngaged(t, cache, "still engaged")
		})
	}
}

// A read for another purpose, between a project switch and the next list, finds an
// instance of the other project that the snapshot lacks (GetInstance adds it): the next
// list still engages the brake, as the instance is not one of the cluster's. A Node's
// read by ID that finds one counts it, as before (a new Node's instance).
func TestBrakeCountsNoInstanceAnotherReadFetched(t *testing.T) {
	for _, tc := range reads {
		if tc.byName {
			continue // a read by name asks GetInstance only for an instance a list lost
		}
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, cache, clk, _ := newBraked(t, 10)
			switchProject(c)
			gets := c.gets.Load()
			inst, err := tc.read(cache, ctx, "x-0") // the snapshot is still the cluster's
			require.NoError(t, err)
			require.Equal(t, "x-0", inst.ID)
			require.Equal(t, gets+1, c.gets.Load(), "found by GetInstance, not in a list")

			clk.Step(2 * time.Minute) // the other project's list
			if tc.forNode {
				_, err = cache.ByIDForNode(ctx, "i-00000")
				require.True(t, cloudapi.IsNotFound(err), "not engaged: a Node's instance was live before, got %v", err)
				return
			}
			requireEngaged(t, cache, "engaged: no instance of the cluster's is live")
		})
	}
}

// A refusal is reported (BrakeError.Report, the event on the Node) to the Node's read
// first to ask, never to another read: a route's check that was refused first takes no
// event from the Node.
func TestBrakeReportGoesToTheNodesRead(t *testing.T) {
	for _, tc := range []struct {
		name        string
		key         string
		other, node func(c *Cache, ctx context.Context, key string) (*cloudapi.Instance, error)
	}{
		{name: "by ID", key: "i-00001", other: (*Cache).ByID, node: (*Cache).ByIDForNode},
		{name: "by name", key: "node-00001", other: (*Cache).ByName, node: (*Cache).ByNameForNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, cache, clk, _ := newBraked(t, 10)
			switchProject(c)
			clk.Step(2 * time.Minute)
			report := func(read func(c *Cache, ctx context.Context, key string) (*cloudapi.Instance, error)) bool {
				_, err := read(cache, ctx, tc.key)
				var braked *BrakeError
				require.ErrorAs(t, err, &braked)
				return braked.Report
			}
			assert.False(t, report(tc.other), "another read is not reported")
			assert.False(t, report(tc.other))
			assert.True(t, report(tc.node), "the Node's first refusal is reported")
			assert.False(t, report(tc.node), "once a window")
			assert.False(t, report(tc.other))
		})
	}
}
