// Package faultinject wraps any cloudapi.Client in a client that misbehaves on purpose:
// it fails, throttles, times out, loses the answers of applied writes, adds latency and
// enforces a server-side rate limit, reproducibly under a seed. Tests of ccmkit and of a
// cloud team's adapter use it to prove that the layers above survive a misbehaving cloud:
// that a create whose answer was lost is not repeated blindly, that throttling is
// honoured, and that everything converges once the faults stop. Target groups
// (cloudapi.TargetGroups) pass through, with faults, when the wrapped client offers them.
//
// # Using it
//
// Wrap the backend under test and hand the wrapper to the code under test:
//
//	chaos := faultinject.Wrap(backend, faultinject.Config{
//		Seed: 42,
//		Rules: []faultinject.Rule{
//			// One write in ten is applied but its answer is lost.
//			{Ops: []cloudapi.Operation{cloudapi.OpCreateLoadBalancer}, Probability: 0.1, Kind: faultinject.Ambiguous},
//			// One call in twenty, of any operation, fails with a 503.
//			{Probability: 0.05, Kind: faultinject.Transient},
//		},
//		Latency:   faultinject.Exponential(20*time.Millisecond, 200*time.Millisecond),
//		RateLimit: &faultinject.RateLimit{QPS: 20, Burst: 10},
//	})
//	// A test that needs one exact failure scripts it: the next GetInstance is throttled.
//	chaos.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Throttle})
//	// ... run the system against chaos ...
//	chaos.SetEnabled(false) // stop the faults, then check that the system converges
//	counts := chaos.Injected().Total()
//	t.Logf("%d calls, %d passed, faults %v", counts.Calls, counts.Passed, counts.Faults)
//
// The kinds of fault are Transient, Timeout, Throttle, Ambiguous, Repeat (a list that
// answers an item again on a page of its own, as a cloud paging by offset does) and Refuse
// (a request the cloud cannot build); see Kind for what each one returns and whether the
// inner client sees the call. Every error the wrapper makes up is a *cloudapi.Error of
// class cloudapi.ErrTransient, cloudapi.ErrThrottled or (Refuse) cloudapi.ErrInvalidRequest,
// exactly like a well-behaved adapter's, and wraps ErrInjected.
//
// # The life of a call
//
// Each call of an operation is numbered k = 1, 2, 3, ... per operation, counting from
// Wrap. Then, while the Client is enabled:
//
//  1. Latency: the operation's Latency (Config.OpLatency, else Config.Latency) is sampled
//     and waited for on Config.Clock. If the context ends first, the call fails with
//     cloudapi.ErrTransient wrapping the context's error; the inner client never sees it.
//  2. Script: if a Fault is queued for the operation (Client.Script), the first one
//     decides the call and is removed; steps 3 and 4 are skipped.
//  3. Rate limit: if Config.RateLimit has no token left, the call is refused with
//     cloudapi.ErrThrottled and the time until the next token as RetryAfter.
//  4. Rules: Config.Rules are tried in order; the first that applies to the operation
//     and fires decides the fault.
//  5. The fault is injected, or, when there is none, the inner client is called and its
//     result and error are returned unchanged.
//
// A disabled Client (SetEnabled(false)) skips all of that and only numbers and counts the
// call. The zero Config injects nothing and adds no latency: the wrapper then changes no
// result and no error.
//
// # Determinism
//
// The random decisions of the k-th call of operation op (its latency sample and whether
// each rule fires) are a pure function of (Config.Seed, op, k), and of the rules in force:
//
//	U(seed, op, k, s) = float64(x >> 11) / 2^53, in [0, 1), where
//	x = m(m(m(m(seed + G) ^ fnv1a64(op)) + k*G) ^ (s+1)*0xd1b54a32d192ed03),
//	m is the splitmix64 finalizer and G = 0x9e3779b97f4a7c15.
//
// The latency sample is Latency.Sample(U(seed, op, k, 0)). Rule i (0-based, counting all
// rules, also those that do not apply to op) fires when U(seed, op, k, 1+i) is below its
// Probability. The rules draw independently, so a rule fires for a share Probability of
// the calls that reach it: with rules of probabilities p0 and p1 for the same operation,
// the first injects into p0 of the calls and the second into (1-p0)*p1.
//
// So the outcomes of the calls of one operation do not depend on the calls of other
// operations, on goroutine scheduling between operations, on wall-clock time, or on
// whether the Client was disabled for a while (disabled calls are numbered too). A test
// that makes its calls from one goroutine is fully reproducible; one that calls an
// operation from several goroutines gets the same outcomes for the first n calls of that
// operation, though which goroutine gets which may vary. Scripted faults are not random:
// they go to the next calls in order. The rate limiter depends on Config.Clock, so it is
// reproducible with a fake clock.
//
// Counters (Client.Injected) record, per operation, the calls made and passed on and the
// faults injected by kind, so that tests can state budgets in calls.
package faultinject
