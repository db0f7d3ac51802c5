package faultinject

import (
	"math"
	"time"
)

// Latency is a distribution of delays. Sample maps a uniform number u in [0, 1) onto a
// delay; the Client passes a deterministic u (see the package documentation), so a
// Latency must be a pure function of u to keep runs reproducible. A delay of zero or less
// adds no wait. Implementations must be safe for concurrent use.
type Latency interface {
	Sample(u float64) time.Duration
}

// LatencyFunc adapts a function to the Latency interface.
type LatencyFunc func(u float64) time.Duration

// Sample returns f(u).
func (f LatencyFunc) Sample(u float64) time.Duration { return f(u) }

// Fixed returns a Latency that is always d.
func Fixed(d time.Duration) Latency { return fixed(d) }

type fixed time.Duration

func (f fixed) Sample(float64) time.Duration { return time.Duration(f) }

// Uniform returns a Latency spread evenly between minimum (included) and maximum
// (excluded). The bounds may be given in either order.
func Uniform(minimum, maximum time.Duration) Latency {
	if maximum < minimum {
		minimum, maximum = maximum, minimum
	}
	return uniformLatency{min: minimum, span: float64(maximum - minimum)}
}

type uniformLatency struct {
	min  time.Duration
	span float64
}

func (l uniformLatency) Sample(u float64) time.Duration {
	return l.min + time.Duration(clampUnit(u)*l.span)
}

// Exponential returns a Latency with an exponential distribution of the given mean, cut
// off at maximum: most calls are fast and a few are slow, as on a real network. A maximum
// of zero or less means no cut-off. A mean of zero or less adds no latency.
func Exponential(mean, maximum time.Duration) Latency {
	return exponential{mean: mean, max: maximum}
}

type exponential struct{ mean, max time.Duration }

func (l exponential) Sample(u float64) time.Duration {
	if l.mean <= 0 {
		return 0
	}
	// 1-u is in (0, 1], so the logarithm is finite.
	d := -float64(l.mean) * math.Log1p(-clampUnit(u))
	if l.max > 0 && d >= float64(l.max) {
		return l.max
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// clampUnit clamps u into [0, 1), mapping NaN to 0, so that a Latency called directly
// with a bad u still answers within its range.
func clampUnit(u float64) float64 {
	switch {
	case !(u > 0):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
}
