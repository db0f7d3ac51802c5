package faultinject

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestUniformIsUniform checks that the draws fill [0, 1) evenly, for consecutive calls
// (the common case) and across streams.
func TestUniformIsUniform(t *testing.T) {
	const (
		n       = 100_000
		buckets = 20
	)
	tests := []struct {
		name string
		draw func(i uint64) float64
	}{
		{name: "consecutive calls", draw: func(i uint64) float64 { return uniform(1, cloudapi.OpGetInstance, i+1, streamRule0) }},
		{name: "consecutive streams", draw: func(i uint64) float64 { return uniform(1, cloudapi.OpGetInstance, 1, i) }},
		{name: "consecutive seeds", draw: func(i uint64) float64 { return uniform(int64(i), cloudapi.OpGetInstance, 1, streamLatency) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counts [buckets]int
			for i := range uint64(n) {
				u := tt.draw(i)
				if !(u >= 0 && u < 1) { // testify is too slow for 100,000 checks
					t.Fatalf("draw %d is %v, outside [0, 1)", i, u)
				}
				counts[int(u*buckets)]++
			}
			// Chi-squared with 19 degrees of freedom: 43.8 is its 0.999 quantile.
			want := float64(n) / buckets
			chi2 := 0.0
			for _, c := range counts {
				chi2 += (float64(c) - want) * (float64(c) - want) / want
			}
			assert.Less(t, chi2, 43.8, "buckets %v", counts)
		})
	}
}

// TestUniformStreamsAreIndependent checks that the latency draw and the rule draws of one
// call are uncorrelated, so that slow calls are not more likely to fail.
func TestUniformStreamsAreIndependent(t *testing.T) {
	const n = 50_000
	var sx, sy, sxx, syy, sxy float64
	for k := range uint64(n) {
		x := uniform(9, cloudapi.OpCreateRoute, k+1, streamLatency)
		y := uniform(9, cloudapi.OpCreateRoute, k+1, streamRule0)
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	cov := sxy/n - (sx/n)*(sy/n)
	r := cov / math.Sqrt((sxx/n-(sx/n)*(sx/n))*(syy/n-(sy/n)*(sy/n)))
	assert.InDelta(t, 0, r, 0.02, "correlation")
}

func TestBucket(t *testing.T) {
	assert.Nil(t, newBucket(nil))
	assert.Nil(t, newBucket(&RateLimit{QPS: 0, Burst: 5}))
	b := newBucket(&RateLimit{QPS: 2, Burst: 2})
	require.NotNil(t, b)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Zero(t, refuse(b, now))
	assert.Zero(t, refuse(b, now))
	assert.Equal(t, 500_000_000, int(refuse(b, now)))
	// A clock that goes back never frees tokens early.
	assert.Equal(t, 1_500_000_000, int(refuse(b, now.Add(-time.Second))))
}
