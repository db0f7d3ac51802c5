package fake

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// MaxNameLength is the longest load balancer name the fake accepts, like the 63-character
// limits of many clouds.
const MaxNameLength = 63

// MaxSessionAffinityTimeout is the longest session affinity timeout the fake accepts,
// Kubernetes' limit for sessionAffinityConfig.clientIP.timeoutSeconds.
const MaxSessionAffinityTimeout = 24 * time.Hour

type lbAPI struct{ c *Cloud }

// GetLoadBalancer returns a copy of the load balancer, or ErrNotFound.
func (a lbAPI) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	c := a.c
	leave, err := c.begin(ctx, cloudapi.OpGetLoadBalancer, id)
	if err != nil {
		return nil, err
	}
	defer leave()
	c.netMu.Lock()
	defer c.netMu.Unlock()
	rec, ok := c.lbs.get(id)
	if !ok {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetLoadBalancer, id, nil)
	}
	c.observe(rec)
	out := rec.lb.Clone()
	return &out, nil
}

// ListLoadBalancers returns a page of copies of the load balancers that carry opts.Tags.
func (a lbAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	c := a.c
	leave, err := c.begin(ctx, cloudapi.OpListLoadBalancers, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	c.netMu.Lock()
	defer c.netMu.Unlock()
	recs, next, err := c.lbs.page(opts.PageToken, c.pageSize(opts.PageSize), func(r *loadBalancer) bool {
		return cloudapi.MatchTags(r.lb.Spec.Tags, opts.Tags)
	})
	if err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpListLoadBalancers, "", err)
	}
	page := &cloudapi.LoadBalancerPage{NextPageToken: next}
	for _, r := range recs {
		c.observe(r)
		page.Items = append(page.Items, r.lb.Clone())
	}
	return page, nil
}

// CreateLoadBalancer validates spec, allocates its addresses and stores it.
func (a lbAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	const op = cloudapi.OpCreateLoadBalancer
	c := a.c
	leave, err := c.begin(ctx, op, "")
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := c.validateSpec(spec); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, spec.Name, err)
	}
	out, err := c.createLoadBalancer(spec)
	if err != nil {
		return nil, err
	}
	if err := saved(op, spec.Name, c.save()); err != nil {
		return nil, err
	}
	c.record(Event{Op: op, ID: out.ID, Spec: spec.Clone()})
	return out, nil
}

func (c *Cloud) createLoadBalancer(spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	const op = cloudapi.OpCreateLoadBalancer
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if err := c.checkTargetGroup(spec); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, spec.Name, err)
	}
	if other, taken := c.lbNames[spec.Name]; taken {
		return nil, cloudapi.NewError(cloudapi.ErrConflict, op, spec.Name, fmt.Errorf("load balancer %s already has the name %q", other, spec.Name))
	}
	c.lbSeq++
	id := fmt.Sprintf("lb-%06d", c.lbSeq)
	addrs, err := c.assignAddresses(id, spec, nil)
	if err != nil {
		c.lbSeq--
		return nil, cloudapi.NewError(classOf(err), op, spec.Name, err)
	}
	rec := &loadBalancer{
		lb: cloudapi.LoadBalancer{
			ID:        id,
			Spec:      spec.Clone(),
			Addresses: addrs,
			Status:    cloudapi.LoadBalancerActive,
		},
		created: c.clock.Now(),
	}
	if d := c.cfg.Hostnames.Domain; d != "" {
		rec.lb.Hostname = id + "." + d
	}
	if c.cfg.Provisioning.Reads > 0 || c.cfg.Provisioning.Duration > 0 {
		rec.lb.Status = cloudapi.LoadBalancerProvisioning
	}
	c.lbs.put(id, rec)
	c.lbNames[spec.Name] = id
	out := rec.lb.Clone()
	return &out, nil
}

// UpdateLoadBalancer replaces the load balancer's spec with update.Spec, as a cloud with
// a whole-object PUT does, and records whether update.Changes described the change.
func (a lbAPI) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	const op = cloudapi.OpUpdateLoadBalancer
	c := a.c
	leave, err := c.begin(ctx, op, id)
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := c.validateSpec(update.Spec); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	out, actual, err := c.updateLoadBalancer(id, update.Spec)
	if err != nil {
		return nil, err
	}
	if err := saved(op, id, c.save()); err != nil {
		return nil, err
	}
	c.record(Event{Op: op, ID: id, Spec: update.Spec.Clone(), Changes: cloneChanges(update.Changes), Actual: actual})
	return out, nil
}

func (c *Cloud) updateLoadBalancer(id string, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, cloudapi.LoadBalancerChanges, error) {
	const op = cloudapi.OpUpdateLoadBalancer
	c.netMu.Lock()
	defer c.netMu.Unlock()
	rec, ok := c.lbs.get(id)
	if !ok {
		return nil, cloudapi.LoadBalancerChanges{}, cloudapi.NewError(cloudapi.ErrNotFound, op, id, nil)
	}
	old := rec.lb.Spec
	if err := c.checkTargetGroup(spec); err != nil {
		return nil, cloudapi.LoadBalancerChanges{}, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	if spec.Internal != old.Internal {
		return nil, cloudapi.LoadBalancerChanges{}, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id,
			errors.New("a load balancer cannot switch between internal and public in place; create a new one"))
	}
	if other, taken := c.lbNames[spec.Name]; taken && other != id {
		return nil, cloudapi.LoadBalancerChanges{}, cloudapi.NewError(cloudapi.ErrConflict, op, id, fmt.Errorf("load balancer %s already has the name %q", other, spec.Name))
	}
	actual := cloudapi.DiffLoadBalancer(old, spec)
	addrs := rec.lb.Addresses
	if actual.IPFamilies || actual.RequestedIPs {
		var err error
		if addrs, err = c.assignAddresses(id, spec, rec.lb.Addresses); err != nil {
			return nil, cloudapi.LoadBalancerChanges{}, cloudapi.NewError(classOf(err), op, id, err)
		}
	}
	delete(c.lbNames, old.Name)
	c.lbNames[spec.Name] = id
	rec.lb.Spec = spec.Clone()
	rec.lb.Addresses = addrs
	rec.saved = nil
	out := rec.lb.Clone()
	return &out, actual, nil
}

// DeleteLoadBalancer removes the load balancer and releases its addresses.
func (a lbAPI) DeleteLoadBalancer(ctx context.Context, id string) error {
	const op = cloudapi.OpDeleteLoadBalancer
	c := a.c
	leave, err := c.begin(ctx, op, id)
	if err != nil {
		return err
	}
	defer leave()
	spec, err := c.deleteLoadBalancer(id)
	if err != nil {
		return err
	}
	if err := saved(op, id, c.save()); err != nil {
		return err
	}
	c.record(Event{Op: op, ID: id, Spec: spec})
	return nil
}

func (c *Cloud) deleteLoadBalancer(id string) (cloudapi.LoadBalancerSpec, error) {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	rec, ok := c.lbs.get(id)
	if !ok {
		return cloudapi.LoadBalancerSpec{}, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteLoadBalancer, id, nil)
	}
	for _, s := range rec.lb.Addresses {
		if a, err := netip.ParseAddr(s); err == nil {
			delete(c.inUse, a)
		}
	}
	delete(c.lbNames, rec.lb.Spec.Name)
	c.lbs.delete(id)
	return rec.lb.Spec.Clone(), nil
}

// observe counts a read of a provisioning load balancer and activates it once the
// configured reads and duration have passed. The caller holds netMu.
func (c *Cloud) observe(rec *loadBalancer) {
	if rec.lb.Status != cloudapi.LoadBalancerProvisioning {
		return
	}
	rec.saved = nil
	if rec.reads >= c.cfg.Provisioning.Reads && c.clock.Now().Sub(rec.created) >= c.cfg.Provisioning.Duration {
		rec.lb.Status = cloudapi.LoadBalancerActive
		return
	}
	rec.reads++
}

// classified is an error of assignAddresses with the cloudapi class it is answered with.
type classified struct {
	class error
	err   error
}

func (e classified) Error() string { return e.err.Error() }
func (e classified) Unwrap() error { return e.err }

func classOf(err error) error {
	var c classified
	if errors.As(err, &c) {
		return c.class
	}
	return cloudapi.ErrTransient
}

// assignAddresses returns the addresses of a load balancer with spec, one per IP family:
// a requested address of that family, else the address of that family it already has
// (current), else a new one from the pool. Addresses of current that are not kept are
// released; on error nothing changes. A cloud of load balancers without addresses
// assigns none. The caller holds netMu.
func (c *Cloud) assignAddresses(id string, spec cloudapi.LoadBalancerSpec, current []string) ([]string, error) {
	if c.cfg.Hostnames.WithoutAddresses {
		return nil, nil // validateSpec refused requested addresses
	}
	families := spec.IPFamilies
	if len(families) == 0 {
		families = []cloudapi.IPFamily{cloudapi.IPv4}
	}
	kind := "public"
	if spec.Internal {
		kind = "internal"
	}
	requested := map[cloudapi.IPFamily]netip.Addr{}
	for _, s := range spec.RequestedIPs {
		a, _ := netip.ParseAddr(s) // validated
		a = a.Unmap()
		f := familyOf(a)
		if !slices.Contains(families, f) {
			return nil, classified{cloudapi.ErrInvalidRequest, fmt.Errorf("requested address %s is %s, but the load balancer's IP families are %v", a, f, families)}
		}
		if _, dup := requested[f]; dup {
			return nil, classified{cloudapi.ErrInvalidRequest, fmt.Errorf("more than one requested %s address", f)}
		}
		if !c.pools[poolKey{spec.Internal, f}].contains(a) {
			return nil, classified{cloudapi.ErrInvalidRequest, fmt.Errorf("requested address %s is outside the %s %s address pools", a, kind, f)}
		}
		if owner, used := c.inUse[a]; used && owner != id {
			return nil, classified{cloudapi.ErrConflict, fmt.Errorf("requested address %s is in use by load balancer %s", a, owner)}
		}
		requested[f] = a
	}
	have := map[cloudapi.IPFamily]netip.Addr{}
	for _, s := range current {
		if a, err := netip.ParseAddr(s); err == nil {
			have[familyOf(a)] = a
		}
	}
	var out []netip.Addr
	var fresh []netip.Addr
	for _, f := range families {
		if a, ok := requested[f]; ok {
			out = append(out, a)
			continue
		}
		if a, ok := have[f]; ok {
			out = append(out, a)
			continue
		}
		p := c.pools[poolKey{spec.Internal, f}]
		if len(p.prefixes) == 0 {
			return nil, classified{cloudapi.ErrInvalidRequest, fmt.Errorf("this cloud has no %s %s address pool", kind, f)}
		}
		a, err := p.allocate(func(a netip.Addr) bool {
			_, used := c.inUse[a]
			return used || slices.Contains(fresh, a)
		})
		if err != nil {
			return nil, classified{cloudapi.ErrConflict, fmt.Errorf("%s %s addresses: %w", kind, f, err)}
		}
		fresh = append(fresh, a)
		out = append(out, a)
	}
	for _, a := range have {
		if !slices.Contains(out, a) {
			delete(c.inUse, a)
		}
	}
	strs := make([]string, len(out))
	for i, a := range out {
		c.inUse[a] = id
		strs[i] = a.String()
	}
	return strs, nil
}

// validateSpec checks what a cloud checks before it accepts a load balancer: what
// cloudapi.LoadBalancerSpec.Validate checks for every cloud, and this one's limits (the
// name's length, known targets, addresses, the application protocols it lacks, the
// session affinity timeout).
func (c *Cloud) validateSpec(s cloudapi.LoadBalancerSpec) error {
	errs := []error{s.Validate()}
	if len(s.Name) > MaxNameLength {
		errs = append(errs, fmt.Errorf("name: %q is longer than %d characters", s.Name, MaxNameLength))
	}
	for i, l := range s.Listeners {
		if lacks := c.cfg.lacks(l.AppProtocol); lacks != "" && l.AppProtocol.Valid() {
			errs = append(errs, fmt.Errorf("listeners[%d]: application protocol %s: %s", i, l.AppProtocol, lacks))
		}
	}
	c.mu.RLock() // once for all targets: a spec may name thousands
	for _, t := range s.Targets {
		if _, known := c.instances.get(t); !known {
			errs = append(errs, fmt.Errorf("targets: no instance %q", t))
		}
	}
	c.mu.RUnlock()
	if len(s.RequestedIPs) > 0 && c.cfg.Hostnames.WithoutAddresses {
		errs = append(errs, errors.New("requestedIPs: this cloud's load balancers have no addresses: they are reached by their hostname"))
	}
	if t := s.SessionAffinityTimeout; s.SessionAffinity != cloudapi.SessionAffinityNone && (t < time.Second || t > MaxSessionAffinityTimeout) {
		errs = append(errs, fmt.Errorf("sessionAffinityTimeout: %s is outside 1s-%s", t, MaxSessionAffinityTimeout))
	}
	return errors.Join(errs...)
}

// Event is one write to a load balancer, as LoadBalancerHistory reports it.
type Event struct {
	// Op is OpCreateLoadBalancer, OpUpdateLoadBalancer or OpDeleteLoadBalancer.
	Op cloudapi.Operation
	// ID is the load balancer's ID.
	ID string
	// Spec is the spec after a create or update, and the last spec before a delete.
	Spec cloudapi.LoadBalancerSpec
	// Changes is what the caller of an update said had changed.
	Changes cloudapi.LoadBalancerChanges
	// Actual is what had changed, compared with the stored spec.
	Actual cloudapi.LoadBalancerChanges
}

// ChangesMatch reports whether an update's Changes described the change it made: false
// means the caller computed its diff against a stale read, and a cloud with fine-grained
// calls would have applied the wrong ones. Always true for a create or delete.
func (e Event) ChangesMatch() bool {
	return reflect.DeepEqual(normalChanges(e.Changes), normalChanges(e.Actual))
}

func normalChanges(c cloudapi.LoadBalancerChanges) cloudapi.LoadBalancerChanges {
	c = cloneChanges(c)
	if len(c.AddListeners) == 0 {
		c.AddListeners = nil
	}
	if len(c.UpdateListeners) == 0 {
		c.UpdateListeners = nil
	}
	if len(c.RemoveListeners) == 0 {
		c.RemoveListeners = nil
	}
	if len(c.AddTargets) == 0 {
		c.AddTargets = nil
	}
	if len(c.RemoveTargets) == 0 {
		c.RemoveTargets = nil
	}
	if len(c.SettingValues) == 0 {
		c.SettingValues = nil
	}
	return c
}

func cloneChanges(c cloudapi.LoadBalancerChanges) cloudapi.LoadBalancerChanges {
	c.AddListeners = cloneListeners(c.AddListeners)
	c.UpdateListeners = cloneListeners(c.UpdateListeners)
	c.RemoveListeners = slices.Clone(c.RemoveListeners)
	c.AddTargets = slices.Clone(c.AddTargets)
	c.RemoveTargets = slices.Clone(c.RemoveTargets)
	c.SettingValues = slices.Clone(c.SettingValues)
	return c
}

// cloneListeners returns deep copies of ls, nil for nil.
func cloneListeners(ls []cloudapi.Listener) []cloudapi.Listener {
	if ls == nil {
		return nil
	}
	out := make([]cloudapi.Listener, len(ls))
	for i, l := range ls {
		out[i] = l.Clone()
	}
	return out
}

// record appends an event of a write that succeeded to the history.
func (c *Cloud) record(e Event) {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	c.history = append(c.history, e)
}

// LoadBalancerHistory returns every write to a load balancer this Cloud made since New or
// Open, oldest first. With a state file, the writes of other Clouds sharing it and those
// before the last start are not in it: the history is not saved.
func (c *Cloud) LoadBalancerHistory() []Event {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	out := make([]Event, len(c.history))
	for i, e := range c.history {
		e.Spec = e.Spec.Clone()
		e.Changes = cloneChanges(e.Changes)
		e.Actual = cloneChanges(e.Actual)
		out[i] = e
	}
	return out
}
