package instances_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
)

func TestNewLookupValidates(t *testing.T) {
	_, err := instances.NewLookup(nil, instances.LookupOptions{MaxAge: -time.Second, PageSize: -1})
	require.Error(t, err)
	assert.ErrorContains(t, err, "NewLookup needs an instance API")
	assert.ErrorContains(t, err, "lookup MaxAge -1s is negative")
	assert.ErrorContains(t, err, "lookup PageSize -1 is negative")
}

// A lookup built without a MaxAge keeps its snapshot for DefaultLookupMaxAge: every
// lookup within it answers from one list, the first after it lists again.
func TestNewLookupDefaultMaxAge(t *testing.T) {
	cloud, err := fakecloud.New(fakecloud.Config{Instances: []fakecloud.Instance{{ID: "i-1", Name: "a"}, {ID: "i-2", Name: "b"}}})
	require.NoError(t, err)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lookup, err := instances.NewLookup(cloud.Instances(), instances.LookupOptions{Clock: clk})
	require.NoError(t, err)

	lists := func() int64 { return cloud.Calls()[cloudapi.OpListInstances] }
	_, err = lookup.ByName(t.Context(), "a")
	require.NoError(t, err)
	clk.SetTime(clk.Now().Add(instances.DefaultLookupMaxAge))
	_, err = lookup.ByID(t.Context(), "i-2")
	require.NoError(t, err)
	assert.EqualValues(t, 1, lists(), "a snapshot as old as the default maximum age is fresh")
	assert.Zero(t, cloud.Calls()[cloudapi.OpGetInstance], "a fresh snapshot answers by ID without a call")

	clk.SetTime(clk.Now().Add(time.Nanosecond))
	_, err = lookup.ByName(t.Context(), "b")
	require.NoError(t, err)
	assert.EqualValues(t, 2, lists(), "an older snapshot is listed again")
}

// failingList answers every list with a server error and every GetInstance with not
// found: a cloud whose list is down and whose not-found cannot be trusted.
type failingList struct{}

func (failingList) GetInstance(context.Context, string) (*cloudapi.Instance, error) {
	return nil, cloudapi.ErrNotFound
}

func (failingList) ListInstances(context.Context, cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListInstances, "", errors.New("503"))
}

// OnCheck hears of every "gone" the lookup refused to take on a failing cloud's word,
// with the reason and result the provider's metric counts them by.
func TestNewLookupReportsChecks(t *testing.T) {
	type check struct{ reason, result string }
	var checks []check
	lookup, err := instances.NewLookup(failingList{}, instances.LookupOptions{OnCheck: func(reason, result string) {
		checks = append(checks, check{reason, result})
	}})
	require.NoError(t, err)
	_, err = lookup.ByID(t.Context(), "i-1")
	require.Error(t, err)
	assert.False(t, cloudapi.IsNotFound(err), "a not-found while the list fails is not gone: %v", err)
	assert.Equal(t, []check{{"list_failing", "refused"}}, checks)
}
