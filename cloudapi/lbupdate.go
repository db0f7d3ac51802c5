package cloudapi

import (
	"context"
	"fmt"
	"slices"
)

// LoadBalancerSteps are the calls of a cloud whose API changes a load balancer part by
// part (a call to add a listener, one to remove a target, ...): one function per kind of
// change, each making one change (one call, waited for when the cloud answers with an
// action). LoadBalancerShape.Update finds the changes and calls them in order. A nil
// function means the cloud cannot make that kind of change in place.
type LoadBalancerSteps struct {
	// Properties writes the name, the tags and the settings of desired, once, when any of
	// them differs (a cloud that records the settings asked for as tags writes them here,
	// see TagsWithSettingValues).
	Properties func(ctx context.Context) error
	// Setting applies one setting that differs, after Properties: value is the desired
	// one, empty when the setting is no longer asked for.
	Setting func(ctx context.Context, name, value string) error
	// RemoveListener removes the listener of key.
	RemoveListener func(ctx context.Context, key ListenerKey) error
	// AddListener adds l, with the health check and PROXY protocol of desired; on a cloud
	// that keeps the health check per listener, l.HealthCheck is the listener's (its own,
	// else desired's: LoadBalancerSpec.ListenerHealthCheck), which Update sets.
	AddListener func(ctx context.Context, l Listener) error
	// UpdateListener rewrites the existing listener of l's key as l, with the health check
	// and PROXY protocol of desired, as AddListener.
	UpdateListener func(ctx context.Context, l Listener) error
	// HealthCheck writes desired's health check, for a cloud that keeps one per load
	// balancer (a cloud that keeps it per listener, LoadBalancerShape.PerListener,
	// rewrites the listeners instead).
	HealthCheck func(ctx context.Context) error
	// ProxyProtocol writes desired's PROXY protocol, for a cloud that keeps it per load
	// balancer (as HealthCheck).
	ProxyProtocol func(ctx context.Context) error
	// SourceRanges writes desired's source ranges in place (a cloud whose load balancers
	// have a firewall of their own: its rules), once, when the set differs; an empty set
	// allows everyone. Nil: the cloud cannot change them in place.
	SourceRanges func(ctx context.Context) error
	// RemoveTarget removes the target instance id.
	RemoveTarget func(ctx context.Context, id string) error
	// AddTarget adds the target instance id.
	AddTarget func(ctx context.Context, id string) error
}

// Plan returns what must change for a load balancer that the cloud reports as current to
// be what desired says: DiffLoadBalancer(s.Comparable(current, desired), desired), where,
// for a cloud that keeps the health check or the PROXY protocol per listener
// (PerListener), a change of either also rewrites every desired listener that is not new
// (UpdateListeners then holds them all, sorted).
func (s LoadBalancerShape) Plan(current, desired LoadBalancerSpec) LoadBalancerChanges {
	c := DiffLoadBalancer(s.Comparable(current, desired), desired)
	if (c.HealthCheck && s.keepsPerListener(FeatureHealthCheck)) || (c.ProxyProtocol && s.keepsPerListener(FeatureProxyProtocol)) {
		c.UpdateListeners = slices.DeleteFunc(cloneListeners(desired.Listeners), func(l Listener) bool {
			return slices.ContainsFunc(c.AddListeners, func(n Listener) bool { return n.Key() == l.Key() })
		})
		sortListeners(c.UpdateListeners)
	}
	return c
}

// Update makes a load balancer that the cloud reports as current what desired says, with
// steps: it plans the changes (Plan), then calls, stopping at the first error, which it
// returns as it is: Properties; Setting for each setting that differs, by name;
// RemoveListener, AddListener, UpdateListener, each by key; HealthCheck; ProxyProtocol;
// SourceRanges; RemoveTarget, AddTarget, each by ID. Removals come before additions, so a
// cloud that caps the listeners or targets of a load balancer holds the desired ones. A
// change that no step can make (a nil step, or Internal, TargetGroup, IPFamilies,
// RequestedIPs or SessionAffinity, which have none) is ErrInvalidRequest for op on id,
// naming each, before any step is called.
func (s LoadBalancerShape) Update(ctx context.Context, op Operation, id string, current, desired LoadBalancerSpec, steps LoadBalancerSteps) error {
	c := s.Plan(current, desired)
	hcPerListener, proxyPerListener := s.keepsPerListener(FeatureHealthCheck), s.keepsPerListener(FeatureProxyProtocol)
	var cannot []string
	for _, part := range []struct {
		name     string
		changed  bool
		stepless bool
	}{
		{"name, tags or settings", c.Name || c.Tags || len(c.SettingValues) > 0, steps.Properties == nil},
		{"settings", len(c.SettingValues) > 0, steps.Setting == nil},
		{"internal", c.Internal, true},
		{"listeners removed", len(c.RemoveListeners) > 0, steps.RemoveListener == nil},
		{"listeners added", len(c.AddListeners) > 0, steps.AddListener == nil},
		{"listeners changed", len(c.UpdateListeners) > 0, steps.UpdateListener == nil},
		{"health check", c.HealthCheck && !hcPerListener, steps.HealthCheck == nil},
		{"PROXY protocol", c.ProxyProtocol && !proxyPerListener, steps.ProxyProtocol == nil},
		{"targets removed", len(c.RemoveTargets) > 0, steps.RemoveTarget == nil},
		{"targets added", len(c.AddTargets) > 0, steps.AddTarget == nil},
		{"target group", c.TargetGroup, true},
		{"source ranges", c.SourceRanges, steps.SourceRanges == nil},
		{"IP families", c.IPFamilies, true},
		{"requested IPs", c.RequestedIPs, true},
		{"session affinity", c.SessionAffinity, true},
	} {
		if part.changed && part.stepless {
			cannot = append(cannot, part.name)
		}
	}
	if len(cannot) > 0 {
		return NewError(ErrInvalidRequest, op, id, fmt.Errorf("the cloud cannot change %v of a load balancer in place", cannot))
	}
	var err error
	step := func(f func() error) { // the steps after a failed one are not called
		if err == nil {
			err = f()
		}
	}
	if c.Name || c.Tags || len(c.SettingValues) > 0 {
		step(func() error { return steps.Properties(ctx) })
	}
	for _, name := range c.SettingValues {
		step(func() error { return steps.Setting(ctx, name, desired.SettingValues[name]) })
	}
	for _, k := range c.RemoveListeners {
		step(func() error { return steps.RemoveListener(ctx, k) })
	}
	own := func(l Listener) Listener { // the listener's health check, where the cloud keeps it per listener
		if hcPerListener {
			l.HealthCheck = desired.ListenerHealthCheck(l).clone()
		}
		return l
	}
	for _, l := range c.AddListeners {
		step(func() error { return steps.AddListener(ctx, own(l)) })
	}
	for _, l := range c.UpdateListeners {
		step(func() error { return steps.UpdateListener(ctx, own(l)) })
	}
	if c.HealthCheck && !hcPerListener {
		step(func() error { return steps.HealthCheck(ctx) })
	}
	if c.ProxyProtocol && !proxyPerListener {
		step(func() error { return steps.ProxyProtocol(ctx) })
	}
	if c.SourceRanges {
		step(func() error { return steps.SourceRanges(ctx) })
	}
	for _, t := range c.RemoveTargets {
		step(func() error { return steps.RemoveTarget(ctx, t) })
	}
	for _, t := range c.AddTargets {
		step(func() error { return steps.AddTarget(ctx, t) })
	}
	return err
}

// keepsPerListener reports whether the cloud keeps f per listener.
func (s LoadBalancerShape) keepsPerListener(f Feature) bool { return slices.Contains(s.PerListener, f) }

// ListenerParts are the parts that a cloud keeping them per listener
// (LoadBalancerShape.PerListener) reports for one listener.
type ListenerParts struct {
	// HealthCheck is the listener's health check.
	HealthCheck *HealthCheck
	// ProxyProtocol is the listener's PROXY protocol.
	ProxyProtocol bool
}

// JoinListenerParts sets spec's HealthCheck and ProxyProtocol from parts, the parts of each
// of its listeners as the cloud reports them, in the order of spec.Listeners: those every
// listener shares. When the listeners do not all share them, the health check is nil and
// each listener has its own (Listener.HealthCheck), and the PROXY protocol is the first
// listener's, so that a desired spec differs where a listener's health check or the PROXY
// protocol does, and the next update rewrites those listeners (Plan). Without listeners, spec
// is left as it is.
func JoinListenerParts(spec *LoadBalancerSpec, parts []ListenerParts) {
	if len(parts) == 0 {
		return
	}
	spec.HealthCheck, spec.ProxyProtocol = parts[0].HealthCheck, parts[0].ProxyProtocol
	for _, p := range parts[1:] {
		if !equalHealthChecks(p.HealthCheck, spec.HealthCheck) || p.ProxyProtocol != spec.ProxyProtocol {
			spec.HealthCheck = nil
			break
		}
	}
	if spec.HealthCheck != nil || len(parts) != len(spec.Listeners) {
		return
	}
	for i, p := range parts {
		spec.Listeners[i].HealthCheck = p.HealthCheck.clone()
	}
}
