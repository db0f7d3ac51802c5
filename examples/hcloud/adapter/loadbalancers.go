package adapter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// settingLabel is the prefix of the tags that record the settings a load balancer was
// asked for: the API reports a type, an algorithm and a location on every load balancer,
// and the adapter reports a setting only when it was asked for (with the cloud's value).
const settingLabel = "settings.ccmkit.io/"

// lbAPI is cloudapi.LoadBalancerAPI over the project's load balancers.
type lbAPI struct{ c *Client }

// lbID parses a load balancer ID; anything but a positive number names none.
func lbID(ctx context.Context, op cloudapi.Operation, id string) (*hcloud.LoadBalancer, error) {
	if err := ctx.Err(); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != id {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, op, id, errors.New("not a Hetzner load balancer ID"))
	}
	return &hcloud.LoadBalancer{ID: n}, nil
}

func (a lbAPI) get(ctx context.Context, op cloudapi.Operation, id string) (*hcloud.LoadBalancer, error) {
	ref, err := lbID(ctx, op, id)
	if err != nil {
		return nil, err
	}
	lb, resp, err := a.c.api.LoadBalancer.GetByID(ctx, ref.ID)
	switch {
	case err != nil:
		return nil, errorOf(op, id, resp, err)
	case lb == nil:
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, op, id, errors.New("no such load balancer"))
	}
	return lb, nil
}

// GetLoadBalancer reads one load balancer.
func (a lbAPI) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	lb, err := a.get(ctx, cloudapi.OpGetLoadBalancer, id)
	if err != nil {
		return nil, err
	}
	out := a.toLB(lb)
	return &out, nil
}

// ListLoadBalancers returns one page, by ID, of the load balancers whose labels carry
// opts.Tags; the page token is the page number.
func (a lbAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	page, perPage, selector, err := listArgs(cloudapi.OpListLoadBalancers, opts)
	if err != nil {
		return nil, err
	}
	lbs, resp, err := a.c.api.LoadBalancer.List(ctx, hcloud.LoadBalancerListOpts{
		ListOpts: hcloud.ListOpts{Page: page, PerPage: perPage, LabelSelector: selector}, Sort: []string{"id:asc"}})
	if err != nil {
		return nil, errorOf(cloudapi.OpListLoadBalancers, "", resp, err)
	}
	out := &cloudapi.LoadBalancerPage{}
	for _, lb := range lbs {
		if v := a.toLB(lb); cloudapi.MatchTags(v.Spec.Tags, opts.Tags) {
			out.Items = append(out.Items, v)
		}
	}
	out.NextPageToken = nextPage(resp, page)
	return out, nil
}

// CreateLoadBalancer creates the load balancer with its labels and targets in one call,
// then adds its services as UpdateLoadBalancer does (a create whose services fail is
// found by its tags and completed by the next update).
func (a lbAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	const op = cloudapi.OpCreateLoadBalancer
	if err := a.check(op, "", spec); err != nil {
		return nil, err
	}
	opts := hcloud.LoadBalancerCreateOpts{
		Name:             spec.Name,
		LoadBalancerType: &hcloud.LoadBalancerType{Name: cmp.Or(spec.Settings[SettingType], "lb11")},
		Algorithm:        &hcloud.LoadBalancerAlgorithm{Type: hcloud.LoadBalancerAlgorithmType(cmp.Or(spec.Settings[SettingAlgorithm], "round_robin"))},
		NetworkZone:      hcloud.NetworkZone(spec.Settings[SettingNetworkZone]),
		PublicInterface:  hcloud.Ptr(!spec.Internal),
	}
	if loc := cmp.Or(spec.Settings[SettingLocation], a.c.cfg.Location); opts.NetworkZone == "" || spec.Settings[SettingLocation] != "" {
		if loc == "" {
			return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, "", errors.New(
				"no location: annotate location or network-zone, or set one in the cloud config's loadBalancer.settings or the hcloud section's location"))
		}
		opts.Location, opts.NetworkZone = &hcloud.Location{Name: loc}, "" // the location decides the zone
	}
	var err error
	if opts.Labels, err = labelsOf(spec, nil); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, "", err)
	}
	if spec.Internal || a.c.cfg.UsePrivateIP {
		if opts.Network, err = a.c.network(ctx, op); err != nil {
			return nil, err
		}
	}
	for _, t := range spec.Targets {
		opts.Targets = append(opts.Targets, hcloud.LoadBalancerCreateOptsTarget{Type: hcloud.LoadBalancerTargetTypeServer,
			Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: number(t)}}, UsePrivateIP: hcloud.Ptr(a.c.cfg.UsePrivateIP)})
	}
	res, resp, err := a.c.api.LoadBalancer.Create(ctx, opts)
	if err != nil {
		return nil, errorOf(op, "", resp, err)
	}
	if err := a.c.wait(ctx, op, "", res.Action); err != nil {
		return nil, err
	}
	return a.apply(ctx, op, res.LoadBalancer, spec)
}

// UpdateLoadBalancer reads the load balancer and makes what differs as apply does.
func (a lbAPI) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	const op = cloudapi.OpUpdateLoadBalancer
	if err := a.check(op, id, update.Spec); err != nil {
		return nil, err
	}
	cur, err := a.get(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return a.apply(ctx, op, cur, update.Spec)
}

// apply makes cur (as last read) what want says with one call per difference, each
// action waited for before the next (the API locks a load balancer while an action
// runs), and reads it back.
func (a lbAPI) apply(ctx context.Context, op cloudapi.Operation, cur *hcloud.LoadBalancer, want cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	id, have := strconv.FormatInt(cur.ID, 10), a.toLB(cur).Spec
	c := cloudapi.DiffLoadBalancer(Shape.Comparable(have, want), want)
	loc, zone := want.Settings[SettingLocation], want.Settings[SettingNetworkZone]
	if c.Internal || cur.Location != nil && (loc != "" && loc != cur.Location.Name || zone != "" && zone != string(cur.Location.NetworkZone)) {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, errors.New("internal, location and network zone cannot change in place"))
	}
	lbs := a.c.api.LoadBalancer
	if c.Name || c.Tags || c.Settings != nil {
		labels, err := labelsOf(want, cur.Labels)
		if err != nil {
			return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
		}
		if _, resp, err := lbs.Update(ctx, cur, hcloud.LoadBalancerUpdateOpts{Name: want.Name, Labels: labels}); err != nil {
			return nil, errorOf(op, id, resp, err)
		}
	}
	var calls []func() (*hcloud.Action, *hcloud.Response, error)
	call := func(f func() (*hcloud.Action, *hcloud.Response, error)) { calls = append(calls, f) }
	if t := want.Settings[SettingType]; t != "" && (cur.LoadBalancerType == nil || t != cur.LoadBalancerType.Name) {
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.ChangeType(ctx, cur, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: t}})
		})
	}
	if alg := hcloud.LoadBalancerAlgorithmType(want.Settings[SettingAlgorithm]); alg != "" && alg != cur.Algorithm.Type {
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.ChangeAlgorithm(ctx, cur, hcloud.LoadBalancerChangeAlgorithmOpts{Type: alg})
		})
	}
	for _, k := range c.RemoveListeners {
		call(func() (*hcloud.Action, *hcloud.Response, error) { return lbs.DeleteService(ctx, cur, int(k.Port)) })
	}
	for _, l := range c.AddListeners {
		s := serviceOf(l, want)
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.AddService(ctx, cur, hcloud.LoadBalancerAddServiceOpts{Protocol: s.Protocol, ListenPort: &s.ListenPort,
				DestinationPort: &s.DestinationPort, Proxyprotocol: &s.Proxyprotocol, HTTP: httpOf[hcloud.LoadBalancerAddServiceOptsHTTP](s),
				HealthCheck: addHealthCheck(s.HealthCheck)})
		})
	}
	changed := c.UpdateListeners
	if c.HealthCheck || c.ProxyProtocol { // both are per service in Hetzner's API
		changed = slices.DeleteFunc(slices.Clone(want.Listeners), func(l cloudapi.Listener) bool {
			return slices.ContainsFunc(c.AddListeners, func(n cloudapi.Listener) bool { return n.Key() == l.Key() })
		})
	}
	for _, l := range changed {
		s := serviceOf(l, want)
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.UpdateService(ctx, cur, s.ListenPort, hcloud.LoadBalancerUpdateServiceOpts{Protocol: s.Protocol,
				DestinationPort: &s.DestinationPort, Proxyprotocol: &s.Proxyprotocol, HTTP: httpOf[hcloud.LoadBalancerUpdateServiceOptsHTTP](s),
				HealthCheck: updateHealthCheck(s.HealthCheck)})
		})
	}
	for _, t := range c.RemoveTargets {
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.RemoveServerTarget(ctx, cur, &hcloud.Server{ID: number(t)})
		})
	}
	for _, t := range c.AddTargets {
		call(func() (*hcloud.Action, *hcloud.Response, error) {
			return lbs.AddServerTarget(ctx, cur, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: number(t)}, UsePrivateIP: hcloud.Ptr(a.c.cfg.UsePrivateIP)})
		})
	}
	for _, f := range calls {
		action, resp, err := f()
		if err != nil {
			return nil, errorOf(op, id, resp, err)
		}
		if err := a.c.wait(ctx, op, id, action); err != nil {
			return nil, err
		}
	}
	return a.GetLoadBalancer(ctx, id)
}

// DeleteLoadBalancer deletes the load balancer and waits for the delete's action; the
// API's not_found answer to the delete of one ID is certain.
func (a lbAPI) DeleteLoadBalancer(ctx context.Context, id string) error {
	const op = cloudapi.OpDeleteLoadBalancer
	ref, err := lbID(ctx, op, id)
	if err != nil {
		return err
	}
	res, resp, err := a.c.api.LoadBalancer.DeleteWithResult(ctx, ref)
	switch {
	case hcloud.IsError(err, hcloud.ErrorCodeNotFound):
		return cloudapi.NewError(cloudapi.ErrNotFound, op, id, err)
	case err != nil:
		return errorOf(op, id, resp, err)
	}
	return a.c.wait(ctx, op, id, res.Action)
}

// check refuses what Hetzner's load balancers cannot build before any call.
func (a lbAPI) check(op cloudapi.Operation, id string, spec cloudapi.LoadBalancerSpec) error {
	errs := []error{Shape.Check(op, id, spec)}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if hc := spec.HealthCheck; hc != nil && (hc.Interval%time.Second != 0 || hc.Timeout%time.Second != 0) {
		bad("health check interval %s and timeout %s: Hetzner keeps whole seconds", hc.Interval, hc.Timeout)
	}
	for _, ref := range slices.Concat(spec.Targets, slices.Concat(slices.Collect(func(yield func([]string) bool) {
		for _, l := range spec.Listeners {
			yield(l.Certificates)
		}
	})...)) {
		if n, err := strconv.ParseInt(ref, 10, 64); err != nil || n < 1 {
			bad("%q is not a Hetzner server or certificate ID", ref)
		}
	}
	if spec.TargetGroup != "" {
		bad("target groups are not Hetzner's")
	}
	for name := range spec.Settings {
		if !slices.ContainsFunc(Settings, func(d loadbalancer.Setting) bool { return d.Name == name }) {
			bad("setting %q is not one of the adapter's", name)
		}
	}
	if spec.Settings[SettingLocation] != "" && spec.Settings[SettingNetworkZone] != "" && op == cloudapi.OpCreateLoadBalancer {
		bad("set location or network-zone, not both")
	}
	if err := errors.Join(errs...); err != nil {
		return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	return nil
}

// serviceOf is the Hetzner service of a listener of spec: its health check and PROXY
// protocol are the spec's.
func serviceOf(l cloudapi.Listener, spec cloudapi.LoadBalancerSpec) hcloud.LoadBalancerService {
	s := hcloud.LoadBalancerService{Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: int(l.Port),
		DestinationPort: int(l.TargetPort), Proxyprotocol: spec.ProxyProtocol}
	switch l.AppProtocol {
	case cloudapi.AppProtocolHTTP:
		s.Protocol = hcloud.LoadBalancerServiceProtocolHTTP
	case cloudapi.AppProtocolHTTPS:
		s.Protocol = hcloud.LoadBalancerServiceProtocolHTTPS
	}
	for _, cert := range l.Certificates {
		s.HTTP.Certificates = append(s.HTTP.Certificates, &hcloud.Certificate{ID: number(cert)})
	}
	hc := spec.HealthCheck
	if hc == nil {
		hc = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: l.TargetPort}
	}
	s.HealthCheck = hcloud.LoadBalancerServiceHealthCheck{Protocol: hcloud.LoadBalancerServiceProtocolTCP, Port: int(hc.Port),
		Interval: hc.Interval, Timeout: hc.Timeout, Retries: int(hc.UnhealthyThreshold)}
	if hc.Protocol != cloudapi.HealthCheckTCP {
		s.HealthCheck.Protocol = hcloud.LoadBalancerServiceProtocolHTTP
		s.HealthCheck.HTTP = &hcloud.LoadBalancerServiceHealthCheckHTTP{Path: hc.Path, TLS: hc.Protocol == cloudapi.HealthCheckHTTPS}
	}
	return s
}

// httpOf is the HTTP part of a service in the form of the add or update call (the same
// fields): nil for a TCP service, which the API refuses to give one.
func httpOf[T hcloud.LoadBalancerAddServiceOptsHTTP | hcloud.LoadBalancerUpdateServiceOptsHTTP](s hcloud.LoadBalancerService) *T {
	if s.Protocol == hcloud.LoadBalancerServiceProtocolTCP {
		return nil
	}
	return &T{Certificates: s.HTTP.Certificates}
}

// addHealthCheck and updateHealthCheck are a service's health check in the forms of the
// add and update calls.
func addHealthCheck(hc hcloud.LoadBalancerServiceHealthCheck) *hcloud.LoadBalancerAddServiceOptsHealthCheck {
	out := &hcloud.LoadBalancerAddServiceOptsHealthCheck{Protocol: hc.Protocol, Port: &hc.Port, Interval: &hc.Interval, Timeout: &hc.Timeout, Retries: &hc.Retries}
	if hc.HTTP != nil {
		out.HTTP = &hcloud.LoadBalancerAddServiceOptsHealthCheckHTTP{Path: &hc.HTTP.Path, TLS: &hc.HTTP.TLS}
	}
	return out
}

func updateHealthCheck(hc hcloud.LoadBalancerServiceHealthCheck) *hcloud.LoadBalancerUpdateServiceOptsHealthCheck {
	out := &hcloud.LoadBalancerUpdateServiceOptsHealthCheck{Protocol: hc.Protocol, Port: &hc.Port, Interval: &hc.Interval, Timeout: &hc.Timeout, Retries: &hc.Retries}
	if hc.HTTP != nil {
		out.HTTP = &hcloud.LoadBalancerUpdateServiceOptsHealthCheckHTTP{Path: &hc.HTTP.Path, TLS: &hc.HTTP.TLS}
	}
	return out
}

// toLB is the load balancer as ccmkit reads it. Services that disagree on the health check
// or the PROXY protocol read as no health check, so the next update rewrites them all.
func (a lbAPI) toLB(lb *hcloud.LoadBalancer) cloudapi.LoadBalancer {
	out := cloudapi.LoadBalancer{ID: strconv.FormatInt(lb.ID, 10), Status: cloudapi.LoadBalancerProvisioning}
	spec := &out.Spec
	spec.Name, spec.Internal = lb.Name, !lb.PublicNet.Enabled
	agree := true
	for i, s := range lb.Services {
		l := cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: int32(s.ListenPort), TargetPort: int32(s.DestinationPort)}
		switch s.Protocol {
		case hcloud.LoadBalancerServiceProtocolHTTP:
			l.AppProtocol = cloudapi.AppProtocolHTTP
		case hcloud.LoadBalancerServiceProtocolHTTPS:
			l.AppProtocol = cloudapi.AppProtocolHTTPS
		}
		for _, cert := range s.HTTP.Certificates {
			l.Certificates = append(l.Certificates, strconv.FormatInt(cert.ID, 10))
		}
		spec.Listeners = append(spec.Listeners, l)
		hc := healthCheckFrom(s.HealthCheck)
		if i == 0 {
			spec.HealthCheck, spec.ProxyProtocol = hc, s.Proxyprotocol
		} else if *hc != *spec.HealthCheck || s.Proxyprotocol != spec.ProxyProtocol {
			agree = false
		}
	}
	if !agree {
		spec.HealthCheck = nil
	}
	for _, t := range lb.Targets {
		if t.Type == hcloud.LoadBalancerTargetTypeServer && t.Server != nil && t.Server.Server != nil {
			spec.Targets = append(spec.Targets, strconv.FormatInt(t.Server.Server.ID, 10))
		}
	}
	spec.Tags, _ = cloudapi.DecodeLabels(lb.Labels, cloudapi.HetznerLabelRules) // a label it cannot read is no tag
	actual := map[string]string{SettingAlgorithm: string(lb.Algorithm.Type)}
	if lb.LoadBalancerType != nil {
		actual[SettingType] = lb.LoadBalancerType.Name
	}
	if lb.Location != nil {
		actual[SettingLocation], actual[SettingNetworkZone] = lb.Location.Name, string(lb.Location.NetworkZone)
	}
	for k := range spec.Tags { // a setting asked for is reported as the cloud has it
		if name, ok := strings.CutPrefix(k, settingLabel); ok {
			if v, known := actual[name]; known {
				spec.Settings = cmpMap(spec.Settings)
				spec.Settings[name] = v
			}
			delete(spec.Tags, k)
		}
	}
	if lb.PublicNet.Enabled {
		for _, ip := range []string{ipString(lb.PublicNet.IPv4.IP), ipString(lb.PublicNet.IPv6.IP)} {
			if ip != "" {
				out.Addresses = append(out.Addresses, ip)
			}
		}
	} else {
		for _, pn := range lb.PrivateNet {
			if ip := ipString(pn.IP); ip != "" {
				out.Addresses = append(out.Addresses, ip)
			}
		}
	}
	if len(out.Addresses) > 0 {
		out.Status = cloudapi.LoadBalancerActive
	}
	return out
}

// healthCheckFrom is a service's health check as ccmkit reads it.
func healthCheckFrom(hc hcloud.LoadBalancerServiceHealthCheck) *cloudapi.HealthCheck {
	out := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: int32(hc.Port), Interval: hc.Interval,
		Timeout: hc.Timeout, UnhealthyThreshold: int32(hc.Retries)}
	if hc.Protocol != hcloud.LoadBalancerServiceProtocolTCP && hc.HTTP != nil {
		out.Protocol, out.Path = cloudapi.HealthCheckHTTP, hc.HTTP.Path
		if hc.HTTP.TLS {
			out.Protocol = cloudapi.HealthCheckHTTPS
		}
	}
	return out
}

// labelsOf is the labels of spec, for a load balancer whose labels are current (nil for a
// new one): its tags, and a tag settingLabel+name per setting it asks for, through the
// label codec; current's labels the codec cannot read are kept.
func labelsOf(spec cloudapi.LoadBalancerSpec, current map[string]string) (map[string]string, error) {
	tags := maps.Clone(spec.Tags)
	for name, v := range spec.Settings {
		tags = cmpMap(tags)
		tags[settingLabel+name] = v
	}
	return cloudapi.EncodeLabelsKeeping(tags, current, cloudapi.HetznerLabelRules)
}

// number is the ID a checked reference names.
func number(ref string) int64 {
	n, _ := strconv.ParseInt(ref, 10, 64)
	return n
}

// cmpMap is m, or a new map when m is nil.
func cmpMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ipString is ip's text, empty for none.
func ipString(ip net.IP) string {
	if ip == nil || ip.IsUnspecified() {
		return ""
	}
	return ip.String()
}
