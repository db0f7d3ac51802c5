package faultinject

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Defaults used when the matching Config field is zero.
const (
	// DefaultTimeout is how long a Timeout fault waits when Config.Timeout is zero.
	DefaultTimeout = time.Second
	// DefaultThrottleRetryAfter is the RetryAfter of a Throttle fault when
	// Config.ThrottleRetryAfter is zero.
	DefaultThrottleRetryAfter = time.Second
)

// ErrInjected is wrapped by every error that the wrapper makes up itself instead of passing
// on from the inner client: injected faults, rate limit refusals and contexts that end
// during injected latency. Test with errors.Is to tell an injected failure from one of the
// backend. A scripted Fault.Err is returned as it is and wraps ErrInjected only if it was
// built that way.
var ErrInjected = errors.New("injected fault")

// Kind is a kind of fault. The zero value, None, is no fault.
type Kind int

// The kinds of fault. Each describes what the caller gets and whether the inner client
// sees the call.
const (
	// None injects nothing: the call goes to the inner client and its result and error are
	// returned unchanged. A Rule of Kind None that fires shields the call from the rules
	// after it; a scripted Fault{} lets exactly one call through untouched.
	None Kind = iota
	// Transient refuses the call as a cloud answering 503 would: the inner client is not
	// called, and the caller gets a *cloudapi.Error of class cloudapi.ErrTransient.
	Transient
	// Timeout models a request that gets no answer: the inner client is not called; the
	// caller waits Config.Timeout (or until its context is done, whichever comes first)
	// and then gets a *cloudapi.Error of class cloudapi.ErrTransient that wraps
	// context.DeadlineExceeded, or the context's own error when the context ended first.
	Timeout
	// Throttle refuses the call as a cloud's rate limit would: the inner client is not
	// called, and the caller gets a *cloudapi.Error of class cloudapi.ErrThrottled with
	// RetryAfter set to Config.ThrottleRetryAfter.
	Throttle
	// Ambiguous loses the answer of a call that was applied: the inner client IS called,
	// with the caller's context, and whatever it did stays done; then the caller gets an
	// *cloudapi.Error of class cloudapi.ErrTransient that wraps context.DeadlineExceeded,
	// and neither the inner result nor the inner error. This is the fault that proves a
	// caller does not repeat a create blindly. For reads it is a Transient fault after
	// the read was made. It does not wait; add Latency to make it slow.
	Ambiguous
	// Repeat answers a list as a cloud that pages by offset does when an item is created
	// between two page reads: the inner client IS called, and the caller gets its page
	// with a next page token of the wrapper's own; the list call with that token gets the
	// page's last item again, alone, with the inner page's next token (the inner client
	// does not see that call). On a list answered with an error or no items, and on an
	// operation that is not a list, it passes the call on unchanged. The wrapper owes at
	// most MaxOwedPages such pages at once; past that, the oldest tokens are forgotten,
	// and a call with one goes to the inner client, as a cloud's expired token.
	Repeat
	// Refuse refuses the call as a cloud that cannot build the request would (a setting
	// its load balancers lack, say): the inner client is not called, and the caller gets a
	// *cloudapi.Error of class cloudapi.ErrInvalidRequest, which is not retried. It proves
	// that what a caller writes after a refusal passes the same rules as the refused write.
	Refuse
)

// MaxOwedPages is how many pages of Repeat faults a Client owes at once at most.
const MaxOwedPages = 1024

// String returns the kind's name, for example "Transient".
func (k Kind) String() string {
	switch k {
	case None:
		return "None"
	case Transient:
		return "Transient"
	case Timeout:
		return "Timeout"
	case Throttle:
		return "Throttle"
	case Ambiguous:
		return "Ambiguous"
	case Repeat:
		return "Repeat"
	case Refuse:
		return "Refuse"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k is one of the defined kinds, None included.
func (k Kind) Valid() bool { return k >= None && k <= Refuse }

// Rule injects one kind of fault into a random share of the calls.
type Rule struct {
	// Ops are the operations the rule applies to. Empty means every operation.
	Ops []cloudapi.Operation
	// Probability is the chance, from 0 to 1, that the rule fires for a call it applies
	// to. Values at or below 0 (and NaN) never fire, values at or above 1 always do.
	Probability float64
	// Kind is the fault injected when the rule fires. A rule with an undefined Kind never
	// fires.
	Kind Kind
}

// Validate reports every problem of the rule, joined with errors.Join, or nil.
func (r Rule) Validate() error { return errors.Join(r.problems()...) }

// problems returns every problem of the rule.
func (r Rule) problems() []error {
	var errs []error
	for _, op := range r.Ops {
		if !op.Valid() {
			errs = append(errs, fmt.Errorf("unknown operation %q", op))
		}
	}
	if math.IsNaN(r.Probability) || r.Probability < 0 || r.Probability > 1 {
		errs = append(errs, fmt.Errorf("probability %v is outside [0, 1]", r.Probability))
	}
	if !r.Kind.Valid() {
		errs = append(errs, fmt.Errorf("unknown kind %v", r.Kind))
	}
	return errs
}

// applies reports whether the rule applies to op.
func (r Rule) applies(op cloudapi.Operation) bool {
	return len(r.Ops) == 0 || slices.Contains(r.Ops, op)
}

// Fault is one scripted fault; see Client.Script.
type Fault struct {
	// Kind is the fault to inject when Err is nil. Fault{} (Kind None) lets the call
	// through untouched. An undefined Kind behaves as None.
	Kind Kind
	// Err, when not nil, is returned to the caller exactly as it is, without calling the
	// inner client; Kind is then ignored. Use it to script answers such as
	// cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, "i-1", nil).
	Err error
}

// RateLimit is a server-side token bucket shared by all operations of one Client, like the
// request limit of a cloud account. The bucket starts full.
type RateLimit struct {
	// QPS is the rate at which tokens are added, per second. It must be positive and
	// finite; a RateLimit with any other QPS limits nothing.
	QPS float64
	// Burst is the size of the bucket: how many calls may be made at once after a pause.
	// Values below 1 count as 1.
	Burst int
}

// Config says which faults a Client injects. Every field is optional: the zero Config
// injects nothing, adds no latency and passes every call, result and error through
// unchanged. Wrap copies the Config; changing it afterwards has no effect.
type Config struct {
	// Seed makes the random decisions reproducible: see the package documentation for the
	// exact function of (Seed, operation, call number) they are.
	Seed int64

	// Rules are evaluated in order for every call that is not scripted and not refused by
	// RateLimit; the first rule that applies to the call's operation and fires decides
	// the fault. When none fires, the call goes to the inner client.
	Rules []Rule

	// Latency is the delay added before every call, unless OpLatency names the call's
	// operation. Nil adds none.
	Latency Latency
	// OpLatency overrides Latency for the operations it names; a nil value means no
	// latency for that operation.
	OpLatency map[cloudapi.Operation]Latency

	// Timeout is how long a Timeout fault waits before it answers. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// ThrottleRetryAfter is the RetryAfter of the error of a Throttle fault. Zero means
	// DefaultThrottleRetryAfter.
	ThrottleRetryAfter time.Duration

	// RateLimit, when not nil, refuses calls beyond a token bucket with an
	// *cloudapi.Error of class cloudapi.ErrThrottled whose RetryAfter is the time until
	// the next token, rounded up to a whole millisecond and at least one millisecond.
	RateLimit *RateLimit

	// Clock is the Client's clock: the rate limiter reads its time, with the Client's
	// lock held, and Latency and Timeout faults wait on its timers (a wait ends early when
	// the call's context ends). Nil means the real clock, clock.RealClock{}. Tests pass a
	// fake clock (k8s.io/utils/clock/testing) to make waits instant and the rate limiter
	// reproducible.
	Clock clock.Clock
}

// Validate reports every problem of the configuration, joined with errors.Join, or nil.
// Wrap accepts any Config and behaves as each field documents for out-of-range values;
// Validate is for callers that want to know about such values.
func (c Config) Validate() error {
	var errs []error
	for i, r := range c.Rules {
		for _, err := range r.problems() {
			errs = append(errs, fmt.Errorf("rule %d: %w", i, err))
		}
	}
	for _, op := range slices.Sorted(maps.Keys(c.OpLatency)) {
		if !op.Valid() {
			errs = append(errs, fmt.Errorf("latency for unknown operation %q", op))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %s", c.Timeout))
	}
	if c.ThrottleRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("negative throttle retry-after %s", c.ThrottleRetryAfter))
	}
	if rl := c.RateLimit; rl != nil {
		if !(rl.QPS > 0) || math.IsInf(rl.QPS, 0) {
			errs = append(errs, fmt.Errorf("rate limit QPS %v is not a positive finite number", rl.QPS))
		}
		if rl.Burst < 1 {
			errs = append(errs, fmt.Errorf("rate limit burst %d is below 1", rl.Burst))
		}
	}
	return errors.Join(errs...)
}

// cloneRules returns a copy of rules that shares no memory with it.
func cloneRules(rules []Rule) []Rule {
	if len(rules) == 0 {
		return nil
	}
	out := make([]Rule, len(rules))
	for i, r := range rules {
		r.Ops = slices.Clone(r.Ops)
		out[i] = r
	}
	return out
}
