package hcloudmock

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// lbChange checks an action's request body against a copy of the load balancer and
// makes the change on that copy, which becomes the load balancer unless the action fails.
type lbChange func(s *Server, lb *schema.LoadBalancer, body []byte) *apiError

func (s *Server) listLoadBalancers(r *http.Request) (int, any, *apiError) {
	items, err := filter(r, values(s.lbs), func(v schema.LoadBalancer) string { return v.Name }, func(v schema.LoadBalancer) map[string]string { return v.Labels })
	if err != nil {
		return 0, nil, err
	}
	return list(r, "load_balancers", items, sortKeys[schema.LoadBalancer]{
		"id":      byID(func(v schema.LoadBalancer) int64 { return v.ID }),
		"name":    byName(func(v schema.LoadBalancer) string { return v.Name }),
		"created": func(a, b schema.LoadBalancer) int { return a.Created.Compare(b.Created) },
	})
}

func (s *Server) createLoadBalancer(r *http.Request) (int, any, *apiError) {
	body, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	lb, err := s.newLoadBalancer(body, 0)
	if err != nil {
		return 0, nil, err
	}
	a, failed := s.startAction("create_load_balancer", schema.ActionResourceReference{ID: lb.ID, Type: "load_balancer"})
	if !failed {
		s.lbs[lb.ID] = &lb
	}
	return http.StatusCreated, schema.LoadBalancerCreateResponse{LoadBalancer: clone(lb), Action: a.view(s.cfg.Clock.Now())}, nil
}

// newLoadBalancer is the load balancer a create request's body asks for, checked and
// completed as the API does (its defaults, the next public addresses of the pools), with
// the ID id, or the next free one when id is 0. It is not in the project yet: the create
// adds it once its action succeeds, a seed at once.
func (s *Server) newLoadBalancer(body []byte, id int64) (schema.LoadBalancer, *apiError) {
	var req schema.LoadBalancerCreateRequest
	var parts struct { // services and targets in the response's form: the same fields
		Services []schema.LoadBalancerService `json:"services"`
		Targets  []schema.LoadBalancerTarget  `json:"targets"`
	}
	if err := decode(body, &req); err != nil {
		return schema.LoadBalancer{}, err
	}
	if err := decode(body, &parts); err != nil {
		return schema.LoadBalancer{}, err
	}
	if err := s.checkName(req.Name, 0); err != nil {
		return schema.LoadBalancer{}, err
	}
	lb := schema.LoadBalancer{
		Name: req.Name, Created: s.cfg.Clock.Now(), Labels: map[string]string{},
		Algorithm:  schema.LoadBalancerAlgorithm{Type: "round_robin"},
		PublicNet:  schema.LoadBalancerPublicNet{Enabled: req.PublicInterface == nil || *req.PublicInterface},
		PrivateNet: []schema.LoadBalancerPrivateNet{}, Services: []schema.LoadBalancerService{}, Targets: []schema.LoadBalancerTarget{},
	}
	if req.Labels != nil {
		lb.Labels = *req.Labels
	}
	if err := setType(&lb, req.LoadBalancerType); err != nil {
		return schema.LoadBalancer{}, err
	}
	if req.Algorithm != nil {
		if err := setAlgorithm(&lb, req.Algorithm.Type); err != nil {
			return schema.LoadBalancer{}, err
		}
	}
	switch loc, ok := locations[ptrOr(req.Location)]; {
	case req.Location != nil && req.NetworkZone != nil:
		return schema.LoadBalancer{}, invalidField("location", "give location or network_zone, not both")
	case req.Location != nil && !ok:
		return schema.LoadBalancer{}, invalidField("location", "unknown location %q", *req.Location)
	case req.Location != nil:
		lb.Location = loc
	case req.NetworkZone != nil:
		for _, l := range locations { // the zone's first location
			if l.NetworkZone == *req.NetworkZone && (lb.Location.Name == "" || l.ID < lb.Location.ID) {
				lb.Location = l
			}
		}
		if lb.Location.Name == "" {
			return schema.LoadBalancer{}, invalidField("network_zone", "unknown network zone %q", *req.NetworkZone)
		}
	default:
		return schema.LoadBalancer{}, invalidField("location", "location or network_zone is required")
	}
	if req.PublicNet != nil {
		return schema.LoadBalancer{}, invalidField("public_net", "primary IPs of load balancers are not modelled by this mock")
	}
	if req.Network != nil {
		if err := s.attach(&lb, *req.Network, ""); err != nil {
			return schema.LoadBalancer{}, err
		}
	}
	if !lb.PublicNet.Enabled && len(lb.PrivateNet) == 0 {
		return schema.LoadBalancer{}, errorf(codeLBNotAttached, "a load balancer without public interface needs a network")
	}
	for _, svc := range parts.Services {
		if err := s.addService(&lb, svc); err != nil {
			return schema.LoadBalancer{}, err
		}
	}
	have := map[string]bool{} // the targets so far: a create of thousands stays linear
	for _, t := range parts.Targets {
		if err := s.addTarget(&lb, t, have); err != nil {
			return schema.LoadBalancer{}, err
		}
	}
	v4, ok4 := nextAddr(&s.ipv4, s.cfg.IPv4Pool)
	v6, ok6 := nextAddr(&s.ipv6, s.cfg.IPv6Pool)
	if !ok4 || !ok6 {
		return schema.LoadBalancer{}, errorf("resource_unavailable", "the mock's public address pools %s, %s are used up", s.cfg.IPv4Pool, s.cfg.IPv6Pool)
	}
	if lb.ID = id; id == 0 {
		lb.ID = s.id()
	}
	lb.PublicNet.IPv4 = schema.LoadBalancerPublicNetIPv4{ID: lb.ID, IP: v4.String()}
	lb.PublicNet.IPv6 = schema.LoadBalancerPublicNetIPv6{ID: lb.ID, IP: v6.String()}
	return lb, nil
}

func (s *Server) updateLoadBalancer(r *http.Request) (int, any, *apiError) {
	lb, err := s.writableLB(r)
	if err != nil {
		return 0, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	var req schema.LoadBalancerUpdateRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	if req.Name != nil {
		if err := s.checkName(*req.Name, lb.ID); err != nil {
			return 0, nil, err
		}
		lb.Name = *req.Name
	}
	if req.Labels != nil {
		lb.Labels = *req.Labels
	}
	return http.StatusOK, schema.LoadBalancerUpdateResponse{LoadBalancer: clone(*lb)}, nil
}

func (s *Server) deleteLoadBalancer(r *http.Request) (int, any, *apiError) {
	lb, err := s.writableLB(r)
	if err != nil {
		return 0, nil, err
	}
	a, failed := s.startAction("delete_load_balancer", schema.ActionResourceReference{ID: lb.ID, Type: "load_balancer"})
	if !failed {
		delete(s.lbs, lb.ID)
	}
	return s.actionAnswer(a)
}

// writableLB is the load balancer of the request's path, when no action holds it.
func (s *Server) writableLB(r *http.Request) (*schema.LoadBalancer, *apiError) {
	id, err := pathID(r, "load_balancer")
	if err != nil {
		return nil, err
	}
	lb, ok := s.lbs[id]
	if !ok {
		return nil, notFound("load_balancer", id)
	}
	return lb, s.locked("load_balancer", id)
}

// lbAction answers POST /load_balancers/{id}/actions/<command> with change.
func (s *Server) lbAction(command string, change lbChange) handler {
	return func(r *http.Request) (int, any, *apiError) {
		lb, err := s.writableLB(r)
		if err != nil {
			return 0, nil, err
		}
		body, err := readBody(r)
		if err != nil {
			return 0, nil, err
		}
		changed := clone(*lb)
		if err := change(s, &changed, body); err != nil {
			return 0, nil, err
		}
		a, failed := s.startAction(command, schema.ActionResourceReference{ID: lb.ID, Type: "load_balancer"})
		if !failed {
			*lb = changed
		}
		return s.actionAnswer(a)
	}
}

// lbActions are the load balancer actions the mock serves, by command.
var lbActions = map[string]lbChange{
	"add_service": withBody(func(s *Server, lb *schema.LoadBalancer, svc schema.LoadBalancerService) *apiError {
		return s.addService(lb, svc)
	}),
	"update_service": func(s *Server, lb *schema.LoadBalancer, body []byte) *apiError {
		var req schema.LoadBalancerActionUpdateServiceRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		i, err := serviceIndex(lb, req.ListenPort)
		if err != nil {
			return err
		}
		svc := lb.Services[i]
		if req.Protocol != nil && *req.Protocol == "tcp" && req.HTTP == nil {
			svc.HTTP = nil // no longer an HTTP service
		}
		if err := decode(body, &svc); err != nil { // the fields given, over the service
			return err
		}
		lb.Services = slices.Delete(lb.Services, i, i+1)
		return s.addService(lb, svc)
	},
	"delete_service": withBody(func(s *Server, lb *schema.LoadBalancer, req schema.LoadBalancerDeleteServiceRequest) *apiError {
		i, err := serviceIndex(lb, req.ListenPort)
		if err == nil {
			lb.Services = slices.Delete(lb.Services, i, i+1)
		}
		return err
	}),
	"add_target": withBody(func(s *Server, lb *schema.LoadBalancer, t schema.LoadBalancerTarget) *apiError {
		return s.addTarget(lb, t, nil)
	}),
	"remove_target": withBody(func(s *Server, lb *schema.LoadBalancer, t schema.LoadBalancerTarget) *apiError {
		i := slices.IndexFunc(lb.Targets, func(have schema.LoadBalancerTarget) bool { return targetKey(have) == targetKey(t) })
		if i < 0 {
			return invalidField("type", "load balancer %d has no target %s", lb.ID, targetKey(t))
		}
		lb.Targets = slices.Delete(lb.Targets, i, i+1)
		return nil
	}),
	"change_algorithm": withBody(func(s *Server, lb *schema.LoadBalancer, req schema.LoadBalancerActionChangeAlgorithmRequest) *apiError {
		return setAlgorithm(lb, req.Type)
	}),
	"change_type": withBody(func(s *Server, lb *schema.LoadBalancer, req schema.LoadBalancerActionChangeTypeRequest) *apiError {
		return setType(lb, req.LoadBalancerType)
	}),
	"attach_to_network": withBody(func(s *Server, lb *schema.LoadBalancer, req schema.LoadBalancerActionAttachToNetworkRequest) *apiError {
		if req.IPRange != nil {
			return invalidField("ip_range", "subnets of a network are not modelled by this mock")
		}
		return s.attach(lb, req.Network, ptrOr(req.IP))
	}),
	"detach_from_network": withBody(func(s *Server, lb *schema.LoadBalancer, req schema.LoadBalancerActionDetachFromNetworkRequest) *apiError {
		i := slices.IndexFunc(lb.PrivateNet, func(pn schema.LoadBalancerPrivateNet) bool { return pn.Network == req.Network })
		switch {
		case i < 0:
			return errorf(codeLBNotAttached, "load balancer %d is not attached to network %d", lb.ID, req.Network)
		case !lb.PublicNet.Enabled && len(lb.PrivateNet) == 1:
			return errorf(codeLBNotAttached, "load balancer %d has no public interface: it keeps its last network", lb.ID)
		}
		lb.PrivateNet = slices.Delete(lb.PrivateNet, i, i+1)
		return nil
	}),
	"enable_public_interface": func(s *Server, lb *schema.LoadBalancer, _ []byte) *apiError {
		lb.PublicNet.Enabled = true
		return nil
	},
	"disable_public_interface": func(s *Server, lb *schema.LoadBalancer, _ []byte) *apiError {
		if len(lb.PrivateNet) == 0 {
			return errorf(codeLBNotAttached, "load balancer %d needs a network to disable its public interface", lb.ID)
		}
		lb.PublicNet.Enabled = false
		return nil
	},
}

// withBody adapts a change that takes its request decoded as T to an lbChange: a body
// that is not a T is the API's invalid_input.
func withBody[T any](change func(s *Server, lb *schema.LoadBalancer, req T) *apiError) lbChange {
	return func(s *Server, lb *schema.LoadBalancer, body []byte) *apiError {
		var req T
		if err := decode(body, &req); err != nil {
			return err
		}
		return change(s, lb, req)
	}
}

// checkName refuses an empty name, or one another load balancer than id has.
func (s *Server) checkName(name string, id int64) *apiError {
	if name == "" {
		return invalidField("name", "is required")
	}
	for _, lb := range s.lbs {
		if lb.Name == name && lb.ID != id {
			return errorf(codeUniqueness, "load balancer name %q is already used by load balancer %d", name, lb.ID)
		}
	}
	return nil
}

func setType(lb *schema.LoadBalancer, t schema.IDOrName) *apiError {
	for _, typ := range lbTypes {
		if typ.Name == t.Name || typ.ID == t.ID {
			lb.LoadBalancerType = typ
			return nil
		}
	}
	return invalidField("load_balancer_type", "unknown load balancer type %v", cmp.Or(t.Name, strconv.FormatInt(t.ID, 10)))
}

func setAlgorithm(lb *schema.LoadBalancer, typ string) *apiError {
	if typ != "round_robin" && typ != "least_connections" {
		return invalidField("type", "unknown algorithm %q", typ)
	}
	lb.Algorithm.Type = typ
	return nil
}

func serviceIndex(lb *schema.LoadBalancer, port int) (int, *apiError) {
	i := slices.IndexFunc(lb.Services, func(svc schema.LoadBalancerService) bool { return svc.ListenPort == port })
	if i < 0 {
		return 0, invalidField("listen_port", "load balancer %d has no service on port %d", lb.ID, port)
	}
	return i, nil
}

// addService checks svc, fills in the API's defaults and adds it to lb.
func (s *Server) addService(lb *schema.LoadBalancer, svc schema.LoadBalancerService) *apiError {
	switch svc.Protocol {
	case "tcp":
		if svc.ListenPort == 0 || svc.DestinationPort == 0 {
			return invalidField("listen_port", "a tcp service needs listen_port and destination_port")
		}
		if svc.HTTP != nil {
			return invalidField("http", "a tcp service has no http settings")
		}
	case "http", "https":
		svc.ListenPort = cmp.Or(svc.ListenPort, map[string]int{"http": 80, "https": 443}[svc.Protocol])
		svc.DestinationPort = cmp.Or(svc.DestinationPort, 80)
		if svc.HTTP == nil {
			svc.HTTP = &schema.LoadBalancerServiceHTTP{}
		}
		svc.HTTP.CookieName = cmp.Or(svc.HTTP.CookieName, "HCLBSTICKY")
		svc.HTTP.CookieLifetime = cmp.Or(svc.HTTP.CookieLifetime, 300)
		svc.HTTP.Certificates = nonNil(svc.HTTP.Certificates)
		if svc.Protocol == "https" && len(svc.HTTP.Certificates) == 0 {
			return invalidField("http.certificates", "an https service needs a certificate")
		}
		for _, c := range svc.HTTP.Certificates {
			if _, ok := s.certificates[c]; !ok {
				return invalidField("http.certificates", "certificate %d does not exist", c)
			}
		}
	default:
		return invalidField("protocol", "unknown protocol %q (tcp, http, https)", svc.Protocol)
	}
	for _, p := range []int{svc.ListenPort, svc.DestinationPort} {
		if p < 1 || p > 65535 {
			return invalidField("listen_port", "port %d is out of range", p)
		}
	}
	if _, err := serviceIndex(lb, svc.ListenPort); err == nil {
		return errorf(codePortUsed, "load balancer %d already has a service on port %d", lb.ID, svc.ListenPort)
	}
	if svc.HealthCheck == nil {
		svc.HealthCheck = &schema.LoadBalancerServiceHealthCheck{Protocol: "tcp"}
	}
	hc := svc.HealthCheck
	hc.Port, hc.Interval = cmp.Or(hc.Port, svc.DestinationPort), cmp.Or(hc.Interval, 15)
	hc.Timeout, hc.Retries = cmp.Or(hc.Timeout, 10), cmp.Or(hc.Retries, 3)
	if hc.Protocol != "tcp" && hc.Protocol != "http" && hc.Protocol != "https" {
		return invalidField("health_check.protocol", "unknown protocol %q", hc.Protocol)
	}
	if hc.Protocol == "tcp" {
		hc.HTTP = nil
	} else if hc.HTTP == nil {
		hc.HTTP = &schema.LoadBalancerServiceHealthCheckHTTP{Path: "/", StatusCodes: []string{"2??", "3??"}}
	}
	lb.Services = append(lb.Services, svc)
	return nil
}

// targetKey is what tells targets apart.
func targetKey(t schema.LoadBalancerTarget) string {
	switch {
	case t.Type == "server" && t.Server != nil:
		return "server " + strconv.FormatInt(t.Server.ID, 10)
	case t.Type == "label_selector" && t.LabelSelector != nil:
		return "label_selector " + t.LabelSelector.Selector
	case t.Type == "ip" && t.IP != nil:
		return "ip " + t.IP.IP
	}
	return "invalid " + t.Type
}

// addTarget checks t and adds it to lb. A label selector target is kept as such: the
// mock does not resolve it to servers. have holds the keys (targetKey) of lb's targets, or
// is nil to have them read from lb; t's is added to it.
func (s *Server) addTarget(lb *schema.LoadBalancer, t schema.LoadBalancerTarget, have map[string]bool) *apiError {
	t.HealthStatus, t.Targets = []schema.LoadBalancerTargetHealthStatus{}, nil
	key := targetKey(t)
	switch {
	case key == "invalid "+t.Type:
		return invalidField("type", "target type %q needs its %s field", t.Type, t.Type)
	case t.Type == "server":
		srv, ok := s.servers[t.Server.ID]
		if !ok {
			return invalidField("server.id", "server %d does not exist", t.Server.ID)
		}
		if t.UsePrivateIP && !slices.ContainsFunc(lb.PrivateNet, func(pn schema.LoadBalancerPrivateNet) bool {
			return slices.ContainsFunc(srv.PrivateNet, func(spn schema.ServerPrivateNet) bool { return spn.Network == pn.Network })
		}) {
			return errorf(codeServerNotOnNet, "server %d is in no network of load balancer %d", srv.ID, lb.ID)
		}
	case t.Type == "label_selector":
		if _, err := parseSelector(t.LabelSelector.Selector); err != nil {
			return invalidField("label_selector.selector", "%v", err)
		}
	case t.Type == "ip":
		if _, err := netip.ParseAddr(t.IP.IP); err != nil {
			return invalidField("ip.ip", "%q is not an IP address", t.IP.IP)
		}
	}
	if have == nil {
		have = map[string]bool{}
		for _, h := range lb.Targets {
			have[targetKey(h)] = true
		}
	}
	if have[key] {
		return errorf(codeTargetDefined, "load balancer %d already has target %s", lb.ID, key)
	}
	have[key] = true
	lb.Targets = append(lb.Targets, t)
	return nil
}

// attach puts lb in network id at ip, or at the network's first free address after its
// gateway.
func (s *Server) attach(lb *schema.LoadBalancer, id int64, ip string) *apiError {
	n, ok := s.networks[id]
	if !ok {
		return invalidField("network", "network %d does not exist", id)
	}
	if slices.ContainsFunc(lb.PrivateNet, func(pn schema.LoadBalancerPrivateNet) bool { return pn.Network == id }) {
		return errorf(codeLBAttached, "load balancer %d is already attached to network %d", lb.ID, id)
	}
	used := map[string]bool{}
	for _, srv := range s.servers {
		for _, pn := range srv.PrivateNet {
			used[pn.IP] = used[pn.IP] || pn.Network == id
		}
	}
	for _, other := range s.lbs {
		for _, pn := range other.PrivateNet {
			used[pn.IP] = used[pn.IP] || pn.Network == id
		}
	}
	ipRange, _ := netip.ParsePrefix(n.IPRange)
	if ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !ipRange.Contains(addr) || used[addr.String()] {
			return errorf("ip_not_available", "%q is not a free address of network %d", ip, id)
		}
	} else {
		addr := ipRange.Masked().Addr().Next() // the gateway
		for addr = addr.Next(); used[addr.String()]; addr = addr.Next() {
		}
		if !ipRange.Contains(addr) {
			return errorf("no_subnet_available", "network %d has no free address", id)
		}
		ip = addr.String()
	}
	lb.PrivateNet = append(lb.PrivateNet, schema.LoadBalancerPrivateNet{Network: id, IP: ip})
	return nil
}

// nextAddr hands out the address after *last in the pool, or false when it is used up.
func nextAddr(last *netip.Addr, pool string) (netip.Addr, bool) {
	pfx := netip.MustParsePrefix(pool) // checked by New
	next := last.Next()
	if !pfx.Contains(next) {
		return netip.Addr{}, false
	}
	*last = next
	return next, true
}

// readBody reads a request's body (at most 1 MiB, as no request of the API is larger).
func readBody(r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, errorf(codeJSONError, "reading the request body: %v", err)
	}
	return b, nil
}

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(body []byte, v any) *apiError {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(codeJSONError, "the request body is not valid JSON for this endpoint: %v", err)
	}
	return nil
}

func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func nonNil[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
