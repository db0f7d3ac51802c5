package adapter

import (
	"cmp"
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// loadBalancers is the cloudapi.LoadBalancerAPI of the project's load balancers.
func (c *Client) loadBalancers() cloudapi.PartwiseLoadBalancers[*hcloud.LoadBalancer] {
	return cloudapi.PartwiseLoadBalancers[*hcloud.LoadBalancer]{Shape: Shape, Check: check, Get: c.getLB, Read: toLB,
		List: c.listLBs, Create: c.createLB, Steps: c.lbSteps, Delete: c.deleteLB, IDs: cloudapi.CheckNumericID, Refs: cloudapi.RefChecks{Targets: cloudapi.CheckNumericID, Certificates: cloudapi.CheckNumericID}, Reads: c.lbs, Keep: keptLB}
}

// keptLB is what Reads keeps of a load balancer as read: what lbSteps uses, not its
// services and targets.
func keptLB(lb *hcloud.LoadBalancer) *hcloud.LoadBalancer {
	kept := *lb
	kept.Services, kept.Targets = nil, nil
	return &kept
}

// getLB reads one load balancer.
func (c *Client) getLB(ctx context.Context, op cloudapi.Operation, id string) (*hcloud.LoadBalancer, error) {
	return getByID(ctx, op, id, "load balancer", cloudapi.ErrNotFound, cloudapi.ErrNotFound, c.api.LoadBalancer.GetByID)
}

// listLBs reads one page, by ID, of the load balancers whose labels carry opts.Tags; the
// page token is the page number.
func (c *Client) listLBs(ctx context.Context, opts cloudapi.ListOptions) ([]*hcloud.LoadBalancer, string, error) {
	return page(cloudapi.OpListLoadBalancers, opts, func(o hcloud.ListOpts, sort []string) ([]*hcloud.LoadBalancer, *hcloud.Response, error) {
		return c.api.LoadBalancer.List(ctx, hcloud.LoadBalancerListOpts{ListOpts: o, Sort: sort})
	})
}

// createLB creates the load balancer with its labels and targets in one call; the steps
// add its services.
func (c *Client) createLB(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*hcloud.LoadBalancer, error) {
	const op = cloudapi.OpCreateLoadBalancer
	opts := hcloud.LoadBalancerCreateOpts{
		Name:             spec.Name,
		LoadBalancerType: &hcloud.LoadBalancerType{Name: cmp.Or(spec.SettingValues[SettingType], "lb11")},
		Algorithm:        &hcloud.LoadBalancerAlgorithm{Type: hcloud.LoadBalancerAlgorithmType(cmp.Or(spec.SettingValues[SettingAlgorithm], "round_robin"))},
		NetworkZone:      hcloud.NetworkZone(spec.SettingValues[SettingNetworkZone]),
		PublicInterface:  hcloud.Ptr(!spec.Internal),
	}
	if loc := cmp.Or(spec.SettingValues[SettingLocation], c.cfg.Location); opts.NetworkZone == "" || spec.SettingValues[SettingLocation] != "" {
		if loc == "" {
			return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, "", errors.New(
				"no location: annotate location or network-zone, or set one in the cloud config's loadBalancer.settings or the hcloud section's location"))
		}
		opts.Location, opts.NetworkZone = &hcloud.Location{Name: loc}, "" // the location decides the zone
	}
	var err error
	if opts.Labels, err = cloudapi.EncodeLabels(cloudapi.TagsWithSettingValues(spec), cloudapi.HetznerLabelRules); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, "", err)
	}
	if spec.Internal || c.cfg.UsePrivateIP {
		if opts.Network, err = c.network(ctx, op, ""); err != nil {
			return nil, err
		}
	}
	for _, t := range spec.Targets {
		opts.Targets = append(opts.Targets, hcloud.LoadBalancerCreateOptsTarget{Type: hcloud.LoadBalancerTargetTypeServer,
			Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: number(t)}}, UsePrivateIP: hcloud.Ptr(c.cfg.UsePrivateIP)})
	}
	res, resp, err := c.api.LoadBalancer.Create(ctx, opts)
	if err := c.wait(ctx, op, "", res.Action, resp, err); err != nil {
		return nil, err
	}
	return res.LoadBalancer, nil
}

// lbSteps are the calls that make cur (as last read) what want says, one call per
// difference, each action waited for before the next (the API locks a load balancer
// while an action runs).
func (c *Client) lbSteps(ctx context.Context, op cloudapi.Operation, cur *hcloud.LoadBalancer, want cloudapi.LoadBalancerSpec) (cloudapi.LoadBalancerSteps, error) {
	id, lbs := strconv.FormatInt(cur.ID, 10), c.api.LoadBalancer
	loc, zone := want.SettingValues[SettingLocation], want.SettingValues[SettingNetworkZone]
	if cur.Location != nil && (loc != "" && loc != cur.Location.Name || zone != "" && zone != string(cur.Location.NetworkZone)) {
		return cloudapi.LoadBalancerSteps{}, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id,
			errors.New("location and network zone cannot change in place"))
	}
	do := func(action *hcloud.Action, resp *hcloud.Response, err error) error {
		return c.wait(ctx, op, id, action, resp, err)
	}
	return cloudapi.LoadBalancerSteps{
		Properties: func(ctx context.Context) error {
			labels, err := cloudapi.EncodeLabelsKeeping(cloudapi.TagsWithSettingValues(want), cur.Labels, cloudapi.HetznerLabelRules)
			if err != nil {
				return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
			}
			if _, resp, err := lbs.Update(ctx, cur, hcloud.LoadBalancerUpdateOpts{Name: want.Name, Labels: labels}); err != nil {
				return errorOf(op, id, resp, err)
			}
			return nil
		},
		Setting: func(ctx context.Context, name, v string) error { // a setting no longer asked for is kept as it is
			switch {
			case name == SettingType && v != "" && (cur.LoadBalancerType == nil || v != cur.LoadBalancerType.Name):
				return do(lbs.ChangeType(ctx, cur, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: v}}))
			case name == SettingAlgorithm && v != "" && v != string(cur.Algorithm.Type):
				return do(lbs.ChangeAlgorithm(ctx, cur, hcloud.LoadBalancerChangeAlgorithmOpts{Type: hcloud.LoadBalancerAlgorithmType(v)}))
			}
			return nil
		},
		RemoveListener: func(ctx context.Context, k cloudapi.ListenerKey) error {
			return do(lbs.DeleteService(ctx, cur, int(k.Port)))
		},
		AddListener: func(ctx context.Context, l cloudapi.Listener) error {
			return do(lbs.AddService(ctx, cur, serviceOf(l, want)))
		},
		UpdateListener: func(ctx context.Context, l cloudapi.Listener) error {
			return do(lbs.UpdateService(ctx, cur, int(l.Port), updateOf(serviceOf(l, want))))
		},
		RemoveTarget: func(ctx context.Context, t string) error {
			return do(lbs.RemoveServerTarget(ctx, cur, &hcloud.Server{ID: number(t)}))
		},
		AddTarget: func(ctx context.Context, t string) error {
			return do(lbs.AddServerTarget(ctx, cur, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: number(t)},
				UsePrivateIP: hcloud.Ptr(c.cfg.UsePrivateIP)}))
		},
	}, nil
}

// deleteLB deletes the load balancer (an ID that IDs took) and waits for the delete's
// action; the API's not_found answer to the delete of one ID is certain.
func (c *Client) deleteLB(ctx context.Context, id string) error {
	const op = cloudapi.OpDeleteLoadBalancer
	res, resp, err := c.api.LoadBalancer.DeleteWithResult(ctx, &hcloud.LoadBalancer{ID: number(id)})
	if hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		return cloudapi.NewError(cloudapi.ErrNotFound, op, id, err)
	}
	return c.wait(ctx, op, id, res.Action, resp, err)
}

// check returns what Hetzner's load balancers cannot build of spec beyond the Shape and
// the references by ID (IDs, Refs).
func check(op cloudapi.Operation, spec cloudapi.LoadBalancerSpec) error {
	var errs []error
	if spec.TargetGroup != "" {
		errs = append(errs, errors.New("target groups are not Hetzner's"))
	}
	errs = append(errs, Settings.Check(spec.SettingValues)) // errors.Join leaves out a nil
	if spec.SettingValues[SettingLocation] != "" && spec.SettingValues[SettingNetworkZone] != "" && op == cloudapi.OpCreateLoadBalancer {
		errs = append(errs, errors.New("set location or network-zone, not both"))
	}
	return errors.Join(errs...)
}

// protocols are the service protocols of the listeners' application protocols.
var protocols = map[cloudapi.AppProtocol]hcloud.LoadBalancerServiceProtocol{cloudapi.AppProtocolNone: hcloud.LoadBalancerServiceProtocolTCP,
	cloudapi.AppProtocolHTTP: hcloud.LoadBalancerServiceProtocolHTTP, cloudapi.AppProtocolHTTPS: hcloud.LoadBalancerServiceProtocolHTTPS}

// serviceOf is the Hetzner service of a listener of spec, as add_service takes it: its
// health check (kube-proxy's TCP port without one) and PROXY protocol are the spec's.
func serviceOf(l cloudapi.Listener, spec cloudapi.LoadBalancerSpec) hcloud.LoadBalancerAddServiceOpts {
	s := hcloud.LoadBalancerAddServiceOpts{Protocol: cmp.Or(protocols[l.AppProtocol], hcloud.LoadBalancerServiceProtocolTCP),
		ListenPort: hcloud.Ptr(int(l.Port)), DestinationPort: hcloud.Ptr(int(l.TargetPort)), Proxyprotocol: &spec.ProxyProtocol}
	if s.Protocol != hcloud.LoadBalancerServiceProtocolTCP { // the API refuses HTTP options on a TCP service
		s.HTTP = &hcloud.LoadBalancerAddServiceOptsHTTP{}
		for _, cert := range l.Certificates {
			s.HTTP.Certificates = append(s.HTTP.Certificates, &hcloud.Certificate{ID: number(cert)})
		}
	}
	// The port's own, the load balancer's, else TCP on the node port; a time or retries
	// not given (none read, as after a takeover) is left to the API's defaults, never 0.
	hc := cmp.Or(l.HealthCheck, spec.HealthCheck, &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: l.TargetPort})
	s.HealthCheck = &hcloud.LoadBalancerAddServiceOptsHealthCheck{Protocol: hcloud.LoadBalancerServiceProtocolTCP, Port: hcloud.Ptr(int(hc.Port)),
		Interval: given(hc.Interval), Timeout: given(hc.Timeout), Retries: given(int(hc.UnhealthyThreshold))}
	if hc.Protocol != cloudapi.HealthCheckTCP {
		s.HealthCheck.Protocol = hcloud.LoadBalancerServiceProtocolHTTP
		s.HealthCheck.HTTP = &hcloud.LoadBalancerAddServiceOptsHealthCheckHTTP{Path: &hc.Path, TLS: hcloud.Ptr(hc.Protocol == cloudapi.HealthCheckHTTPS)}
	}
	return s
}

// given is a pointer to v, nil for its zero value: a part the API then defaults.
func given[T comparable](v T) *T {
	if v == *new(T) {
		return nil
	}
	return &v
}

// updateOf is a service as update_service takes it (the same fields, but the port).
func updateOf(s hcloud.LoadBalancerAddServiceOpts) hcloud.LoadBalancerUpdateServiceOpts {
	hc := s.HealthCheck
	return hcloud.LoadBalancerUpdateServiceOpts{Protocol: s.Protocol, DestinationPort: s.DestinationPort, Proxyprotocol: s.Proxyprotocol,
		HTTP: (*hcloud.LoadBalancerUpdateServiceOptsHTTP)(s.HTTP),
		HealthCheck: &hcloud.LoadBalancerUpdateServiceOptsHealthCheck{Protocol: hc.Protocol, Port: hc.Port, Interval: hc.Interval,
			Timeout: hc.Timeout, Retries: hc.Retries, HTTP: (*hcloud.LoadBalancerUpdateServiceOptsHealthCheckHTTP)(hc.HTTP)}}
}

// toLB is the load balancer as ccmkit reads it: the health check and PROXY protocol its
// services share (cloudapi.JoinListenerParts).
func toLB(lb *hcloud.LoadBalancer) cloudapi.LoadBalancer {
	out := cloudapi.LoadBalancer{ID: strconv.FormatInt(lb.ID, 10), Status: cloudapi.LoadBalancerProvisioning}
	spec := &out.Spec
	spec.Name, spec.Internal = lb.Name, !lb.PublicNet.Enabled
	parts := make([]cloudapi.ListenerParts, 0, len(lb.Services))
	for _, s := range lb.Services {
		l := cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: int32(s.ListenPort), TargetPort: int32(s.DestinationPort)}
		for app, p := range protocols {
			if p == s.Protocol {
				l.AppProtocol = app
			}
		}
		for _, cert := range s.HTTP.Certificates {
			l.Certificates = append(l.Certificates, strconv.FormatInt(cert.ID, 10))
		}
		spec.Listeners = append(spec.Listeners, l)
		parts = append(parts, cloudapi.ListenerParts{HealthCheck: healthCheckFrom(s.HealthCheck), ProxyProtocol: s.Proxyprotocol})
	}
	cloudapi.JoinListenerParts(spec, parts)
	for _, t := range lb.Targets {
		if t.Type == hcloud.LoadBalancerTargetTypeServer && t.Server != nil && t.Server.Server != nil {
			spec.Targets = append(spec.Targets, strconv.FormatInt(t.Server.Server.ID, 10))
		}
	}
	tags, _ := cloudapi.DecodeLabels(lb.Labels, cloudapi.HetznerLabelRules) // a label it cannot read is no tag
	actual := map[string]string{SettingAlgorithm: string(lb.Algorithm.Type)}
	if lb.LoadBalancerType != nil {
		actual[SettingType] = lb.LoadBalancerType.Name
	}
	if lb.Location != nil {
		actual[SettingLocation], actual[SettingNetworkZone] = lb.Location.Name, string(lb.Location.NetworkZone)
	}
	spec.Tags, spec.SettingValues = cloudapi.SettingValuesFromTags(tags, actual) // a setting asked for is reported as the cloud has it
	ips := []net.IP{lb.PublicNet.IPv4.IP, lb.PublicNet.IPv6.IP}
	if !lb.PublicNet.Enabled { // an internal one: its addresses in the network
		ips = nil
		for _, pn := range lb.PrivateNet {
			ips = append(ips, pn.IP)
		}
	}
	for _, a := range cloudapi.IPAddresses("", ips...) {
		out.Addresses = append(out.Addresses, a.Address)
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

// number is the ID a checked reference or ID names.
func number(ref string) int64 {
	n, _ := cloudapi.NumericID(ref)
	return n
}
