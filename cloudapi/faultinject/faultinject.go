package faultinject

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
)

// Client is a cloudapi.Client that injects faults into the calls it passes to an inner
// client. It is safe for concurrent use; its switches (SetEnabled, SetRules, Script,
// Reset) may be used while calls are in flight and take effect for the calls that reach
// their decision afterwards.
type Client struct {
	inner cloudapi.Client

	// Immutable after Wrap.
	seed               int64
	latency            Latency
	opLatency          map[cloudapi.Operation]Latency
	timeout            time.Duration
	throttleRetryAfter time.Duration
	qps                float64
	clock              clock.Clock

	mu      sync.Mutex
	enabled bool
	rules   []Rule
	bucket  *pace.Bucket
	seq     map[cloudapi.Operation]uint64
	scripts map[cloudapi.Operation][]Fault
	counts  map[cloudapi.Operation]*OpCounts
	// owed are the pages that Repeat faults owe, by the token they answered; owedSeq
	// numbers the tokens.
	owed    map[string]any
	owedSeq uint64
}

var _ cloudapi.Client = (*Client)(nil)

// Wrap returns a Client, enabled, that injects the faults cfg describes into the calls it
// passes to inner, which must not be nil. It makes a copy of cfg, does no I/O and starts
// no goroutines.
func Wrap(inner cloudapi.Client, cfg Config) *Client {
	c := &Client{
		inner:              inner,
		seed:               cfg.Seed,
		latency:            cfg.Latency,
		opLatency:          maps.Clone(cfg.OpLatency),
		timeout:            cfg.Timeout,
		throttleRetryAfter: cfg.ThrottleRetryAfter,
		clock:              cfg.Clock,
		enabled:            true,
		rules:              cloneRules(cfg.Rules),
		bucket:             newBucket(cfg.RateLimit),
		seq:                make(map[cloudapi.Operation]uint64),
		scripts:            make(map[cloudapi.Operation][]Fault),
		counts:             make(map[cloudapi.Operation]*OpCounts),
		owed:               make(map[string]any),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.throttleRetryAfter <= 0 {
		c.throttleRetryAfter = DefaultThrottleRetryAfter
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.bucket != nil {
		c.qps = cfg.RateLimit.QPS
	}
	return c
}

// Instances returns the inner client's instance API with faults injected, or nil if the
// inner client (against its contract) returned nil.
func (c *Client) Instances() cloudapi.InstanceAPI {
	in := c.inner.Instances()
	if in == nil {
		return nil
	}
	return &instanceAPI{c: c, inner: in}
}

// LoadBalancers returns the inner client's load balancer API with faults injected and
// true, or (nil, false) when the inner client has no load balancers.
func (c *Client) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	lb, ok := c.inner.LoadBalancers()
	if !ok || lb == nil {
		return nil, ok
	}
	return &loadBalancerAPI{c: c, inner: lb}, true
}

// Routes returns the inner client's route API with faults injected and true, or
// (nil, false) when the inner client has no routes.
func (c *Client) Routes() (cloudapi.RouteAPI, bool) {
	r, ok := c.inner.Routes()
	if !ok || r == nil {
		return nil, ok
	}
	return &routeAPI{c: c, inner: r}, true
}

// TargetGroups returns the inner client's target group API (cloudapi.TargetGroups) with
// faults injected and true, or (nil, false) when the inner client has none. It makes the
// Client a cloudapi.TargetGroupClient.
func (c *Client) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	g, ok := cloudapi.TargetGroups(c.inner)
	if !ok {
		return nil, false
	}
	return &targetGroupAPI{c: c, inner: g}, true
}

// Script queues faults for the next calls of op: the n-th call of op from now on gets
// faults[n-1] (after any faults queued before), ahead of the rate limiter and the rules,
// which that call does not consult. Fault{} lets one call through untouched. Faults
// queued for an operation that is never called stay queued. Queued faults survive
// SetEnabled(false) and Reset and apply once the Client is enabled again.
func (c *Client) Script(op cloudapi.Operation, faults ...Fault) {
	if len(faults) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scripts[op] = append(c.scripts[op], faults...)
}

// SetEnabled switches fault injection on or off. A disabled Client passes every call
// straight to the inner client: no latency, no rate limit, no scripted or random faults.
// It still counts the calls (Calls and Passed) and numbers them, so the random decisions
// of later calls are the same whether or not the Client was disabled in between. Use it to
// stop the faults in a chaos test and then check that the system converges.
func (c *Client) SetEnabled(enabled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enabled = enabled
}

// SetRules replaces the rules with a copy of rules. Nil removes them all.
func (c *Client) SetRules(rules []Rule) {
	rules = cloneRules(rules)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules = rules
}

// Injected returns a snapshot of the counters since Wrap or the last Reset.
func (c *Client) Injected() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{Ops: make(map[cloudapi.Operation]OpCounts, len(c.counts))}
	for op, oc := range c.counts {
		out.Ops[op] = oc.clone()
	}
	return out
}

// Reset sets the counters to zero. It keeps the rules, the scripted faults, the state of
// the rate limiter and the numbering of calls (so the random decisions go on where they
// were).
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// outcome is what a call gets.
type outcome struct {
	// kind is the fault to inject; None passes the call on unless err or wait is set.
	kind Kind
	// err is a scripted error to return as it is.
	err error
	// wait is set when the rate limiter refused the call: the time until the next token.
	wait time.Duration
}

// begin numbers a call of op (k = 1, 2, ...) and counts it. It reports whether the Client
// is enabled; if not, it counts the call as passed too.
func (c *Client) begin(op cloudapi.Operation) (k uint64, enabled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq[op]++
	oc := c.opCounts(op)
	oc.Calls++
	if !c.enabled {
		oc.Passed++
	}
	return c.seq[op], c.enabled
}

// decide returns the outcome of the k-th call of op and counts it. c.mu must not be held.
func (c *Client) decide(op cloudapi.Operation, k uint64) outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.opCounts(op)
	o := c.outcomeLocked(op, k)
	switch {
	case o.err != nil:
		oc.ScriptedErrors++
	case o.wait > 0:
		oc.RateLimited++
	case o.kind == None:
		oc.Passed++
	default:
		if oc.Faults == nil {
			oc.Faults = make(map[Kind]int)
		}
		oc.Faults[o.kind]++
		if o.kind == Ambiguous || o.kind == Repeat {
			oc.Passed++
		}
	}
	return o
}

// outcomeLocked picks the outcome of the k-th call of op: script, then rate limit, then
// rules. c.mu must be held.
func (c *Client) outcomeLocked(op cloudapi.Operation, k uint64) outcome {
	if !c.enabled {
		// Disabled while the call was waiting out its latency.
		return outcome{}
	}
	if q := c.scripts[op]; len(q) > 0 {
		f := q[0]
		if len(q) == 1 {
			delete(c.scripts, op)
		} else {
			q[0] = Fault{} // drop the reference to f.Err
			c.scripts[op] = q[1:]
		}
		if f.Err != nil {
			return outcome{err: f.Err}
		}
		if !f.Kind.Valid() {
			return outcome{}
		}
		return outcome{kind: f.Kind}
	}
	if c.bucket != nil {
		if wait := refuse(c.bucket, c.clock.Now()); wait > 0 {
			return outcome{wait: wait}
		}
	}
	for i, r := range c.rules {
		if !r.Kind.Valid() || !r.applies(op) {
			continue
		}
		if uniform(c.seed, op, k, streamRule0+uint64(i)) < r.Probability {
			return outcome{kind: r.Kind}
		}
	}
	return outcome{}
}

// opCounts returns the counters of op, creating them. c.mu must be held.
func (c *Client) opCounts(op cloudapi.Operation) *OpCounts {
	oc := c.counts[op]
	if oc == nil {
		oc = &OpCounts{}
		c.counts[op] = oc
	}
	return oc
}

// latencyFor returns the latency of op, or nil.
func (c *Client) latencyFor(op cloudapi.Operation) Latency {
	if l, ok := c.opLatency[op]; ok {
		return l
	}
	return c.latency
}

// do runs one call of op (about the resource id, if any) through the fault injection;
// call makes the inner call. repeat makes a list's answer of a Repeat fault (see
// listRepeat); nil for an operation that is not a list.
func do[T any](ctx context.Context, c *Client, op cloudapi.Operation, id string, call func(context.Context) (T, error), repeat func(T) T) (T, error) {
	var zero T
	k, enabled := c.begin(op)
	if !enabled {
		return call(ctx)
	}
	if lat := c.latencyFor(op); lat != nil {
		if d := lat.Sample(uniform(c.seed, op, k, streamLatency)); d > 0 {
			if err := pace.Sleep(ctx, c.clock, d); err != nil {
				c.mu.Lock()
				c.opCounts(op).Canceled++
				c.mu.Unlock()
				return zero, &cloudapi.Error{Class: cloudapi.ErrTransient, Op: op, ID: id,
					Err: fmt.Errorf("%w: context ended during %s of latency: %w", ErrInjected, d, err)}
			}
		}
	}

	o := c.decide(op, k)
	if o.err == nil && o.wait == 0 && o.kind == None {
		return call(ctx)
	}
	klog.FromContext(ctx).V(4).Info("Injecting cloud API fault", "op", op, "id", id, "call", k,
		"kind", o.kind, "scripted", o.err != nil, "retryAfter", o.wait)
	switch {
	case o.err != nil:
		return zero, o.err
	case o.wait > 0:
		return zero, &cloudapi.Error{Class: cloudapi.ErrThrottled, Op: op, ID: id, RetryAfter: o.wait,
			Err: fmt.Errorf("%w: rate limit of %g requests per second exceeded", ErrInjected, c.qps)}
	}
	switch o.kind {
	case Throttle:
		return zero, &cloudapi.Error{Class: cloudapi.ErrThrottled, Op: op, ID: id, RetryAfter: c.throttleRetryAfter,
			Err: fmt.Errorf("%w: too many requests", ErrInjected)}
	case Timeout:
		cause := fmt.Errorf("%w: no answer within %s: %w", ErrInjected, c.timeout, context.DeadlineExceeded)
		if err := pace.Sleep(ctx, c.clock, c.timeout); err != nil {
			cause = fmt.Errorf("%w: context ended while waiting for an answer: %w", ErrInjected, err)
		}
		return zero, &cloudapi.Error{Class: cloudapi.ErrTransient, Op: op, ID: id, Err: cause}
	case Repeat:
		res, err := call(ctx)
		if err != nil || repeat == nil {
			return res, err
		}
		return repeat(res), nil
	case Ambiguous:
		_, _ = call(ctx) // applied, but the answer is lost
		return zero, &cloudapi.Error{Class: cloudapi.ErrTransient, Op: op, ID: id,
			Err: fmt.Errorf("%w: answer lost after the request was sent: %w", ErrInjected, context.DeadlineExceeded)}
	case Refuse:
		return zero, &cloudapi.Error{Class: cloudapi.ErrInvalidRequest, Op: op, ID: id,
			Err: fmt.Errorf("%w: the cloud cannot build this request", ErrInjected)}
	default: // Transient
		return zero, &cloudapi.Error{Class: cloudapi.ErrTransient, Op: op, ID: id,
			Err: fmt.Errorf("%w: service unavailable", ErrInjected)}
	}
}

// listRepeat returns the answer of a Repeat fault to the list page p (items and next, the
// inner page's): p with a token of the wrapper's own as its next token, which owes the
// page made of p's last item (cloned) and next, or p as it is when it has no items. page
// makes a page of items and a next token.
func listRepeat[T, P any](c *Client, p *P, items []T, next string, clone func(T) T, page func([]T, string) *P) *P {
	if p == nil || len(items) == 0 {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.owed) >= MaxOwedPages {
		clear(c.owed) // abandoned lists: their tokens expire
	}
	c.owedSeq++
	token := fmt.Sprintf("faultinject-repeat-%d", c.owedSeq)
	c.owed[token] = page([]T{clone(items[len(items)-1])}, next)
	return page(items, token)
}

// owedPage returns, and forgets, the page a Repeat fault owes to the list call with token;
// ok is false when token is not one of the wrapper's (or expired).
func owedPage[P any](c *Client, token string) (p *P, ok bool) {
	if token == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.owed[token]
	if !ok {
		return nil, false
	}
	p, ok = v.(*P)
	if ok {
		delete(c.owed, token)
	}
	return p, ok
}

// list runs one list call of op through the fault injection: a call with a token that a
// Repeat fault handed out gets the page owed (the inner client does not see it, faults
// still apply); else call lists at the inner client, and a Repeat fault answers with
// listRepeat.
func list[T, P any](ctx context.Context, c *Client, op cloudapi.Operation, opts cloudapi.ListOptions,
	call func(context.Context, cloudapi.ListOptions) (*P, error), parts func(*P) ([]T, string), clone func(T) T, page func([]T, string) *P) (*P, error) {
	if owed, ok := owedPage[P](c, opts.PageToken); ok {
		return do(ctx, c, op, "", func(context.Context) (*P, error) { return owed, nil }, nil)
	}
	return do(ctx, c, op, "", func(ctx context.Context) (*P, error) { return call(ctx, opts) }, func(p *P) *P {
		if p == nil {
			return nil
		}
		items, next := parts(p)
		return listRepeat(c, p, items, next, clone, page)
	})
}
