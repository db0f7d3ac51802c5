package hcloudmock

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// locations are the API's locations the mock knows, by name.
var locations = map[string]schema.Location{
	"fsn1": {ID: 1, Name: "fsn1", Description: "Falkenstein DC Park 1", Country: "DE", City: "Falkenstein", NetworkZone: "eu-central"},
	"nbg1": {ID: 2, Name: "nbg1", Description: "Nuremberg DC Park 1", Country: "DE", City: "Nuremberg", NetworkZone: "eu-central"},
	"hel1": {ID: 3, Name: "hel1", Description: "Helsinki DC Park 1", Country: "FI", City: "Helsinki", NetworkZone: "eu-central"},
	"ash":  {ID: 4, Name: "ash", Description: "Ashburn, VA", Country: "US", City: "Ashburn, VA", NetworkZone: "us-east"},
	"hil":  {ID: 5, Name: "hil", Description: "Hillsboro, OR", Country: "US", City: "Hillsboro, OR", NetworkZone: "us-west"},
	"sin":  {ID: 6, Name: "sin", Description: "Singapore", Country: "SG", City: "Singapore", NetworkZone: "ap-southeast"},
}

// defaultLocation is the location of a seeded server without one.
const defaultLocation = "fsn1"

// lbTypes are the API's load balancer types, by name.
var lbTypes = map[string]schema.LoadBalancerType{
	"lb11": {ID: 1, Name: "lb11", Description: "LB11", MaxConnections: 10000, MaxServices: 5, MaxTargets: 25, MaxAssignedCertificates: 10},
	"lb21": {ID: 2, Name: "lb21", Description: "LB21", MaxConnections: 20000, MaxServices: 15, MaxTargets: 75, MaxAssignedCertificates: 25},
	"lb31": {ID: 3, Name: "lb31", Description: "LB31", MaxConnections: 40000, MaxServices: 30, MaxTargets: 150, MaxAssignedCertificates: 50},
}

// seed takes cfg's resources, checking what the API would never hold.
func (s *Server) seed(cfg Config) error {
	var errs []error
	taken := map[int64]bool{}
	id := func(kind string, id int64, name string, names map[string]bool) {
		switch {
		case id < 1 || taken[id]:
			errs = append(errs, fmt.Errorf("%s %q: ID %d is not positive or not unique", kind, name, id))
		case name == "" || names[name]:
			errs = append(errs, fmt.Errorf("%s %d: name %q is empty or not unique", kind, id, name))
		}
		taken[id], names[name] = true, true
		s.nextID = max(s.nextID, id)
	}
	names := map[string]bool{}
	for _, n := range cfg.Networks {
		id("network", n.ID, n.Name, names)
		if _, err := netip.ParsePrefix(n.IPRange); err != nil {
			errs = append(errs, fmt.Errorf("network %d: ip_range %q: %w", n.ID, n.IPRange, err))
		}
		n = clone(n)
		n.Routes, n.Servers, n.LoadBalancers = nonNil(n.Routes), nonNil(n.Servers), nonNil(n.LoadBalancers)
		n.Subnets = nonNil(n.Subnets)
		n.Labels = nonNilMap(n.Labels)
		s.networks[n.ID] = &n
	}
	names = map[string]bool{}
	for _, srv := range cfg.Servers {
		id("server", srv.ID, srv.Name, names)
		srv = clone(srv)
		srv.Status = cmp.Or(srv.Status, "running")
		loc, ok := locations[cmp.Or(srv.Location.Name, defaultLocation)]
		if !ok {
			errs = append(errs, fmt.Errorf("server %d: unknown location %q", srv.ID, srv.Location.Name))
		}
		srv.Location = loc
		srv.Labels = nonNilMap(srv.Labels)
		srv.PrivateNet = nonNil(srv.PrivateNet)
		for _, pn := range srv.PrivateNet {
			if n, ok := s.networks[pn.Network]; !ok {
				errs = append(errs, fmt.Errorf("server %d: private_net names network %d, which is not seeded", srv.ID, pn.Network))
			} else {
				n.Servers = append(n.Servers, srv.ID)
			}
		}
		s.servers[srv.ID] = &srv
	}
	names = map[string]bool{}
	for _, c := range cfg.Certificates {
		id("certificate", c.ID, c.Name, names)
		c = clone(c)
		c.Type = cmp.Or(c.Type, "uploaded")
		c.Labels, c.DomainNames, c.UsedBy = nonNilMap(c.Labels), nonNil(c.DomainNames), nonNil(c.UsedBy)
		s.certificates[c.ID] = &c
	}
	for _, lb := range cfg.LoadBalancers { // their IDs first: one without takes the next free
		if lb.ID < 0 || (lb.ID > 0 && taken[lb.ID]) {
			errs = append(errs, fmt.Errorf("load balancer %q: ID %d is not positive or not unique", lb.Name, lb.ID))
		}
		taken[lb.ID] = true
		s.nextID = max(s.nextID, lb.ID)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hcloudmock: seed: %w", err)
	}
	for _, seed := range cfg.LoadBalancers {
		body, err := json.Marshal(seed.LoadBalancerCreateRequest)
		if err != nil {
			errs = append(errs, fmt.Errorf("load balancer %q: %w", seed.Name, err))
			continue
		}
		lb, apiErr := s.newLoadBalancer(body, seed.ID)
		if apiErr != nil {
			errs = append(errs, fmt.Errorf("load balancer %q: %w", seed.Name, apiErr))
			continue
		}
		s.lbs[lb.ID] = &lb
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hcloudmock: seed: %w", err)
	}
	return nil
}

// routes registers every endpoint the mock serves.
func (s *Server) routes() {
	s.handle("/", func(r *http.Request) (int, any, *apiError) {
		return 0, nil, errorf(codeNotFound, "%s %s is not an endpoint of this mock", r.Method, r.URL.Path)
	})
	s.handle("GET /servers", s.listServers)
	s.handle("GET /servers/{id}", get(s, "server", s.servers, func(v schema.Server) any { return schema.ServerGetResponse{Server: v} }))
	s.handle("GET /certificates", s.listCertificates)
	s.handle("GET /certificates/{id}", get(s, "certificate", s.certificates, func(v schema.Certificate) any { return schema.CertificateGetResponse{Certificate: v} }))
	s.handle("GET /networks", s.listNetworks)
	s.handle("GET /networks/{id}", get(s, "network", s.networks, func(v schema.Network) any { return schema.NetworkGetResponse{Network: v} }))
	s.handle("POST /networks/{id}/actions/add_route", s.changeRoute("add_route"))
	s.handle("POST /networks/{id}/actions/delete_route", s.changeRoute("delete_route"))
	s.handle("GET /networks/actions/{id}", s.getAction("network"))
	s.handle("GET /actions", s.listActions)
	s.handle("GET /actions/{id}", s.getAction(""))
	s.handle("GET /load_balancers/actions/{id}", s.getAction("load_balancer"))
	s.handle("GET /load_balancers", s.listLoadBalancers)
	s.handle("GET /load_balancers/{id}", get(s, "load_balancer", s.lbs, func(v schema.LoadBalancer) any { return schema.LoadBalancerGetResponse{LoadBalancer: v} }))
	s.handle("POST /load_balancers", s.createLoadBalancer)
	s.handle("PUT /load_balancers/{id}", s.updateLoadBalancer)
	s.handle("DELETE /load_balancers/{id}", s.deleteLoadBalancer)
	for command, change := range lbActions {
		s.handle("POST /load_balancers/{id}/actions/"+command, s.lbAction(command, change))
	}
}

// get answers GET /<kind>s/{id} from m.
func get[V any](s *Server, kind string, m map[int64]*V, wrap func(V) any) handler {
	return func(r *http.Request) (int, any, *apiError) {
		id, err := pathID(r, kind)
		if err != nil {
			return 0, nil, err
		}
		v, ok := m[id]
		if !ok {
			return 0, nil, notFound(kind, id)
		}
		return http.StatusOK, wrap(clone(*v)), nil
	}
}

func (s *Server) listServers(r *http.Request) (int, any, *apiError) {
	items, err := filter(r, values(s.servers), func(v schema.Server) string { return v.Name }, func(v schema.Server) map[string]string { return v.Labels })
	if err != nil {
		return 0, nil, err
	}
	if st := r.URL.Query()["status"]; len(st) > 0 {
		items = slices.DeleteFunc(items, func(v schema.Server) bool { return !slices.Contains(st, v.Status) })
	}
	return list(r, "servers", items, sortKeys[schema.Server]{
		"id":   byID(func(v schema.Server) int64 { return v.ID }),
		"name": byName(func(v schema.Server) string { return v.Name }),
	})
}

func (s *Server) listCertificates(r *http.Request) (int, any, *apiError) {
	items, err := filter(r, values(s.certificates), func(v schema.Certificate) string { return v.Name }, func(v schema.Certificate) map[string]string { return v.Labels })
	if err != nil {
		return 0, nil, err
	}
	return list(r, "certificates", items, sortKeys[schema.Certificate]{
		"id":   byID(func(v schema.Certificate) int64 { return v.ID }),
		"name": byName(func(v schema.Certificate) string { return v.Name }),
	})
}

func (s *Server) listNetworks(r *http.Request) (int, any, *apiError) {
	items, err := filter(r, values(s.networks), func(v schema.Network) string { return v.Name }, func(v schema.Network) map[string]string { return v.Labels })
	if err != nil {
		return 0, nil, err
	}
	return list(r, "networks", items, sortKeys[schema.Network]{
		"id":   byID(func(v schema.Network) int64 { return v.ID }),
		"name": byName(func(v schema.Network) string { return v.Name }),
	})
}

// changeRoute answers add_route and delete_route. A route is its destination: a second
// route to a destination is refused with uniqueness_error (whatever its gateway), and a
// delete must name an existing route's destination and gateway (else invalid_input, so
// that not_found keeps meaning "no such network"). The gateway must lie in the
// network's ip_range, not its first address.
func (s *Server) changeRoute(command string) handler {
	return func(r *http.Request) (int, any, *apiError) {
		id, err := pathID(r, "network")
		if err != nil {
			return 0, nil, err
		}
		n, ok := s.networks[id]
		if !ok {
			return 0, nil, notFound("network", id)
		}
		body, err := readBody(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.NetworkRoute
		if err := decode(body, &req); err != nil {
			return 0, nil, err
		}
		dst, perr := netip.ParsePrefix(req.Destination)
		if perr != nil || dst != dst.Masked() {
			return 0, nil, invalidField("destination", "%q is not a network in CIDR notation", req.Destination)
		}
		gw, perr := netip.ParseAddr(req.Gateway)
		ipRange, _ := netip.ParsePrefix(n.IPRange)
		if perr != nil || !ipRange.Contains(gw) || gw == ipRange.Masked().Addr().Next() {
			return 0, nil, invalidField("gateway", "%q is not an address of network %d's ip_range %s but its first", req.Gateway, id, n.IPRange)
		}
		if err := s.locked("network", id); err != nil {
			return 0, nil, err
		}
		i := slices.IndexFunc(n.Routes, func(rt schema.NetworkRoute) bool { return rt.Destination == dst.String() })
		switch {
		case command == "add_route" && i >= 0:
			return 0, nil, errorf(codeUniqueness, "network %d already has a route to %s (via %s)", id, dst, n.Routes[i].Gateway)
		case command == "delete_route" && (i < 0 || n.Routes[i].Gateway != gw.String()):
			return 0, nil, invalidField("destination", "network %d has no route to %s via %s", id, dst, gw)
		}
		a, failed := s.startAction(command, schema.ActionResourceReference{ID: id, Type: "network"})
		if !failed {
			if command == "add_route" {
				n.Routes = append(n.Routes, schema.NetworkRoute{Destination: dst.String(), Gateway: gw.String()})
			} else {
				n.Routes = slices.Delete(n.Routes, i, i+1)
			}
		}
		return s.actionAnswer(a)
	}
}
