package faultinject

import (
	"maps"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// OpCounts counts what happened to the calls of one operation.
//
// Every call ends in exactly one of: passed to the inner client without a fault (Passed,
// not in Faults), an injected fault (Faults; an Ambiguous fault is in Passed as well,
// because the inner client saw the call), a scripted error (ScriptedErrors), a rate limit
// refusal (RateLimited), or a context that ended during injected latency (Canceled).
type OpCounts struct {
	// Calls is the number of calls made through the Client, enabled or not.
	Calls int
	// Passed is the number of calls passed on to the inner client, including those of
	// Ambiguous faults and those made while the Client was disabled.
	Passed int
	// Faults is the number of faults injected, by kind, from rules and scripts alike. It
	// has no entry for kinds that were not injected, and never one for None.
	Faults map[Kind]int
	// ScriptedErrors is the number of scripted Faults with a non-nil Err that were
	// returned.
	ScriptedErrors int
	// RateLimited is the number of calls refused by Config.RateLimit.
	RateLimited int
	// Canceled is the number of calls whose context ended during injected latency.
	Canceled int
}

// add adds o to c.
func (c *OpCounts) add(o OpCounts) {
	c.Calls += o.Calls
	c.Passed += o.Passed
	c.ScriptedErrors += o.ScriptedErrors
	c.RateLimited += o.RateLimited
	c.Canceled += o.Canceled
	for k, n := range o.Faults {
		if c.Faults == nil {
			c.Faults = make(map[Kind]int)
		}
		c.Faults[k] += n
	}
}

// clone returns a copy of c that shares no memory with it.
func (c OpCounts) clone() OpCounts {
	c.Faults = maps.Clone(c.Faults)
	return c
}

// Counts is a snapshot of the counters of a Client.
type Counts struct {
	// Ops holds the counts of every operation that was called since Wrap or the last
	// Reset; operations that were not called have no entry (and read as zero).
	Ops map[cloudapi.Operation]OpCounts
}

// Total returns the sum of the counts of all operations.
func (c Counts) Total() OpCounts {
	var t OpCounts
	for _, o := range c.Ops {
		t.add(o)
	}
	return t
}
