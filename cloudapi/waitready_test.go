package cloudapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestWaitReady: a resource the cloud builds is read until it is ready, each read through
// ccmkit's gate; a failed build, a wait that outlasts the attempt and a not-found while
// building are transient, never "gone".
func TestWaitReady(t *testing.T) {
	statuses := []string{"new", "new", "active"}
	reads, gated := 0, 0
	read := func(ctx context.Context) (string, error) {
		if err := cloudapi.Request(ctx); err != nil {
			return "", err
		}
		s := statuses[min(reads, len(statuses)-1)]
		reads++
		return s, nil
	}
	active := func(s string) (bool, error) {
		if s == "errored" {
			return false, errors.New("the build failed")
		}
		return s == "active", nil
	}
	ctx := cloudapi.WithRequestGate(t.Context(), func(context.Context) error { gated++; return nil })
	got, err := cloudapi.WaitReady(ctx, cloudapi.OpCreateLoadBalancer, "lb-1", time.Millisecond, read, active)
	require.NoError(t, err)
	assert.Equal(t, "active", got)
	assert.Equal(t, 3, reads)
	assert.Equal(t, 3, gated, "every read through the gate")

	statuses, reads = []string{"new", "errored"}, 0
	_, err = cloudapi.WaitReady(ctx, cloudapi.OpCreateLoadBalancer, "lb-1", time.Millisecond, read, active)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.ErrorContains(t, err, "CreateLoadBalancer lb-1: transient failure: not ready after 2 reads: the build failed")

	// The second read outlasts the attempt: the wait after it ends at the deadline. (The
	// deadline is far from the first poll's interval, so a loaded machine is unlikely to
	// end the wait before the second read.)
	reads = 0
	outlasting := func(ctx context.Context) (string, error) {
		switch reads++; reads {
		case 1:
			return "new", nil
		case 2:
			<-ctx.Done()
			return "new", nil
		}
		return "", errors.New("read again after the attempt's deadline")
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = cloudapi.WaitReady(short, cloudapi.OpCreateLoadBalancer, "lb-1", 5*time.Millisecond, outlasting, active)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the attempt's timeout ends the wait")
	assert.Equal(t, 2, reads)

	gone := func(context.Context) (string, error) {
		return "", cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetLoadBalancer, "lb-1", nil)
	}
	_, err = cloudapi.WaitReady(ctx, cloudapi.OpCreateLoadBalancer, "lb-1", time.Millisecond, gone, active)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.NotErrorIs(t, err, cloudapi.ErrNotFound, "not found while building: never gone")

	_, err = cloudapi.WaitReady(ctx, cloudapi.OpCreateLoadBalancer, "lb-1", 0, read, active)
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
}
