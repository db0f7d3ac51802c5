package fake

import (
	"maps"
	"slices"

	"github.com/ccmkit/ccmkit/cloudapi"
)

var operations = cloudapi.Operations()

func opIndex(op cloudapi.Operation) int {
	i := slices.Index(operations, op)
	if i < 0 {
		panic("fake: unknown operation " + string(op)) // a programming error in this package
	}
	return i
}

// Calls counts the calls of each operation the cloud received, failed ones included.
type Calls map[cloudapi.Operation]int64

// Reads returns the number of calls of read operations.
func (c Calls) Reads() int64 {
	var n int64
	for op, v := range c {
		if !op.IsWrite() {
			n += v
		}
	}
	return n
}

// Writes returns the number of calls of write operations.
func (c Calls) Writes() int64 {
	var n int64
	for op, v := range c {
		if op.IsWrite() {
			n += v
		}
	}
	return n
}

// Total returns the number of calls.
func (c Calls) Total() int64 { return c.Reads() + c.Writes() }

// Sub returns the calls made since before was taken: c minus before, per operation.
func (c Calls) Sub(before Calls) Calls {
	out := maps.Clone(c)
	for op, v := range before {
		out[op] -= v
		if out[op] == 0 {
			delete(out, op)
		}
	}
	return out
}

// Calls returns how often each operation was called since New or the last ResetCalls.
// Operations never called are absent.
func (c *Cloud) Calls() Calls {
	out := Calls{}
	for i, op := range operations {
		if n := c.calls[i].Load(); n > 0 {
			out[op] = n
		}
	}
	return out
}

// ResetCalls sets every call counter to zero.
func (c *Cloud) ResetCalls() {
	for i := range c.calls {
		c.calls[i].Store(0)
	}
}
