package cloudapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// PartwiseLoadBalancers is the LoadBalancerAPI of a cloud whose API changes a load
// balancer part by part (a call per listener, per target, per setting: Hetzner's, AWS's
// ELBv2, OpenStack's Octavia), made of an adapter's functions over L, its SDK's load
// balancer as read. It refuses a spec before any call (Shape.Check, Refs, then Check),
// and answers an ID that IDs refuses as not found; it creates with Create what the
// cloud's create call takes and the rest with the steps of Shape.Update, as it updates a
// load balancer that Get read (or, with Reads, that it last read when the update's
// Current is that read).
//
// An update costs its steps and at most one read: it answers with the load balancer it
// based the steps on, its targets changed, when every step succeeded and they changed
// nothing but targets (each step waits for the cloud to confirm its change: what the
// cloud assigns, addresses and status, is as read); else, and after a create, with the
// load balancer read again.
type PartwiseLoadBalancers[L any] struct {
	// Shape is what the cloud's load balancers do not keep or support, and keep per
	// listener.
	Shape LoadBalancerShape
	// Check returns what the cloud cannot build of spec beyond Shape.Check, for op (nil:
	// nothing more); an error is ErrInvalidRequest, with Shape.Check's problems.
	Check func(op Operation, spec LoadBalancerSpec) error
	// Get reads the load balancer id for op: an error matching ErrNotFound when the cloud
	// is certain that it does not exist.
	Get func(ctx context.Context, op Operation, id string) (L, error)
	// Read is a load balancer as ccmkit reads it. Targets added or removed must change
	// nothing it reports but Spec.Targets (see the type's doc).
	Read func(L) LoadBalancer
	// List reads one page of the load balancers that carry opts.Tags (as far as the cloud
	// filters: one whose tags, as Read reports them, lack one is left out) and the token of
	// the next page.
	List func(ctx context.Context, opts ListOptions) ([]L, string, error)
	// Create makes a load balancer of spec with the cloud's create call (what it takes);
	// the steps make the rest.
	Create func(ctx context.Context, spec LoadBalancerSpec) (L, error)
	// Steps returns the calls that change current, for op, to desired
	// (LoadBalancerShape.Update); an error refuses the change before any call.
	Steps func(ctx context.Context, op Operation, current L, desired LoadBalancerSpec) (LoadBalancerSteps, error)
	// Delete deletes the load balancer id: an error matching ErrNotFound when there was
	// nothing to delete.
	Delete func(ctx context.Context, id string) error
	// IDs, when set, checks an ID as one the cloud could have given a load balancer
	// (CheckNumericID for numbered ones): one it refuses names none, so a read, update or
	// delete of it answers ErrNotFound before any call, Get and Delete included (a context
	// that has ended answers ErrTransient first: no answer is "not found").
	IDs func(id string) error
	// Refs checks the references of a spec's targets and certificates as ones the cloud
	// takes, a check per kind (CheckNumericID, CheckUUID, PrefixedID): a spec with one it
	// refuses is ErrInvalidRequest before any call, its error saying why. The zero value
	// checks none.
	Refs RefChecks
	// Reads, when set, remembers the load balancers as List and Get last read them (what
	// Keep keeps of each, and a digest of each as Read reads it), until an update or a
	// delete of one: an update whose LoadBalancerUpdate.Current is the load balancer as
	// last read (so the caller's read is fresh, and nothing written since failed) bases
	// its steps on that read instead of calling Get. Nil: every update reads first.
	Reads *LastReads[L]
	// Keep returns what Reads keeps of a load balancer as read: what Steps uses of it,
	// such as its ID and its own record of what the cloud reports as settings, without
	// its listeners and targets, which Steps takes from the changes (nil: all of it).
	Keep func(L) L
}

var _ LoadBalancerAPI = PartwiseLoadBalancers[struct{}]{}

// GetLoadBalancer reads the load balancer id (Get, Read).
func (p PartwiseLoadBalancers[L]) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	lb, err := p.get(ctx, OpGetLoadBalancer, id)
	if err != nil {
		return nil, err
	}
	out := p.Read(lb)
	return &out, nil
}

// ListLoadBalancers reads one page (List) and keeps the load balancers whose tags carry
// opts.Tags.
func (p PartwiseLoadBalancers[L]) ListLoadBalancers(ctx context.Context, opts ListOptions) (*LoadBalancerPage, error) {
	lbs, next, err := p.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	page := &LoadBalancerPage{NextPageToken: next}
	for _, lb := range lbs {
		if v := p.Read(lb); MatchTags(v.Spec.Tags, opts.Tags) {
			page.Items = append(page.Items, v)
			p.remember(lb, v)
		}
	}
	return page, nil
}

// CreateLoadBalancer checks spec, creates the load balancer (Create), makes the rest of
// spec with the steps and reads it again. A create whose steps fail leaves a load
// balancer that ccmkit finds by its tags and completes with the next update.
func (p PartwiseLoadBalancers[L]) CreateLoadBalancer(ctx context.Context, spec LoadBalancerSpec) (*LoadBalancer, error) {
	const op = OpCreateLoadBalancer
	if err := p.check(op, "", spec); err != nil {
		return nil, err
	}
	lb, err := p.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return p.update(ctx, op, p.Read(lb), lb, spec, false)
}

// UpdateLoadBalancer checks update.Spec, reads the load balancer (Get; with Reads, not
// when update.Current is its last read), makes what differs with the steps and answers it
// (see the type's doc).
func (p PartwiseLoadBalancers[L]) UpdateLoadBalancer(ctx context.Context, id string, update LoadBalancerUpdate) (*LoadBalancer, error) {
	const op = OpUpdateLoadBalancer
	if err := p.check(op, id, update.Spec); err != nil {
		return nil, err
	}
	if lb, ok := p.Reads.base(id, update.Current); ok {
		return p.update(ctx, op, update.Current.Clone(), lb, update.Spec, true)
	}
	lb, err := p.get(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return p.update(ctx, op, p.Read(lb), lb, update.Spec, true)
}

// DeleteLoadBalancer deletes the load balancer id (Delete).
func (p PartwiseLoadBalancers[L]) DeleteLoadBalancer(ctx context.Context, id string) error {
	if err := p.known(ctx, OpDeleteLoadBalancer, id); err != nil {
		return err
	}
	p.Reads.forget(id)
	return p.Delete(ctx, id)
}

// get reads the load balancer id for op (Get), an ID that IDs refuses as not found, and
// remembers it (Reads).
func (p PartwiseLoadBalancers[L]) get(ctx context.Context, op Operation, id string) (L, error) {
	var none L
	if err := p.known(ctx, op, id); err != nil {
		return none, err
	}
	lb, err := p.Get(ctx, op, id)
	if err != nil {
		p.Reads.forget(id)
		return none, err
	}
	if p.Reads != nil {
		p.remember(lb, p.Read(lb))
	}
	return lb, nil
}

// remember notes lb, read as v, as the load balancer last read (Reads, Keep).
func (p PartwiseLoadBalancers[L]) remember(lb L, v LoadBalancer) {
	if p.Reads == nil {
		return
	}
	if p.Keep != nil {
		lb = p.Keep(lb)
	}
	p.Reads.remember(lb, v)
}

// known refuses, for op, an ID that IDs refuses: ErrNotFound, or ErrTransient when ctx
// has ended.
func (p PartwiseLoadBalancers[L]) known(ctx context.Context, op Operation, id string) error {
	if p.IDs == nil {
		return nil
	}
	bad := p.IDs(id)
	switch {
	case bad == nil:
		return nil
	case ctx.Err() != nil:
		return NewError(ErrTransient, op, id, ctx.Err())
	}
	return NewError(ErrNotFound, op, id, fmt.Errorf("not an ID the cloud gives its load balancers: %w", bad))
}

// update makes lb, as last read (read as cur), what spec says with the steps, and
// answers it: with targetsRead, when the steps changed targets alone, cur with its
// targets changed; else the load balancer read again.
func (p PartwiseLoadBalancers[L]) update(ctx context.Context, op Operation, cur LoadBalancer, lb L, spec LoadBalancerSpec, targetsRead bool) (*LoadBalancer, error) {
	p.Reads.forget(cur.ID) // written from here on: no longer as read
	steps, err := p.Steps(ctx, op, lb, spec)
	if err != nil {
		return nil, err
	}
	if err := p.Shape.Update(ctx, op, cur.ID, cur.Spec, spec, steps); err != nil {
		return nil, err
	}
	if c := p.Shape.Plan(cur.Spec, spec); targetsRead && targetsOnly(c) {
		out := cur.Clone()
		out.Spec.Targets = append(slices.DeleteFunc(out.Spec.Targets, func(t string) bool { return slices.Contains(c.RemoveTargets, t) }), c.AddTargets...)
		return &out, nil
	}
	return p.GetLoadBalancer(ctx, cur.ID)
}

// targetsOnly reports whether c changes nothing but targets (or nothing).
func targetsOnly(c LoadBalancerChanges) bool {
	c.AddTargets, c.RemoveTargets = nil, nil
	return c.Empty()
}

// check refuses, for op on id, what Shape.Check, Refs and Check refuse.
func (p PartwiseLoadBalancers[L]) check(op Operation, id string, spec LoadBalancerSpec) error {
	err := p.Shape.Check(op, id, spec)
	more := []error{p.Refs.Check(spec)}
	if p.Check != nil {
		more = append(more, p.Check(op, spec))
	}
	more = slices.DeleteFunc(more, func(e error) bool { return e == nil })
	if len(more) == 0 {
		return err
	}
	var shaped *Error
	if errors.As(err, &shaped) {
		more = append([]error{shaped.Err}, more...) // one "op id: invalid request:" for all
	}
	return NewError(ErrInvalidRequest, op, id, errors.Join(more...))
}

// LastReads remembers, by ID, the load balancers of a PartwiseLoadBalancers as it last
// read them (its Reads): what its Keep keeps of each, and a digest of each as read, to
// know an update's LoadBalancerUpdate.Current for that read. The zero value is empty and
// ready; it is safe for concurrent use. It holds the load balancers the API last listed
// or read and has not written or deleted since: one deleted elsewhere stays until it is
// read again.
type LastReads[L any] struct {
	mu sync.Mutex
	m  map[string]lastRead[L]
}

// lastRead is a load balancer as last read: what Keep kept, and the digest of the read.
type lastRead[L any] struct {
	kept   L
	digest [sha256.Size]byte
}

// remember notes kept, read as v, as the load balancer v.ID last read.
func (r *LastReads[L]) remember(kept L, v LoadBalancer) {
	d := digest(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]lastRead[L]{}
	}
	r.m[v.ID] = lastRead[L]{kept: kept, digest: d}
}

// forget drops the load balancer id; a nil r does nothing.
func (r *LastReads[L]) forget(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// base returns what was kept of the load balancer id as last read when current is that
// read; ok is false otherwise, and with a nil r or current.
func (r *LastReads[L]) base(id string, current *LoadBalancer) (kept L, ok bool) {
	if r == nil || current == nil || current.ID != id {
		return kept, false
	}
	d := digest(*current)
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.m[id]
	if !ok || last.digest != d {
		return kept, false
	}
	return last.kept, true
}

// digest is a digest of lb: equal for equal load balancers (its JSON, whose maps are
// sorted), different otherwise.
func digest(lb LoadBalancer) [sha256.Size]byte {
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(lb) // a LoadBalancer always encodes; a hash never fails a write
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}
