package faultinject_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

// almostOne is the largest u a Latency gets.
var almostOne = math.Nextafter(1, 0)

func TestLatencyConstructors(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		l    faultinject.Latency
		u    float64
		want time.Duration
	}{
		{name: "fixed", l: faultinject.Fixed(5 * ms), u: 0.7, want: 5 * ms},
		{name: "uniform at 0", l: faultinject.Uniform(10*ms, 20*ms), u: 0, want: 10 * ms},
		{name: "uniform at 0.25", l: faultinject.Uniform(10*ms, 20*ms), u: 0.25, want: 12500 * time.Microsecond},
		{name: "uniform bounds swapped", l: faultinject.Uniform(20*ms, 10*ms), u: 0.25, want: 12500 * time.Microsecond},
		{name: "uniform below 1", l: faultinject.Uniform(10*ms, 20*ms), u: almostOne, want: 20*ms - 1},
		{name: "uniform u out of range", l: faultinject.Uniform(10*ms, 20*ms), u: -3, want: 10 * ms},
		{name: "uniform u NaN", l: faultinject.Uniform(10*ms, 20*ms), u: math.NaN(), want: 10 * ms},
		{name: "exponential at 0", l: faultinject.Exponential(10*ms, 50*ms), u: 0, want: 0},
		{name: "exponential at 1-1/e is the mean", l: faultinject.Exponential(10*ms, 50*ms), u: 1 - 1/math.E, want: 10 * ms},
		{name: "exponential median", l: faultinject.Exponential(10*ms, 0), u: 0.5, want: time.Duration(float64(10*ms) * math.Ln2)},
		{name: "exponential cut off", l: faultinject.Exponential(10*ms, 50*ms), u: 0.999, want: 50 * ms},
		{name: "exponential no cut-off", l: faultinject.Exponential(10*ms, 0), u: almostOne, want: time.Duration(float64(10*ms) * 53 * math.Ln2)},
		{name: "exponential huge mean saturates", l: faultinject.Exponential(math.MaxInt64, 0), u: almostOne, want: math.MaxInt64},
		{name: "exponential zero mean", l: faultinject.Exponential(0, 50*ms), u: 0.9, want: 0},
		{name: "func", l: faultinject.LatencyFunc(func(u float64) time.Duration { return time.Duration(u * 100) }), u: 0.5, want: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, float64(tt.want), float64(tt.l.Sample(tt.u)), float64(time.Microsecond))
		})
	}
}

func TestExponentialMean(t *testing.T) {
	l := faultinject.Exponential(10*time.Millisecond, 0)
	const n = 100_000
	var sum time.Duration
	for i := range n {
		sum += l.Sample((float64(i) + 0.5) / n)
	}
	assert.InDelta(t, float64(10*time.Millisecond), float64(sum/n), float64(100*time.Microsecond))
}
