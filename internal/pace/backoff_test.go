package pace

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffDoublesAndResets(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 5 * time.Second}
	now := time.Unix(0, 0)
	require.NoError(t, b.Hold(now, "list"), "nothing failed yet")
	cause := errors.New("503")
	var waits []time.Duration
	for range 4 {
		b.Failed(now, cause)
		waits = append(waits, b.Wait())
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}, waits)
	err := b.Hold(now.Add(4*time.Second), "list")
	require.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), "list failed; next attempt in 1s")
	assert.NoError(t, b.Hold(now.Add(5*time.Second), "list"), "the wait is over")
	b.Succeeded()
	assert.NoError(t, b.Hold(now, "list"))
	b.Failed(now, cause)
	assert.Equal(t, time.Second, b.Wait(), "a success starts the doubling over")
}

func TestBackoffDoublingSaturates(t *testing.T) {
	b := Backoff{Min: time.Second, Max: math.MaxInt64}
	now := time.Unix(0, 0)
	for range 70 {
		b.Failed(now, errors.New("503"))
	}
	assert.Equal(t, time.Duration(math.MaxInt64), b.Wait(), "the doubling stops at Max instead of overflowing back to Min")
	assert.Error(t, b.Hold(now.Add(100*365*24*time.Hour), "list"), "the hold ends no earlier than the wait")
}
