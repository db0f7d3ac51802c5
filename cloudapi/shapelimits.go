package cloudapi

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// The parts of a LoadBalancerShape that bound values rather than name features: the
// ranges of a health check's values, the features a load balancer cannot combine and the
// certificates a listener takes.

// HealthCheckRanges are the values a cloud's health checks take (a LoadBalancerShape's):
// each range's zero bound is no bound, the zero value takes every value.
type HealthCheckRanges struct {
	// Interval and Timeout are the ranges of HealthCheck.Interval and Timeout.
	Interval, Timeout DurationRange
	// HealthyThreshold and UnhealthyThreshold are the ranges of the thresholds.
	HealthyThreshold, UnhealthyThreshold CountRange
}

// DurationRange is a range of durations, Min and Max included; a zero bound is none.
type DurationRange struct{ Min, Max time.Duration }

// Contains reports whether d is within r.
func (r DurationRange) Contains(d time.Duration) bool {
	return d >= r.Min && (r.Max == 0 || d <= r.Max)
}

// fit returns d within r.
func (r DurationRange) fit(d time.Duration) time.Duration {
	d = max(d, r.Min)
	if r.Max > 0 {
		d = min(d, r.Max)
	}
	return d
}

// String says r for a message: "from 3s to 1m0s", "at least 3s", "at most 1m0s" or "any".
func (r DurationRange) String() string { return rangeString(r.Min, r.Max) }

// CountRange is a range of counts, Min and Max included; a zero bound is none.
type CountRange struct{ Min, Max int32 }

// Contains reports whether n is within r.
func (r CountRange) Contains(n int32) bool { return n >= r.Min && (r.Max == 0 || n <= r.Max) }

// fit returns n within r.
func (r CountRange) fit(n int32) int32 {
	n = max(n, r.Min)
	if r.Max > 0 {
		n = min(n, r.Max)
	}
	return n
}

// String says r for a message, as DurationRange.String.
func (r CountRange) String() string { return rangeString(r.Min, r.Max) }

// rangeString says the range from lo to hi, a zero bound none.
func rangeString[T interface{ ~int32 | ~int64 }](lo, hi T) string {
	show := func(v T) string {
		if d, ok := any(v).(time.Duration); ok {
			return d.String()
		}
		return fmt.Sprint(v)
	}
	switch {
	case lo != 0 && hi != 0:
		return "from " + show(lo) + " to " + show(hi)
	case lo != 0:
		return "at least " + show(lo)
	case hi != 0:
		return "at most " + show(hi)
	}
	return "any"
}

// validateLimits reports the problems of s's ranges, exclusive features and certificates.
func (s LoadBalancerShape) validateLimits() []error {
	var errs []error
	r := s.HealthCheckRanges
	for _, d := range []struct {
		name     string
		min, max time.Duration
	}{{"Interval", r.Interval.Min, r.Interval.Max}, {"Timeout", r.Timeout.Min, r.Timeout.Max}} {
		unit := s.HealthCheckUnit
		switch {
		case d.min < 0 || d.max < 0:
			errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckRanges.%s %s: a bound is negative", d.name, rangeString(d.min, d.max)))
		case d.max != 0 && d.min > d.max:
			errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckRanges.%s: Min %s is more than Max %s", d.name, d.min, d.max))
		case unit > 0 && (d.min%unit != 0 || d.max%unit != 0):
			errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckRanges.%s %s: a bound is not a whole multiple of HealthCheckUnit %s", d.name, rangeString(d.min, d.max), unit))
		}
	}
	if r.Interval.Max != 0 && r.Timeout.Min > r.Interval.Max {
		errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckRanges: the shortest timeout %s is longer than the longest interval %s: no health check fits", r.Timeout.Min, r.Interval.Max))
	}
	for _, c := range []struct {
		name     string
		min, max int32
	}{{"HealthyThreshold", r.HealthyThreshold.Min, r.HealthyThreshold.Max}, {"UnhealthyThreshold", r.UnhealthyThreshold.Min, r.UnhealthyThreshold.Max}} {
		if c.min < 0 || c.max < 0 || (c.max != 0 && c.min > c.max) {
			errs = append(errs, fmt.Errorf("load balancer shape: HealthCheckRanges.%s: Min %d and Max %d are not a range of counts", c.name, c.min, c.max))
		}
	}
	known := append(slices.Clone(unsupportable), FeatureListenerHealthCheck)
	seen := map[[2]Feature]bool{}
	for _, pair := range s.Exclusive {
		for _, f := range pair {
			if !slices.Contains(known, f) {
				errs = append(errs, fmt.Errorf("load balancer shape: Exclusive: %q is not one of %v", f, known))
			}
		}
		switch {
		case pair[0] == pair[1]:
			errs = append(errs, fmt.Errorf("load balancer shape: Exclusive: %q excludes itself", pair[0]))
		case seen[pair] || seen[[2]Feature{pair[1], pair[0]}]:
			errs = append(errs, fmt.Errorf("load balancer shape: Exclusive: %v is listed twice", pair))
		case !s.Supports(pair[0]) || !s.Supports(pair[1]):
			errs = append(errs, fmt.Errorf("load balancer shape: Exclusive: %v names a feature the shape declares unsupported", pair))
		}
		seen[pair] = true
	}
	if s.MaxCertificates < 0 {
		errs = append(errs, fmt.Errorf("load balancer shape: MaxCertificates %d is negative", s.MaxCertificates))
	}
	return errs
}

// Excluded returns the pairs of s.Exclusive that spec combines, in the order of that
// list: nil when the cloud can build spec as far as they go.
func (s LoadBalancerShape) Excluded(spec LoadBalancerSpec) [][2]Feature {
	var out [][2]Feature
	for _, pair := range s.Exclusive {
		if uses(spec, pair[0]) && uses(spec, pair[1]) {
			out = append(out, pair)
		}
	}
	return out
}

// FitHealthCheck returns hc with each value the cloud bounds brought within its range
// (HealthCheckRanges) and its interval and timeout rounded up to whole multiples of
// HealthCheckUnit, the interval then at least the timeout: a default, or the contract
// suite's health check, that every cloud of the shape builds. A value of hc that is zero
// stays zero (the spec's default).
func (s LoadBalancerShape) FitHealthCheck(hc HealthCheck) HealthCheck {
	r, unit := s.HealthCheckRanges, s.HealthCheckUnit
	up := func(d time.Duration) time.Duration {
		if unit > 0 && d%unit != 0 {
			d += unit - d%unit
		}
		return d
	}
	if hc.Interval != 0 {
		hc.Interval = up(r.Interval.fit(hc.Interval))
	}
	if hc.Timeout != 0 {
		hc.Timeout = up(r.Timeout.fit(hc.Timeout))
		hc.Interval = max(hc.Interval, hc.Timeout)
	}
	if hc.HealthyThreshold != 0 {
		hc.HealthyThreshold = r.HealthyThreshold.fit(hc.HealthyThreshold)
	}
	if hc.UnhealthyThreshold != 0 {
		hc.UnhealthyThreshold = r.UnhealthyThreshold.fit(hc.UnhealthyThreshold)
	}
	return hc
}

// checkLimits returns what of spec the cloud's ranges, exclusive features and
// certificates refuse (Check). A zero value of a health check is the spec's default, which
// no range refuses.
func (s LoadBalancerShape) checkLimits(spec LoadBalancerSpec) error {
	var errs []error
	for _, pair := range s.Excluded(spec) {
		errs = append(errs, fmt.Errorf("the cloud's load balancers cannot combine %s with %s", pair[0], pair[1]))
	}
	r := s.HealthCheckRanges
	check := func(of string, hc *HealthCheck) {
		if hc == nil {
			return
		}
		for _, v := range []struct {
			name string
			ok   bool
			rng  string
		}{
			{"interval " + hc.Interval.String(), hc.Interval == 0 || r.Interval.Contains(hc.Interval), r.Interval.String()},
			{"timeout " + hc.Timeout.String(), hc.Timeout == 0 || r.Timeout.Contains(hc.Timeout), r.Timeout.String()},
			{fmt.Sprint("healthy threshold ", hc.HealthyThreshold), hc.HealthyThreshold == 0 || r.HealthyThreshold.Contains(hc.HealthyThreshold), r.HealthyThreshold.String()},
			{fmt.Sprint("unhealthy threshold ", hc.UnhealthyThreshold), hc.UnhealthyThreshold == 0 || r.UnhealthyThreshold.Contains(hc.UnhealthyThreshold), r.UnhealthyThreshold.String()},
		} {
			if !v.ok {
				errs = append(errs, fmt.Errorf("health check%s: %s is out of the cloud's range (%s)", of, v.name, v.rng))
			}
		}
	}
	check("", spec.HealthCheck)
	for _, l := range spec.Listeners {
		check(fmt.Sprintf(" of listener %s/%d", l.Protocol, l.Port), l.HealthCheck)
		if n := s.MaxCertificates; n > 0 && len(l.Certificates) > n {
			errs = append(errs, fmt.Errorf("listener %s/%d: %d certificates, the cloud's listeners take at most %d", l.Protocol, l.Port, len(l.Certificates), n))
		}
	}
	return errors.Join(errs...)
}
