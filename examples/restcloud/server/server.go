package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// Options configure a Handler.
type Options struct {
	// Token is the bearer token every request must carry. Empty accepts requests without
	// one.
	Token string
	// RateLimit limits the rate of all requests; nil means no limit.
	RateLimit *RateLimit
	// Clock is the server's clock for the rate limit. Nil means the real clock,
	// clock.RealClock{}.
	Clock clock.PassiveClock
}

// RateLimit is a token bucket over all requests.
type RateLimit struct {
	// QPS is how many tokens the bucket gains per second. It must be positive.
	QPS float64
	// Burst is how many tokens the bucket holds; it starts full. Below 1 counts as 1.
	Burst int
}

// Handler serves the cloud API over a fake cloud. It is safe for concurrent use.
type Handler struct {
	cloud cloudapi.Client
	token string
	mux   *http.ServeMux

	limit  *RateLimit
	clock  clock.PassiveClock
	mu     sync.Mutex // guards tokens and last
	tokens float64
	last   time.Time
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler serving cloud's instances, load balancers and routes. The cloud
// must have load balancers and routes enabled.
func New(cloud *fake.Cloud, opts Options) *Handler { return ForClient(cloud, opts) }

// ForClient returns a Handler serving any cloudapi.Client with load balancers and routes:
// a fake cloud behind cloudapi/faultinject, for one, so that the API answers 429 and 503
// as the faults say (the restcloud-server command).
func ForClient(cloud cloudapi.Client, opts Options) *Handler {
	h := &Handler{cloud: cloud, token: opts.Token, mux: http.NewServeMux(), limit: opts.RateLimit, clock: opts.Clock}
	if h.clock == nil {
		h.clock = clock.RealClock{}
	}
	if h.limit != nil {
		h.tokens = float64(max(h.limit.Burst, 1))
		h.last = h.clock.Now()
	}
	h.mux.HandleFunc("GET /v1/instances", h.listInstances)
	h.mux.HandleFunc("GET /v1/instances/{id}", h.getInstance)
	h.mux.HandleFunc("GET /v1/loadbalancers", h.listLoadBalancers)
	h.mux.HandleFunc("POST /v1/loadbalancers", h.createLoadBalancer)
	h.mux.HandleFunc("GET /v1/loadbalancers/{id}", h.getLoadBalancer)
	h.mux.HandleFunc("PUT /v1/loadbalancers/{id}", h.updateLoadBalancer)
	h.mux.HandleFunc("DELETE /v1/loadbalancers/{id}", h.deleteLoadBalancer)
	h.mux.HandleFunc("GET /v1/routes", h.listRoutes)
	h.mux.HandleFunc("POST /v1/routes", h.createRoute)
	h.mux.HandleFunc("DELETE /v1/routes/{id}", h.deleteRoute)
	return h
}

// ServeHTTP authenticates and rate-limits the request, then serves it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) != 1 {
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
			return
		}
	}
	if wait, ok := h.take(); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		writeError(w, http.StatusTooManyRequests, "throttled", "rate limit exceeded")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// take takes a token from the bucket, or returns the whole seconds until the next one.
func (h *Handler) take() (int, bool) {
	if h.limit == nil {
		return 0, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	burst := float64(max(h.limit.Burst, 1))
	h.tokens = min(burst, h.tokens+now.Sub(h.last).Seconds()*h.limit.QPS)
	h.last = now
	if h.tokens >= 1 {
		h.tokens--
		return 0, true
	}
	return max(1, int(math.Ceil((1-h.tokens)/h.limit.QPS))), false
}

// Wire types: the JSON of the API, as the package doc describes it.
type (
	address struct {
		Type    string `json:"type"`
		Address string `json:"address"`
	}
	instance struct {
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		Type      string            `json:"type"`
		Zone      string            `json:"zone"`
		Region    string            `json:"region"`
		State     string            `json:"state"`
		Addresses []address         `json:"addresses"`
		Tags      map[string]string `json:"tags"`
	}
	listener struct {
		Name       string `json:"name"`
		Protocol   string `json:"protocol"`
		Port       int32  `json:"port"`
		TargetPort int32  `json:"targetPort"`
		// AppProtocol is "", "TLS", "HTTP" or "HTTPS"; Certificates are the certificate
		// IDs of a listener that terminates TLS.
		AppProtocol  string   `json:"appProtocol,omitempty"`
		Certificates []string `json:"certificates,omitempty"`
	}
	healthCheck struct {
		Protocol           string `json:"protocol"`
		Port               int32  `json:"port"`
		Path               string `json:"path"`
		IntervalMillis     int64  `json:"intervalMillis"`
		TimeoutMillis      int64  `json:"timeoutMillis"`
		HealthyThreshold   int32  `json:"healthyThreshold"`
		UnhealthyThreshold int32  `json:"unhealthyThreshold"`
	}
	lbSpec struct {
		Name          string            `json:"name"`
		Internal      bool              `json:"internal"`
		Listeners     []listener        `json:"listeners"`
		Targets       []string          `json:"targets"`
		HealthCheck   *healthCheck      `json:"healthCheck,omitempty"`
		SourceRanges  []string          `json:"sourceRanges"`
		ProxyProtocol bool              `json:"proxyProtocol"`
		IPFamilies    []string          `json:"ipFamilies"`
		RequestedIPs  []string          `json:"requestedIPs"`
		Tags          map[string]string `json:"tags"`
		// SessionAffinity is "" or "ClientIP", with its timeout in whole milliseconds.
		SessionAffinity              string `json:"sessionAffinity,omitempty"`
		SessionAffinityTimeoutMillis int64  `json:"sessionAffinityTimeoutMillis,omitempty"`
		// Size is "small", "medium" or "large"; absent: built as "small".
		Size string `json:"size,omitempty"`
	}
	loadBalancer struct {
		ID string `json:"id"`
		lbSpec
		Addresses []string `json:"addresses"`
		Hostname  string   `json:"hostname,omitempty"`
		Status    string   `json:"status"`
	}
	routeSpec struct {
		Name             string            `json:"name"`
		DestinationCIDR  string            `json:"destinationCIDR"`
		TargetInstanceID string            `json:"targetInstanceID"`
		TargetAddress    string            `json:"targetAddress"`
		Tags             map[string]string `json:"tags"`
	}
	route struct {
		ID string `json:"id"`
		routeSpec
		Blackhole bool `json:"blackhole"`
	}
	page[T any] struct {
		Items         []T    `json:"items"`
		NextPageToken string `json:"nextPageToken"`
	}
	apiError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

func toInstance(in cloudapi.Instance) instance {
	out := instance{ID: in.ID, Name: in.Name, Type: in.Type, Zone: in.Zone, Region: in.Region,
		State: string(in.State), Tags: in.Tags, Addresses: []address{}}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, address{Type: string(a.Type), Address: a.Address})
	}
	return out
}

func toLoadBalancer(in cloudapi.LoadBalancer) loadBalancer {
	s := in.Spec
	out := loadBalancer{ID: in.ID, Addresses: in.Addresses, Hostname: in.Hostname, Status: string(in.Status), lbSpec: lbSpec{
		Name: s.Name, Internal: s.Internal, Targets: s.Targets, SourceRanges: s.SourceRanges,
		ProxyProtocol: s.ProxyProtocol, RequestedIPs: s.RequestedIPs, Tags: s.Tags,
		SessionAffinity: string(s.SessionAffinity), SessionAffinityTimeoutMillis: s.SessionAffinityTimeout.Milliseconds(),
		Size: s.SettingValues[SettingSize],
	}}
	for _, l := range s.Listeners {
		out.Listeners = append(out.Listeners, listener{l.Name, string(l.Protocol), l.Port, l.TargetPort, string(l.AppProtocol), l.Certificates})
	}
	for _, f := range s.IPFamilies {
		out.IPFamilies = append(out.IPFamilies, string(f))
	}
	if hc := s.HealthCheck; hc != nil {
		out.HealthCheck = &healthCheck{string(hc.Protocol), hc.Port, hc.Path, hc.Interval.Milliseconds(),
			hc.Timeout.Milliseconds(), hc.HealthyThreshold, hc.UnhealthyThreshold}
	}
	return out
}

func (s lbSpec) cloud() cloudapi.LoadBalancerSpec {
	out := cloudapi.LoadBalancerSpec{Name: s.Name, Internal: s.Internal, Targets: s.Targets,
		SourceRanges: s.SourceRanges, ProxyProtocol: s.ProxyProtocol, RequestedIPs: s.RequestedIPs, Tags: s.Tags,
		SessionAffinity:        cloudapi.SessionAffinity(s.SessionAffinity),
		SessionAffinityTimeout: time.Duration(s.SessionAffinityTimeoutMillis) * time.Millisecond}
	if s.Size != "" {
		out.SettingValues = map[string]string{SettingSize: s.Size}
	}
	for _, l := range s.Listeners {
		out.Listeners = append(out.Listeners, cloudapi.Listener{Name: l.Name, Protocol: cloudapi.Protocol(l.Protocol),
			Port: l.Port, TargetPort: l.TargetPort, AppProtocol: cloudapi.AppProtocol(l.AppProtocol), Certificates: l.Certificates})
	}
	for _, f := range s.IPFamilies {
		out.IPFamilies = append(out.IPFamilies, cloudapi.IPFamily(f))
	}
	if hc := s.HealthCheck; hc != nil {
		out.HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckProtocol(hc.Protocol), Port: hc.Port,
			Path: hc.Path, Interval: time.Duration(hc.IntervalMillis) * time.Millisecond,
			Timeout:          time.Duration(hc.TimeoutMillis) * time.Millisecond,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold}
	}
	return out
}

func toRoute(in cloudapi.Route) route {
	return route{ID: in.ID, Blackhole: in.Blackhole, routeSpec: routeSpec{Name: in.Name,
		DestinationCIDR: in.DestinationCIDR, TargetInstanceID: in.TargetInstanceID,
		TargetAddress: in.TargetAddress, Tags: in.Tags}}
}

func (s routeSpec) cloud() cloudapi.RouteSpec {
	return cloudapi.RouteSpec{Name: s.Name, DestinationCIDR: s.DestinationCIDR,
		TargetInstanceID: s.TargetInstanceID, TargetAddress: s.TargetAddress, Tags: s.Tags}
}

// listOptions reads the tag, pageSize and pageToken query parameters.
func listOptions(r *http.Request) (cloudapi.ListOptions, error) {
	q := r.URL.Query()
	opts := cloudapi.ListOptions{PageToken: q.Get("pageToken")}
	for _, tag := range q["tag"] {
		k, v, ok := strings.Cut(tag, "=")
		if !ok {
			return opts, fmt.Errorf("tag %q: want key=value", tag)
		}
		if opts.Tags == nil {
			opts.Tags = map[string]string{}
		}
		opts.Tags[k] = v
	}
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return opts, fmt.Errorf("pageSize %q: want a whole number, at least 0", s)
		}
		opts.PageSize = n
	}
	return opts, nil
}

// list serves one page of a List call.
func list[C, W any](w http.ResponseWriter, r *http.Request, call func(context.Context, cloudapi.ListOptions) ([]C, string, error), conv func(C) W) {
	opts, err := listOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	items, next, err := call(r.Context(), opts)
	if err != nil {
		writeCloudError(w, err)
		return
	}
	out := page[W]{Items: make([]W, 0, len(items)), NextPageToken: next}
	for _, it := range items {
		out.Items = append(out.Items, conv(it))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) lbs() cloudapi.LoadBalancerAPI { api, _ := h.cloud.LoadBalancers(); return api }
func (h *Handler) routes() cloudapi.RouteAPI     { api, _ := h.cloud.Routes(); return api }

func (h *Handler) listInstances(w http.ResponseWriter, r *http.Request) {
	list(w, r, func(ctx context.Context, o cloudapi.ListOptions) ([]cloudapi.Instance, string, error) {
		p, err := h.cloud.Instances().ListInstances(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return p.Items, p.NextPageToken, nil
	}, toInstance)
}

func (h *Handler) getInstance(w http.ResponseWriter, r *http.Request) {
	inst, err := h.cloud.Instances().GetInstance(r.Context(), r.PathValue("id"))
	answer(w, http.StatusOK, inst, err, toInstance)
}

func (h *Handler) listLoadBalancers(w http.ResponseWriter, r *http.Request) {
	list(w, r, func(ctx context.Context, o cloudapi.ListOptions) ([]cloudapi.LoadBalancer, string, error) {
		p, err := h.lbs().ListLoadBalancers(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return p.Items, p.NextPageToken, nil
	}, toLoadBalancer)
}

func (h *Handler) getLoadBalancer(w http.ResponseWriter, r *http.Request) {
	lb, err := h.lbs().GetLoadBalancer(r.Context(), r.PathValue("id"))
	answer(w, http.StatusOK, lb, err, toLoadBalancer)
}

func (h *Handler) createLoadBalancer(w http.ResponseWriter, r *http.Request) {
	var spec lbSpec
	if !readLBSpec(w, r, &spec) {
		return
	}
	lb, err := h.lbs().CreateLoadBalancer(r.Context(), spec.cloud())
	answer(w, http.StatusCreated, lb, err, toLoadBalancer)
}

// updateLoadBalancer replaces the whole spec: this API has no finer-grained calls, so it
// sends the fake no Changes.
func (h *Handler) updateLoadBalancer(w http.ResponseWriter, r *http.Request) {
	var spec lbSpec
	if !readLBSpec(w, r, &spec) {
		return
	}
	lb, err := h.lbs().UpdateLoadBalancer(r.Context(), r.PathValue("id"), cloudapi.LoadBalancerUpdate{Spec: spec.cloud()})
	answer(w, http.StatusOK, lb, err, toLoadBalancer)
}

// SettingSize is the fake's setting name under which the API's load balancer size is
// stored; the fake keeps it as it keeps any adapter setting.
const SettingSize = "size"

// Sizes are the load balancer sizes, smallest first. A load balancer without one is
// built as the first, and answered without one.
var Sizes = []string{"small", "medium", "large"}

// readLBSpec reads a load balancer spec, refusing a size that is not one of Sizes.
func readLBSpec(w http.ResponseWriter, r *http.Request, spec *lbSpec) bool {
	if !readJSON(w, r, spec) {
		return false
	}
	if spec.Size != "" && !slices.Contains(Sizes, spec.Size) {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("size: %q is not one of %s", spec.Size, strings.Join(Sizes, ", ")))
		return false
	}
	return true
}

func (h *Handler) deleteLoadBalancer(w http.ResponseWriter, r *http.Request) {
	noContent(w, h.lbs().DeleteLoadBalancer(r.Context(), r.PathValue("id")))
}

func (h *Handler) listRoutes(w http.ResponseWriter, r *http.Request) {
	list(w, r, func(ctx context.Context, o cloudapi.ListOptions) ([]cloudapi.Route, string, error) {
		p, err := h.routes().ListRoutes(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return p.Items, p.NextPageToken, nil
	}, toRoute)
}

func (h *Handler) createRoute(w http.ResponseWriter, r *http.Request) {
	var spec routeSpec
	if !readJSON(w, r, &spec) {
		return
	}
	rt, err := h.routes().CreateRoute(r.Context(), spec.cloud())
	answer(w, http.StatusCreated, rt, err, toRoute)
}

func (h *Handler) deleteRoute(w http.ResponseWriter, r *http.Request) {
	noContent(w, h.routes().DeleteRoute(r.Context(), r.PathValue("id")))
}

// readJSON decodes the request body strictly into v, or answers 400 and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "request body: "+err.Error())
		return false
	}
	return true
}

// answer writes the converted resource with status, or the cloud's error.
func answer[C, W any](w http.ResponseWriter, status int, res *C, err error, conv func(C) W) {
	if err != nil {
		writeCloudError(w, err)
		return
	}
	writeJSON(w, status, conv(*res))
}

func noContent(w http.ResponseWriter, err error) {
	if err != nil {
		writeCloudError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeCloudError answers with the status code of err's cloudapi class.
func writeCloudError(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "internal"
	switch class := cloudapi.ClassOf(err); {
	case errors.Is(class, cloudapi.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(class, cloudapi.ErrConflict):
		status, code = http.StatusConflict, "conflict"
	case errors.Is(class, cloudapi.ErrInvalidRequest):
		status, code = http.StatusBadRequest, "invalid"
	case errors.Is(class, cloudapi.ErrThrottled):
		status, code = http.StatusTooManyRequests, "throttled"
	case errors.Is(class, cloudapi.ErrTransient):
		status, code = http.StatusServiceUnavailable, "unavailable"
	}
	if d, ok := cloudapi.RetryAfter(err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
	var e *cloudapi.Error
	msg := err.Error()
	if errors.As(err, &e) && e.Err != nil {
		msg = e.Err.Error()
	}
	writeError(w, status, code, msg)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do then
}
