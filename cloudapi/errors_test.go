package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestErrorClasses(t *testing.T) {
	cause := errors.New("HTTP 404: no such vm")
	sentinels := []error{cloudapi.ErrNotFound, cloudapi.ErrConflict, cloudapi.ErrThrottled, cloudapi.ErrInvalidRequest, cloudapi.ErrTransient}
	for _, class := range sentinels {
		t.Run(class.Error(), func(t *testing.T) {
			err := fmt.Errorf("describing instance: %w", cloudapi.NewError(class, cloudapi.OpGetInstance, "i-1", cause))
			require.ErrorIs(t, err, class)
			require.ErrorIs(t, err, cause, "the backend's own error stays reachable")
			assert.Equal(t, class, cloudapi.ClassOf(err))
			for _, other := range sentinels {
				if !errors.Is(other, class) {
					assert.NotErrorIs(t, err, other, "an error has exactly one class")
				}
			}
			var ce *cloudapi.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, cloudapi.OpGetInstance, ce.Op)
			assert.Equal(t, "i-1", ce.ID)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"full", cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, "i-1", errors.New("404")), "GetInstance i-1: not found: 404"},
		{"no id no cause", cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListInstances, "", nil), "ListInstances: transient failure"},
		{"throttled", cloudapi.Throttled(cloudapi.OpListRoutes, 1500*time.Millisecond, nil), "ListRoutes: throttled (retry after 1.5s)"},
		{"no class", &cloudapi.Error{Err: errors.New("boom")}, "unclassified: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestRetryAfter(t *testing.T) {
	d, ok := cloudapi.RetryAfter(fmt.Errorf("wrapped: %w", cloudapi.Throttled(cloudapi.OpGetInstance, 2*time.Second, nil)))
	require.True(t, ok)
	assert.Equal(t, 2*time.Second, d)

	_, ok = cloudapi.RetryAfter(cloudapi.NewError(cloudapi.ErrThrottled, cloudapi.OpGetInstance, "", nil))
	assert.False(t, ok, "a throttled answer without Retry-After asks for no particular wait")
	_, ok = cloudapi.RetryAfter(errors.New("plain"))
	assert.False(t, ok)
}

func TestClassOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"nil", nil, nil},
		{"unclassified", errors.New("boom"), nil},
		{"wrapped sentinel", fmt.Errorf("x: %w", cloudapi.ErrConflict), cloudapi.ErrConflict},
		{"deadline", fmt.Errorf("calling cloud: %w", context.DeadlineExceeded), cloudapi.ErrTransient},
		{"canceled", context.Canceled, cloudapi.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, cloudapi.ClassOf(tt.err))
		})
	}
	assert.False(t, cloudapi.IsNotFound(context.DeadlineExceeded), "a timeout is never read as not found")
	assert.True(t, cloudapi.IsNotFound(fmt.Errorf("x: %w", cloudapi.ErrNotFound)))
}

func TestOperations(t *testing.T) {
	ops := cloudapi.Operations()
	seen := map[cloudapi.Operation]bool{}
	writes := 0
	for _, op := range ops {
		assert.True(t, op.Valid(), op)
		assert.False(t, seen[op], "listed twice: %s", op)
		seen[op] = true
		if op.IsWrite() {
			writes++
		}
	}
	assert.Len(t, ops, 14)
	assert.Equal(t, 8, writes)
	assert.False(t, cloudapi.Operation("Reboot").Valid())
	assert.False(t, cloudapi.OpListInstances.IsWrite())
	assert.True(t, cloudapi.OpCreateRoute.IsWrite())
}

func TestMatchTags(t *testing.T) {
	tags := map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-1"}
	assert.True(t, cloudapi.MatchTags(tags, nil))
	assert.True(t, cloudapi.MatchTags(tags, map[string]string{cloudapi.TagCluster: "c1"}))
	assert.True(t, cloudapi.MatchTags(tags, tags))
	assert.False(t, cloudapi.MatchTags(tags, map[string]string{cloudapi.TagCluster: "c2"}))
	assert.False(t, cloudapi.MatchTags(tags, map[string]string{cloudapi.TagNode: ""}), "a missing key does not match an empty value")
	assert.False(t, cloudapi.MatchTags(nil, map[string]string{cloudapi.TagCluster: "c1"}))
}
