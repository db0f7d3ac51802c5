package hcloudmock

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/internal/pace"
)

// Server is the mock of the Hetzner Cloud API: an http.Handler serving the API's paths
// from the root ("/servers", not "/v1/servers"; mount it under "/v1" with
// http.StripPrefix to serve the SDK's default path layout). Its state is guarded by one
// mutex; every request runs under it, so requests are answered one at a time, in order.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu           sync.Mutex
	bucket       pace.Bucket
	servers      map[int64]*schema.Server
	lbs          map[int64]*schema.LoadBalancer
	networks     map[int64]*schema.Network
	certificates map[int64]*schema.Certificate
	actions      map[int64]*action
	nextID       int64
	ipv4, ipv6   netip.Addr // the last address handed out from each pool
	calls        map[string]int
	faults       map[string][]Fault
	actionFault  *Fault // the InAction fault of the request under way, until an action takes it
}

// Config seeds the mock and sets its behaviour. The zero value is a valid, empty project.
// Its JSON (and YAML, through sigs.k8s.io/yaml) form is what hcloud-mock-server reads.
type Config struct {
	// Servers are the project's servers, in the API's own form. A server without status
	// is "running", without location in fsn1.
	Servers []schema.Server `json:"servers,omitempty"`
	// Networks are the project's networks; their routes are the starting route tables.
	Networks []schema.Network `json:"networks,omitempty"`
	// Certificates are the project's certificates.
	Certificates []schema.Certificate `json:"certificates,omitempty"`
	// LoadBalancers are the project's load balancers, each as the API's create request
	// for it: made as POST /load_balancers makes one (checked, the API's defaults, public
	// addresses from the pools in this order), after the servers, networks and
	// certificates it names, with no action.
	LoadBalancers []LoadBalancerSeed `json:"loadBalancers,omitempty"`
	// IPv4Pool and IPv6Pool are the prefixes load balancers get their public addresses
	// from, in order, never twice (DefaultIPv4Pool, DefaultIPv6Pool when empty).
	IPv4Pool string `json:"ipv4Pool,omitempty"`
	IPv6Pool string `json:"ipv6Pool,omitempty"`
	// RateLimit is the project's request budget (DefaultRateLimit when zero).
	RateLimit RateLimit `json:"rateLimit,omitzero"`
	// ActionPolls is how many reads of an action still answer "running"; ActionDuration
	// how long, on Clock, it runs at least. An action is done once both are over; with
	// both zero it is done in the answer that started it.
	ActionPolls    int           `json:"actionPolls,omitempty"`
	ActionDuration time.Duration `json:"-"`
	// Clock is the clock of the rate limit and of actions (the real clock when nil).
	Clock clock.PassiveClock `json:"-"`
}

// LoadBalancerSeed is a load balancer of Config: the body of the API's create request
// (name, load_balancer_type, location or network_zone, labels, algorithm, services with
// their health checks, targets, network, public_interface), and its ID.
type LoadBalancerSeed struct {
	// ID is the load balancer's ID; 0: the next free one, as a create gives.
	ID int64 `json:"id,omitempty"`
	schema.LoadBalancerCreateRequest
}

// RateLimit is a token bucket over all requests, as the API's per-project limit.
type RateLimit struct {
	// Limit is the bucket's size: the requests allowed at once.
	Limit int `json:"limit,omitempty"`
	// PerSecond is how many requests the bucket gains back each second (at most 10^9).
	PerSecond float64 `json:"perSecond,omitempty"`
}

// Defaults of Config.
var (
	// DefaultRateLimit is the API's documented limit: 3,600 requests an hour, one more
	// each second.
	DefaultRateLimit = RateLimit{Limit: 3600, PerSecond: 1}
	// DefaultIPv4Pool is TEST-NET-3 (RFC 5737).
	DefaultIPv4Pool = "203.0.113.0/24"
	// DefaultIPv6Pool is in the documentation prefix (RFC 3849).
	DefaultIPv6Pool = "2001:db8::/64"
)

// Paging of lists, as the API pages them.
const (
	// DefaultPerPage is the page size of a list that asks for none.
	DefaultPerPage = 25
	// MaxPerPage is the largest page size; a larger per_page gets this.
	MaxPerPage = 50
)

// Fault makes calls to an endpoint fail; see Server.Inject.
type Fault struct {
	// Code is the API's error code ("conflict", "service_error", ...): the status and
	// body of the answer, or the error of the action.
	Code string
	// Message is the error's message (the code when empty).
	Message string
	// InAction accepts the call and makes the action it starts end in "error" with Code,
	// the change not made (a create leaves nothing). A call that starts no action lets
	// such a fault wait for the next one that does.
	InAction bool
}

// Inventory is a copy of everything the mock holds, sorted by ID.
type Inventory struct {
	Servers       []schema.Server
	LoadBalancers []schema.LoadBalancer
	Networks      []schema.Network
	Certificates  []schema.Certificate
	Actions       []schema.Action
}

// New returns a mock holding cfg's resources. It fails on a seed the API could not hold:
// a duplicate ID or name, an invalid address or pool, a load balancer its create would
// refuse.
func New(cfg Config) (*Server, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RateLimit == (RateLimit{}) {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.RateLimit.Limit < 1 || !(cfg.RateLimit.PerSecond > 0) || cfg.RateLimit.PerSecond > float64(time.Second) {
		return nil, fmt.Errorf("hcloudmock: rate limit %+v: limit and perSecond must be positive, perSecond at most %d (one request a nanosecond)", cfg.RateLimit, time.Second)
	}
	if cfg.ActionPolls < 0 || cfg.ActionDuration < 0 {
		return nil, fmt.Errorf("hcloudmock: actionPolls %d, actionDuration %v: cannot be negative", cfg.ActionPolls, cfg.ActionDuration)
	}
	cfg.IPv4Pool = cmp.Or(cfg.IPv4Pool, DefaultIPv4Pool)
	cfg.IPv6Pool = cmp.Or(cfg.IPv6Pool, DefaultIPv6Pool)
	s := &Server{
		cfg:          cfg,
		mux:          http.NewServeMux(),
		servers:      map[int64]*schema.Server{},
		lbs:          map[int64]*schema.LoadBalancer{},
		networks:     map[int64]*schema.Network{},
		certificates: map[int64]*schema.Certificate{},
		actions:      map[int64]*action{},
		calls:        map[string]int{},
		faults:       map[string][]Fault{},
	}
	for _, p := range []struct {
		prefix string
		addr   *netip.Addr
		v4     bool
	}{{cfg.IPv4Pool, &s.ipv4, true}, {cfg.IPv6Pool, &s.ipv6, false}} {
		pfx, err := netip.ParsePrefix(p.prefix)
		if err != nil || pfx.Addr().Is4() != p.v4 {
			return nil, fmt.Errorf("hcloudmock: address pool %q: not an IPv%s prefix", p.prefix, map[bool]string{true: "4", false: "6"}[p.v4])
		}
		*p.addr = pfx.Masked().Addr()
	}
	s.bucket.Set(cfg.RateLimit.PerSecond, cfg.RateLimit.Limit)
	if err := s.seed(cfg); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Calls returns how many requests each endpoint received, by its route pattern
// ("GET /servers/{id}", "POST /load_balancers/{id}/actions/add_target"; "/" for a path
// the mock does not serve), whatever their answer (rate-limited and faulted ones too).
func (s *Server) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// Calls counts the requests of each endpoint, by its route pattern (see Server.Calls).
type Calls map[string]int

// Writes returns the number of requests that are not reads: of every pattern but the
// GET ones ("/", a path the mock does not serve, counts too).
func (c Calls) Writes() int {
	n := 0
	for pattern, calls := range c {
		if !strings.HasPrefix(pattern, "GET ") {
			n += calls
		}
	}
	return n
}

// Sub returns the requests made since before was taken: c minus before, per pattern,
// without the patterns whose count did not change.
func (c Calls) Sub(before Calls) Calls {
	out := maps.Clone(c)
	for pattern, calls := range before {
		if out[pattern] -= calls; out[pattern] == 0 {
			delete(out, pattern)
		}
	}
	return out
}

// Inject makes the next times calls to endpoint (a route pattern, as in Calls) fail with
// f, after the ones injected before. It is how a test scripts a fault; faults do not
// expire otherwise.
func (s *Server) Inject(endpoint string, times int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range times {
		s.faults[endpoint] = append(s.faults[endpoint], f)
	}
}

// AddServer adds srv to the project as Config.Servers would (its ID must be new), as if
// created behind the API's back: tests change the list of servers between two page reads
// with it.
func (s *Server) AddServer(srv schema.Server) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.servers[srv.ID]; ok {
		return fmt.Errorf("hcloudmock: server %d exists", srv.ID)
	}
	return s.seed(Config{Servers: []schema.Server{srv}})
}

// DeleteServer removes the server with the ID id, as if deleted behind the API's back.
func (s *Server) DeleteServer(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.servers, id)
	for _, n := range s.networks {
		n.Servers = slices.DeleteFunc(n.Servers, func(sid int64) bool { return sid == id })
	}
}

// LoadBalancersTargeting returns the IDs, in order, of the load balancers that have the
// server with the ID id among their server targets. Like Inventory it is no API call; it
// copies no load balancer, so it stays cheap on a project of large ones.
func (s *Server) LoadBalancersTargeting(id int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, lbID := range sortedKeys(s.lbs) {
		if slices.ContainsFunc(s.lbs[lbID].Targets, func(t schema.LoadBalancerTarget) bool {
			return t.Type == "server" && t.Server != nil && t.Server.ID == id
		}) {
			out = append(out, lbID)
		}
	}
	return out
}

// Inventory returns a copy of the mock's state. Reading it is no API call: it counts no
// call and advances no action.
func (s *Server) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	var inv Inventory
	for _, id := range sortedKeys(s.servers) {
		inv.Servers = append(inv.Servers, clone(*s.servers[id]))
	}
	for _, id := range sortedKeys(s.lbs) {
		inv.LoadBalancers = append(inv.LoadBalancers, clone(*s.lbs[id]))
	}
	for _, id := range sortedKeys(s.networks) {
		inv.Networks = append(inv.Networks, clone(*s.networks[id]))
	}
	for _, id := range sortedKeys(s.certificates) {
		inv.Certificates = append(inv.Certificates, clone(*s.certificates[id]))
	}
	for _, id := range sortedKeys(s.actions) {
		inv.Actions = append(inv.Actions, s.actions[id].view(s.cfg.Clock.Now()))
	}
	return inv
}

// handler answers a request under the mock's lock with the answer's status and body, or
// an API error.
type handler func(r *http.Request) (int, any, *apiError)

// handle registers h for pattern behind what every request goes through, in the API's
// order: the count, the rate limit (its headers on every answer), the token, a scripted
// fault.
func (s *Server) handle(pattern string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		status, body := s.serve(pattern, h, r, w.Header())
		writeJSON(w, status, body)
	})
}

func (s *Server) serve(pattern string, h handler, r *http.Request, header http.Header) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[pattern]++
	now := s.cfg.Clock.Now()
	wait := s.bucket.TakeNow(now)
	s.rateLimitHeaders(header, now)
	if wait > 0 {
		return errorf(codeRateLimited, "limit of %d requests reached", s.cfg.RateLimit.Limit).answer()
	}
	if r.Header.Get("Authorization") == "" {
		return errorf(codeUnauthorized, "unable to authenticate").answer()
	}
	var pending *Fault
	if q := s.faults[pattern]; len(q) > 0 {
		if pending = &q[0]; !pending.InAction {
			s.faults[pattern] = q[1:]
			return errorf(pending.Code, "%s", cmp.Or(pending.Message, pending.Code)).answer()
		}
	}
	s.actionFault = pending
	status, body, apiErr := h(r)
	if pending != nil && s.actionFault == nil { // an action took it
		s.faults[pattern] = s.faults[pattern][1:]
	}
	s.actionFault = nil
	if apiErr != nil {
		return apiErr.answer()
	}
	return status, body
}

// rateLimitHeaders sets the API's RateLimit-* headers from the bucket: its size, the
// requests left now, and when (Unix seconds) it is full again.
func (s *Server) rateLimitHeaders(h http.Header, now time.Time) {
	limit := s.cfg.RateLimit.Limit
	interval := time.Duration(float64(time.Second) / s.cfg.RateLimit.PerSecond)
	full := s.bucket.TAT()
	used := 0
	if full.After(now) {
		used = int((full.Sub(now) + interval - 1) / interval)
	} else {
		full = now
	}
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(limit-used, 0)))
	h.Set("RateLimit-Reset", strconv.FormatInt(full.Add(time.Second-1).Unix(), 10))
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// writeJSON writes body as the API does: JSON, or no body at all.
func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// clone deep-copies a wire value through its JSON form, which is all it has.
func clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("hcloudmock: a wire type does not marshal: %v", err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("hcloudmock: a wire type does not unmarshal: %v", err))
	}
	return out
}
