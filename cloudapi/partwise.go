package cloudapi

import (
	"context"
	"errors"
)

// PartwiseLoadBalancers is the LoadBalancerAPI of a cloud whose API changes a load
// balancer part by part (a call per listener, per target, per setting: Hetzner's, AWS's
// ELBv2, OpenStack's Octavia), made of an adapter's functions over L, its SDK's load
// balancer as read. It refuses a spec before any call (Shape.Check, then Check); it
// creates with Create what the cloud's create call takes and the rest with the steps of
// Shape.Update, as it updates a load balancer that Get read; it answers every create and
// update with the load balancer read again.
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
	// Read is a load balancer as ccmkit reads it.
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
}

var _ LoadBalancerAPI = PartwiseLoadBalancers[struct{}]{}

// GetLoadBalancer reads the load balancer id (Get, Read).
func (p PartwiseLoadBalancers[L]) GetLoadBalancer(ctx context.Context, id string) (*LoadBalancer, error) {
	lb, err := p.Get(ctx, OpGetLoadBalancer, id)
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
	return p.update(ctx, op, lb, spec)
}

// UpdateLoadBalancer checks update.Spec, reads the load balancer (Get), makes what differs
// with the steps and reads it again.
func (p PartwiseLoadBalancers[L]) UpdateLoadBalancer(ctx context.Context, id string, update LoadBalancerUpdate) (*LoadBalancer, error) {
	const op = OpUpdateLoadBalancer
	if err := p.check(op, id, update.Spec); err != nil {
		return nil, err
	}
	lb, err := p.Get(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return p.update(ctx, op, lb, update.Spec)
}

// DeleteLoadBalancer deletes the load balancer id (Delete).
func (p PartwiseLoadBalancers[L]) DeleteLoadBalancer(ctx context.Context, id string) error {
	return p.Delete(ctx, id)
}

// update makes lb, as last read, what spec says with the steps, and reads it again.
func (p PartwiseLoadBalancers[L]) update(ctx context.Context, op Operation, lb L, spec LoadBalancerSpec) (*LoadBalancer, error) {
	cur := p.Read(lb)
	steps, err := p.Steps(ctx, op, lb, spec)
	if err != nil {
		return nil, err
	}
	if err := p.Shape.Update(ctx, op, cur.ID, cur.Spec, spec, steps); err != nil {
		return nil, err
	}
	return p.GetLoadBalancer(ctx, cur.ID)
}

// check refuses, for op on id, what Shape.Check and Check refuse.
func (p PartwiseLoadBalancers[L]) check(op Operation, id string, spec LoadBalancerSpec) error {
	err := p.Shape.Check(op, id, spec)
	if p.Check == nil {
		return err
	}
	if more := p.Check(op, spec); more != nil {
		return NewError(ErrInvalidRequest, op, id, errors.Join(err, more))
	}
	return err
}
