package throttlenote

import (
	"context"
	"sync/atomic"
)

// Note counts the throttled answers and throttle holds seen by the calls made with the
// context With returned. It is safe for concurrent use; its zero value counts nothing yet.
type Note struct{ n atomic.Int64 }

// key is the context key of the Note.
type key struct{}

// With returns a context whose calls record into the returned Note, and the Note. A Note
// already in ctx is replaced for the calls made with the new context.
func With(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, key{}, n), n
}

// Record counts one throttled answer or wait for a throttle hold into ctx's Note, if ctx
// has one.
func Record(ctx context.Context) {
	if n, ok := ctx.Value(key{}).(*Note); ok {
		n.n.Add(1)
	}
}

// Count returns how many throttled answers and throttle holds were recorded.
func (n *Note) Count() int64 { return n.n.Load() }
