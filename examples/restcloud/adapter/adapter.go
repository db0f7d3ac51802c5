package adapter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

func init() {
	provider.Register("restcloud", provider.Backend[Config]{
		Name: "restcloud", NeedsToken: true, New: func(cfg *provider.Config, section Config) (cloudapi.Client, error) {
			return New(section.Endpoint, cfg.Credentials.Token, nil), nil
		},
	}, provider.Options{LoadBalancerSettings: Settings})
}

// Settings are restcloud's own load balancer settings: ccmkit hands them over checked.
var Settings = loadbalancer.Settings{{Name: "size", Values: []string{"small", "medium", "large"}, Default: "small",
	Doc: "The load balancer's size: how many connections it takes, and its price."}}

// Config is the `restcloud:` section of the cloud config.
type Config struct {
	// Endpoint is the API's base URL (YAML "endpoint"); /v1/instances... are appended to it.
	Endpoint string `yaml:"endpoint"`
}

// Validate reports whether Endpoint is an absolute http or https URL.
func (c *Config) Validate() error {
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint: %q is not an absolute http(s) URL", c.Endpoint)
	}
	return nil
}

// Client is a cloudapi.Client of the restcloud API. It is safe for concurrent use.
type Client struct {
	endpoint string
	auth     func(http.Header) // sets the token; a func, so that printing a Client shows none
	http     *http.Client
}

// MaxAnswerBytes bounds the body of a successful answer to a write, and MaxReadBytes to
// a read (a page of a list: 100 load balancers of 20,000 targets each are about 26 MB): a
// longer one is an error, never decoded in part. An error answer's body is read up to
// maxErrorBytes.
const (
	MaxAnswerBytes = 16 << 20
	MaxReadBytes   = 256 << 20
)

// maxErrorBytes bounds what is read of an error answer's body.
const maxErrorBytes = 4096

// New returns a client of the API at endpoint that authenticates with token, sending its
// requests with a copy of hc (nil means http.DefaultClient) that follows no redirect: Go's
// client follows a 301, 302 or 303 answer to a POST, PUT or DELETE with a GET, whose 200
// would read as a write that succeeded while the cloud is unchanged. A redirect is an
// error instead (ErrInvalidRequest, naming its Location). It makes no request.
func New(endpoint string, token provider.Secret, hc *http.Client) *Client {
	auth := func(h http.Header) { h.Set("Authorization", "Bearer "+token.Reveal()) }
	noRedirects := *cmp.Or(hc, http.DefaultClient) // a copy: the caller's client is left as it is
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{endpoint: strings.TrimSuffix(endpoint, "/"), auth: auth, http: &noRedirects}
}

// Instances returns the client itself.
func (c *Client) Instances() cloudapi.InstanceAPI { return c }

// LoadBalancers returns the client itself: restcloud has load balancers.
func (c *Client) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return c, true }

// Routes returns the client itself: restcloud has routes.
func (c *Client) Routes() (cloudapi.RouteAPI, bool) { return c, true }

// do sends one request with in as its JSON body (nil for none) and decodes a 2xx answer
// into out (nil to ignore it). It maps every failure onto a cloudapi sentinel: a 3xx too
// (statusError), and a 2xx answer longer than MaxAnswerBytes (MaxReadBytes for a GET).
func (c *Client) do(ctx context.Context, op cloudapi.Operation, id, method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+path, &body)
	if err != nil {
		return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	c.auth(req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil { // no answer: a timeout, a canceled context, a lost connection
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		return statusError(op, id, resp, fmt.Errorf("%s %s: %s", method, path, resp.Status))
	}
	// Read whole before decoding, so that an answer cut at the bound is never decoded.
	limit := int64(MaxAnswerBytes)
	if method == http.MethodGet {
		limit = MaxReadBytes
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, fmt.Errorf("%s %s: reading the answer: %w", method, path, err))
	case int64(len(data)) > limit: // for a write: applied or not, unknown
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, fmt.Errorf("%s %s: %s with an answer longer than %d bytes: not the API's answer (a proxy's?)", method, path, resp.Status, limit))
	case out == nil:
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return cloudapi.NewError(cloudapi.ErrTransient, op, id, fmt.Errorf("%s %s: reading the answer: %w", method, path, err))
	}
	return nil
}

// statusError classifies a non-2xx answer, keeping the server's message in the cause. Only
// a 404 with the API's error body of code "not_found" is ErrNotFound. A 3xx is
// ErrInvalidRequest naming its Location: the API redirects nothing, so the endpoint is
// wrong (http for https, a moved host), and a write behind it never reaches the API.
func statusError(op cloudapi.Operation, id string, resp *http.Response, cause error) *cloudapi.Error {
	var msg struct{ Code, Message string }
	typed := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&msg) == nil
	if typed && msg.Message != "" {
		cause = fmt.Errorf("%w: %s: %s", cause, msg.Code, msg.Message)
	}
	e := cloudapi.NewError(cloudapi.ErrTransient, op, id, cause) // 5xx and anything unexpected: the outcome is unknown
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		e.Class = cloudapi.ErrThrottled
	case code == http.StatusNotFound && typed && msg.Code == "not_found":
		e.Class = cloudapi.ErrNotFound
	case code == http.StatusNotFound: // from a wrong base path or a proxy, not from the API
		e.Class, e.Err = cloudapi.ErrInvalidRequest, fmt.Errorf("%w: not the API's not-found error: check the endpoint's base URL", cause)
	case code/100 == 3:
		e.Class, e.Err = cloudapi.ErrInvalidRequest, fmt.Errorf("%w: a redirect to %q, which the adapter does not follow (a write would not reach the API): set the endpoint to the API's own URL", cause, resp.Header.Get("Location"))
	case code == http.StatusConflict:
		e.Class = cloudapi.ErrConflict
	case code >= 400 && code < 500: // 400, 401, 403...: the same request cannot succeed
		e.Class = cloudapi.ErrInvalidRequest
	}
	if errors.Is(e.Class, cloudapi.ErrThrottled) || errors.Is(e.Class, cloudapi.ErrTransient) {
		e.RetryAfter = cloudapi.ParseRetryAfter(resp.Header)
	}
	return e
}

// listQuery encodes opts as the tag, pageSize and pageToken query parameters.
func listQuery(opts cloudapi.ListOptions) string {
	q := url.Values{"pageSize": {strconv.Itoa(max(opts.PageSize, 0))}, "pageToken": {opts.PageToken}}
	for k, v := range opts.Tags {
		q.Add("tag", k+"="+v)
	}
	return "?" + q.Encode()
}

// The API's JSON bodies (see package server). Instances, routes and pages have cloudapi's
// field names (decoding ignores case), so they decode into cloudapi types as they are.
type (
	listener struct {
		Name         string               `json:"name"`
		Protocol     cloudapi.Protocol    `json:"protocol"`
		Port         int32                `json:"port"`
		TargetPort   int32                `json:"targetPort"`
		AppProtocol  cloudapi.AppProtocol `json:"appProtocol"`
		Certificates []string             `json:"certificates"`
	}
	healthCheck struct {
		Protocol           cloudapi.HealthCheckProtocol `json:"protocol"`
		Port               int32                        `json:"port"`
		Path               string                       `json:"path"`
		IntervalMillis     int64                        `json:"intervalMillis"`
		TimeoutMillis      int64                        `json:"timeoutMillis"`
		HealthyThreshold   int32                        `json:"healthyThreshold"`
		UnhealthyThreshold int32                        `json:"unhealthyThreshold"`
	}
	lbSpec struct {
		Name          string                   `json:"name"`
		Internal      bool                     `json:"internal"`
		Listeners     []listener               `json:"listeners"`
		Targets       []string                 `json:"targets"`
		HealthCheck   *healthCheck             `json:"healthCheck,omitempty"`
		SourceRanges  []string                 `json:"sourceRanges"`
		ProxyProtocol bool                     `json:"proxyProtocol"`
		IPFamilies    []cloudapi.IPFamily      `json:"ipFamilies"`
		RequestedIPs  []string                 `json:"requestedIPs"`
		Tags          map[string]string        `json:"tags"`
		Affinity      cloudapi.SessionAffinity `json:"sessionAffinity"`
		AffinityMs    int64                    `json:"sessionAffinityTimeoutMillis"`
		Size          string                   `json:"size,omitempty"`
	}
	loadBalancer struct {
		ID string `json:"id"`
		lbSpec
		Addresses []string                    `json:"addresses"`
		Hostname  string                      `json:"hostname"`
		Status    cloudapi.LoadBalancerStatus `json:"status"`
	}
	routeSpec struct {
		Name             string            `json:"name"`
		DestinationCIDR  string            `json:"destinationCIDR"`
		TargetInstanceID string            `json:"targetInstanceID"`
		TargetAddress    string            `json:"targetAddress"`
		Tags             map[string]string `json:"tags"`
	}
	page[T any] struct {
		Items         []T    `json:"items"`
		NextPageToken string `json:"nextPageToken"`
	}
)

// writeLB sends spec s with method to path. A setting restcloud lacks is refused, never dropped.
func writeLB(ctx context.Context, c *Client, op cloudapi.Operation, id, method, path string, s cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	w := lbSpec{s.Name, s.Internal, convert(s.Listeners, func(l cloudapi.Listener) listener {
		return listener{l.Name, l.Protocol, l.Port, l.TargetPort, l.AppProtocol, l.Certificates}
	}), s.Targets, nil, s.SourceRanges,
		s.ProxyProtocol, s.IPFamilies, s.RequestedIPs, s.Tags, s.SessionAffinity, s.SessionAffinityTimeout.Milliseconds(), s.SettingValues["size"]}
	if hc := s.HealthCheck; hc != nil {
		w.HealthCheck = &healthCheck{hc.Protocol, hc.Port, hc.Path, hc.Interval.Milliseconds(),
			hc.Timeout.Milliseconds(), hc.HealthyThreshold, hc.UnhealthyThreshold}
	}
	if err := Settings.Check(s.SettingValues); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, err)
	}
	if used := (cloudapi.LoadBalancerShape{}).Uses(s); len(used) > 0 { // one health check per load balancer
		return nil, cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, fmt.Errorf("restcloud's load balancers do not support %v", used))
	}
	return call(ctx, c, op, id, method, path, w, loadBalancer.cloud)
}

func (w loadBalancer) cloud() cloudapi.LoadBalancer {
	s := cloudapi.LoadBalancerSpec{Name: w.Name, Internal: w.Internal, Targets: w.Targets, SourceRanges: w.SourceRanges,
		Listeners: convert(w.Listeners, func(l listener) cloudapi.Listener {
			return cloudapi.Listener{Name: l.Name, Protocol: l.Protocol, Port: l.Port, TargetPort: l.TargetPort, AppProtocol: l.AppProtocol, Certificates: l.Certificates}
		}),
		ProxyProtocol: w.ProxyProtocol, IPFamilies: w.IPFamilies, RequestedIPs: w.RequestedIPs, Tags: w.Tags,
		SessionAffinity: w.Affinity, SessionAffinityTimeout: time.Duration(w.AffinityMs) * time.Millisecond}
	if w.Size != "" {
		s.SettingValues = map[string]string{"size": w.Size}
	}
	if hc := w.HealthCheck; hc != nil {
		s.HealthCheck = &cloudapi.HealthCheck{Protocol: hc.Protocol, Port: hc.Port, Path: hc.Path,
			Interval: time.Duration(hc.IntervalMillis) * time.Millisecond, Timeout: time.Duration(hc.TimeoutMillis) * time.Millisecond,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold}
	}
	return cloudapi.LoadBalancer{ID: w.ID, Spec: s, Addresses: w.Addresses, Hostname: w.Hostname, Status: w.Status}
}

// convert maps every item of in with f.
func convert[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, a := range in {
		out[i] = f(a)
	}
	return out
}

// same is the conversion of an answer that decodes into its cloudapi type.
func same[T any](v T) T { return v }

// call makes one request and converts its JSON answer of type W with conv.
func call[W, C any](ctx context.Context, c *Client, op cloudapi.Operation, id, method, path string, in any, conv func(W) C) (*C, error) {
	var w W
	if err := c.do(ctx, op, id, method, path, in, &w); err != nil {
		return nil, err
	}
	out := conv(w)
	return &out, nil
}

// GetInstance answers GET /v1/instances/{id}.
func (c *Client) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return call(ctx, c, cloudapi.OpGetInstance, id, http.MethodGet, "/v1/instances/"+url.PathEscape(id), nil, same[cloudapi.Instance])
}

// ListInstances answers GET /v1/instances.
func (c *Client) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return call(ctx, c, cloudapi.OpListInstances, "", http.MethodGet, "/v1/instances"+listQuery(opts), nil, same[cloudapi.InstancePage])
}

// GetLoadBalancer answers GET /v1/loadbalancers/{id}.
func (c *Client) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	return call(ctx, c, cloudapi.OpGetLoadBalancer, id, http.MethodGet, "/v1/loadbalancers/"+url.PathEscape(id), nil, loadBalancer.cloud)
}

// ListLoadBalancers answers GET /v1/loadbalancers.
func (c *Client) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return call(ctx, c, cloudapi.OpListLoadBalancers, "", http.MethodGet, "/v1/loadbalancers"+listQuery(opts), nil,
		func(p page[loadBalancer]) cloudapi.LoadBalancerPage {
			return cloudapi.LoadBalancerPage{Items: convert(p.Items, loadBalancer.cloud), NextPageToken: p.NextPageToken}
		})
}

// CreateLoadBalancer answers POST /v1/loadbalancers.
func (c *Client) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	return writeLB(ctx, c, cloudapi.OpCreateLoadBalancer, "", http.MethodPost, "/v1/loadbalancers", spec)
}

// UpdateLoadBalancer answers PUT /v1/loadbalancers/{id}, which replaces the whole spec:
// the API has no finer-grained calls, so update.Changes is not needed.
func (c *Client) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	return writeLB(ctx, c, cloudapi.OpUpdateLoadBalancer, id, http.MethodPut, "/v1/loadbalancers/"+url.PathEscape(id), update.Spec)
}

// DeleteLoadBalancer answers DELETE /v1/loadbalancers/{id}.
func (c *Client) DeleteLoadBalancer(ctx context.Context, id string) error {
	return c.do(ctx, cloudapi.OpDeleteLoadBalancer, id, http.MethodDelete, "/v1/loadbalancers/"+url.PathEscape(id), nil, nil)
}

// ListRoutes answers GET /v1/routes.
func (c *Client) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return call(ctx, c, cloudapi.OpListRoutes, "", http.MethodGet, "/v1/routes"+listQuery(opts), nil, same[cloudapi.RoutePage])
}

// CreateRoute answers POST /v1/routes.
func (c *Client) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	return call(ctx, c, cloudapi.OpCreateRoute, "", http.MethodPost, "/v1/routes", routeSpec(spec), same[cloudapi.Route])
}

// DeleteRoute answers DELETE /v1/routes/{id}.
func (c *Client) DeleteRoute(ctx context.Context, id string) error {
	return c.do(ctx, cloudapi.OpDeleteRoute, id, http.MethodDelete, "/v1/routes/"+url.PathEscape(id), nil, nil)
}
