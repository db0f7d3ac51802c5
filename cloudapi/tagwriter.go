package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// TagWriter writes ccmkit's tags of a resource on a cloud whose tags are a set of plain
// strings written through an API of their own, one call per tag, a tag made before its
// first use (DigitalOcean's tags: create a tag, tag resources with it, untag them). Write
// turns the tags a resource should carry into those calls. Set the functions and Rules;
// use it by pointer: it is safe for concurrent use.
//
// Two writes of one resource that run at once could each diff against the set it read,
// each attach its value and each detach the value it read, leaving both values of a key
// (which DecodeTagSet reads as none). Write prevents that within the process: the writes
// of one resource take turns, and each reads the set afresh in its turn, so the last
// leaves its value, alone. Writers in other processes are not seen.
type TagWriter struct {
	// Rules are the cloud's tag syntax (EncodeTagSetKeeping).
	Rules TagSetRules
	// Read reads the tags that the resource id carries now.
	Read func(ctx context.Context, id string) ([]string, error)
	// Create makes tag: nil, or an error matching ErrConflict when it exists. Nil for a
	// cloud that makes a tag on its first attach.
	Create func(ctx context.Context, tag string) error
	// Attach tags the resource id with tag.
	Attach func(ctx context.Context, id, tag string) error
	// Detach removes tag from the resource id.
	Detach func(ctx context.Context, id, tag string) error

	mu    sync.Mutex
	turns map[string]*tagTurn
}

// tagTurn is the turn of the writes of one resource: the token its writer holds, and how
// many writes hold or wait for it.
type tagTurn struct {
	token   chan struct{}
	waiting int
}

// Write makes the tags of the resource id carry tags, for op: in its turn, it reads the
// resource's set (Read), computes the set to write (EncodeTagSetKeeping: foreign tags
// kept, one value per key ccmkit writes), then creates (Create) and attaches each tag
// missing, and then detaches each tag too many: a resource never lacks a tag it keeps
// between the two. Tags the rules cannot carry are ErrInvalidRequest before any write.
// An error of a call is returned wrapped, naming the tag; the calls before it are made.
// A ctx that ends while it waits for its turn ends it with ErrTransient.
func (w *TagWriter) Write(ctx context.Context, op Operation, id string, tags map[string]string) error {
	if _, err := EncodeTagSet(tags, w.Rules); err != nil {
		return NewError(ErrInvalidRequest, op, id, err)
	}
	release, err := w.turn(ctx, id)
	if err != nil {
		return NewError(ErrTransient, op, id, fmt.Errorf("waiting for the other tag writes of the resource: %w", err))
	}
	defer release()
	current, err := w.Read(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the tags: %w", err)
	}
	want, err := EncodeTagSetKeeping(tags, current, w.Rules)
	if err != nil {
		return NewError(ErrInvalidRequest, op, id, err)
	}
	for _, t := range want {
		if slices.Contains(current, t) {
			continue
		}
		if w.Create != nil {
			if err := w.Create(ctx, t); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("creating tag %q: %w", t, err)
			}
		}
		if err := w.Attach(ctx, id, t); err != nil {
			return fmt.Errorf("attaching tag %q: %w", t, err)
		}
	}
	for _, t := range current {
		if !slices.Contains(want, t) {
			if err := w.Detach(ctx, id, t); err != nil {
				return fmt.Errorf("detaching tag %q: %w", t, err)
			}
		}
	}
	return nil
}

// turn waits until the writes of id are the caller's, and returns the function that
// ends its turn; an error when ctx ends first.
func (w *TagWriter) turn(ctx context.Context, id string) (func(), error) {
	w.mu.Lock()
	if w.turns == nil {
		w.turns = map[string]*tagTurn{}
	}
	t := w.turns[id]
	if t == nil {
		t = &tagTurn{token: make(chan struct{}, 1)}
		t.token <- struct{}{}
		w.turns[id] = t
	}
	t.waiting++
	w.mu.Unlock()
	done := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if t.waiting--; t.waiting == 0 {
			delete(w.turns, id)
		}
	}
	select {
	case <-t.token:
		return func() { t.token <- struct{}{}; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
