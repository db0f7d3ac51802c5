package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/examples/restcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/restcloud/server"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// testToken is the API token of every test server; tests check that it never leaks.
const testToken = "rc-secret-7f3a9c1e"

// node is the one instance of the small test clouds.
var node = cloudapi.Instance{
	ID: "i-1", Name: "node-a", Type: "m1.small", Zone: "zone-a", Region: "region-1", State: cloudapi.InstanceRunning,
	Addresses: []cloudapi.Address{{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}},
	Tags:      map[string]string{"pool": "a"},
}

// newCloud returns a fake cloud holding instances.
func newCloud(t testing.TB, cfg fake.Config, instances ...cloudapi.Instance) *fake.Cloud {
	t.Helper()
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	for _, inst := range instances {
		require.NoError(t, cloud.AddInstance(inst))
	}
	return cloud
}

// serve serves h on a test server that is closed when the test ends.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newBackend builds a fresh fake per backend, serves it through wrap and returns the
// adapter talking to it over HTTP.
func newBackend(cfg fake.Config, wrap func(http.Handler) http.Handler) cloudapitest.NewBackend {
	return func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		srv := serve(t, wrap(server.New(newCloud(t, cfg, f.Instances...), server.Options{Token: testToken})))
		return adapter.New(srv.URL, testToken, srv.Client())
	}
}

// withLatency delays every answer by 1 to 5 ms.
func withLatency(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
		h.ServeHTTP(w, r)
	})
}

func TestContract(t *testing.T) {
	plain := func(h http.Handler) http.Handler { return h }
	sizes := cloudapitest.WithSettings(map[string]string{"size": "small"}, map[string]string{"size": "large"}, map[string]string{"size": "medium"})
	for _, tc := range []struct {
		name    string
		backend cloudapitest.NewBackend
		opts    []cloudapitest.Option
	}{
		{"plain", newBackend(fake.Config{}, plain), []cloudapitest.Option{sizes}},
		{"server latency", newBackend(fake.Config{}, withLatency), nil},
		{"provisioning 3 reads, small pages", newBackend(fake.Config{PageSize: 5, Provisioning: fake.Provisioning{Reads: 3}}, plain), nil},
		{"hostnames without addresses", newBackend(fake.Config{Hostnames: fake.Hostnames{Domain: "lb.example.com", WithoutAddresses: true}}, plain),
			[]cloudapitest.Option{cloudapitest.WithoutAddresses()}},
	} {
		t.Run(tc.name, func(t *testing.T) { cloudapitest.Run(t, tc.backend, tc.opts...) })
	}
}

// TestMiddlebox: behind a middlebox that redirects writes (an HTTP-to-HTTPS redirect) or
// answers them with a long 200 of its own, no write succeeds and the API is unchanged,
// also when the load balancer the writes work on finishes provisioning meanwhile.
func TestMiddlebox(t *testing.T) {
	plain := func(h http.Handler) http.Handler { return h }
	for _, tc := range []struct {
		name string
		cfg  fake.Config
		wrap func(http.Handler) http.Handler
	}{
		{"active at once", fake.Config{}, plain},
		{"addresses given when provisioning finishes", fake.Config{Provisioning: fake.Provisioning{Reads: 1}}, addressedWhenActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloudapitest.RunMiddlebox(t, func(t testing.TB, f cloudapitest.Fixture) (string, func(string) cloudapi.Client) {
				srv := serve(t, tc.wrap(server.New(newCloud(t, tc.cfg, f.Instances...), server.Options{Token: testToken})))
				return srv.URL, func(baseURL string) cloudapi.Client { return adapter.New(baseURL, testToken, srv.Client()) }
			}, adapter.MaxAnswerBytes)
		})
	}
}

// addressedWhenActive answers the load balancers that are provisioning without their
// addresses, as a cloud that gives a load balancer its addresses when it has built it.
func addressedWhenActive(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var body any
		if !strings.HasPrefix(r.URL.Path, "/v1/loadbalancers") || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		lbs := []any{body}
		if m, ok := body.(map[string]any); ok && m["items"] != nil {
			lbs, _ = m["items"].([]any)
		}
		for _, lb := range lbs {
			if m, ok := lb.(map[string]any); ok && m["status"] == "provisioning" {
				m["addresses"] = []string{}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// retryAfterRecorder records the Retry-After header of every answer.
type retryAfterRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []string
}

func (r *retryAfterRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.next.ServeHTTP(w, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, w.Header().Get("Retry-After"))
}

// last returns the Retry-After header of the last answer.
func (r *retryAfterRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[len(r.seen)-1]
}

// TestServerThrottling drives the server's token bucket with a clock of its own: the
// contract suite does not retry, so throttling is checked here, call by call.
func TestServerThrottling(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := newCloud(t, fake.Config{}, node)
	rec := &retryAfterRecorder{next: server.New(cloud, server.Options{
		Token: testToken, RateLimit: &server.RateLimit{QPS: 0.5, Burst: 2}, Clock: clock,
	})}
	srv := serve(t, rec)
	client := adapter.New(srv.URL, testToken, srv.Client())
	routes, ok := client.Routes()
	require.True(t, ok)

	for range 2 {
		_, err := client.Instances().GetInstance(t.Context(), node.ID)
		require.NoError(t, err, "the bucket starts with Burst tokens")
	}
	_, err := routes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: node.ID})
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	wait, ok := cloudapi.RetryAfter(err)
	require.True(t, ok, "a 429 with Retry-After carries the wait: %v", err)
	assert.Equal(t, "2", rec.last(), "an empty bucket refilling 0.5 tokens/s asks for 2 s")
	assert.Equal(t, 2*time.Second, wait, "RetryAfter is the header's value")
	var cerr *cloudapi.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cloudapi.OpCreateRoute, cerr.Op)
	assert.Zero(t, cloud.Calls()[cloudapi.OpCreateRoute], "a throttled request never reaches the cloud")
	assert.Empty(t, cloud.Inventory().Routes, "a throttled create is not applied")

	clock.Step(wait)
	_, err = routes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: node.ID})
	require.NoError(t, err, "after the wait the bucket has a token again")
	assert.Len(t, cloud.Inventory().Routes, 1)
}

// TestStatusMapping checks the class of every kind of answer, from a server that answers
// only with the status under test.
func TestStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		status     int
		code       string // the error body's code
		retryAfter string
		want       error
		wantWait   time.Duration
	}{
		{http.StatusBadRequest, "invalid", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusUnauthorized, "unauthorized", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusForbidden, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusNotFound, "not_found", "", cloudapi.ErrNotFound, 0},
		{http.StatusNotFound, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusConflict, "conflict", "", cloudapi.ErrConflict, 0},
		{http.StatusTooManyRequests, "throttled", "7", cloudapi.ErrThrottled, 7 * time.Second},
		{http.StatusTooManyRequests, "throttled", "", cloudapi.ErrThrottled, 0},
		{http.StatusInternalServerError, "test", "", cloudapi.ErrTransient, 0},
		{http.StatusBadGateway, "test", "", cloudapi.ErrTransient, 0},
		{http.StatusServiceUnavailable, "unavailable", "30", cloudapi.ErrTransient, 30 * time.Second},
		{http.StatusNotModified, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusMovedPermanently, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusFound, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusSeeOther, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusTemporaryRedirect, "test", "", cloudapi.ErrInvalidRequest, 0},
		{http.StatusPermanentRedirect, "test", "", cloudapi.ErrInvalidRequest, 0},
	} {
		t.Run(fmt.Sprintf("%d %s retry-after %q", tc.status, tc.code, tc.retryAfter), func(t *testing.T) {
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status/100 == 3 && tc.status != http.StatusNotModified {
					w.Header().Set("Location", "/moved/v1/instances/i-1") // never followed
				}
				w.WriteHeader(tc.status)
				_, _ = fmt.Fprintf(w, `{"code":%q,"message":"the test's answer"}`, tc.code)
			}))
			client := adapter.New(srv.URL, testToken, srv.Client())
			_, err := client.Instances().GetInstance(t.Context(), "i-1")
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, tc.want, cloudapi.ClassOf(err), "exactly one class: %v", err)
			var cerr *cloudapi.Error
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, cloudapi.OpGetInstance, cerr.Op)
			assert.Equal(t, "i-1", cerr.ID)
			wait, _ := cloudapi.RetryAfter(err)
			assert.Equal(t, tc.wantWait, wait)
			if tc.status != http.StatusNotModified {
				assert.Contains(t, err.Error(), "the test's answer", "the server's message is kept")
			}
			if tc.status/100 == 3 && tc.status != http.StatusNotModified {
				assert.Contains(t, err.Error(), `a redirect to "/moved/v1/instances/i-1"`, "a redirect names its Location")
			}
		})
	}
}

// ops calls every operation of the adapter once, on IDs and names the tests' servers do
// not know.
var ops = []struct {
	op   cloudapi.Operation
	call func(context.Context, cloudapi.Client) error
}{
	{cloudapi.OpGetInstance, func(ctx context.Context, c cloudapi.Client) error {
		_, err := c.Instances().GetInstance(ctx, node.ID)
		return err
	}},
	{cloudapi.OpListInstances, func(ctx context.Context, c cloudapi.Client) error {
		_, err := c.Instances().ListInstances(ctx, cloudapi.ListOptions{})
		return err
	}},
	{cloudapi.OpGetLoadBalancer, func(ctx context.Context, c cloudapi.Client) error {
		_, err := lbAPI(c).GetLoadBalancer(ctx, "lb-1")
		return err
	}},
	{cloudapi.OpListLoadBalancers, func(ctx context.Context, c cloudapi.Client) error {
		_, err := lbAPI(c).ListLoadBalancers(ctx, cloudapi.ListOptions{})
		return err
	}},
	{cloudapi.OpCreateLoadBalancer, func(ctx context.Context, c cloudapi.Client) error {
		_, err := lbAPI(c).CreateLoadBalancer(ctx, lbSpec)
		return err
	}},
	{cloudapi.OpUpdateLoadBalancer, func(ctx context.Context, c cloudapi.Client) error {
		_, err := lbAPI(c).UpdateLoadBalancer(ctx, "lb-1", cloudapi.LoadBalancerUpdate{Spec: lbSpec})
		return err
	}},
	{cloudapi.OpDeleteLoadBalancer, func(ctx context.Context, c cloudapi.Client) error {
		return lbAPI(c).DeleteLoadBalancer(ctx, "lb-1")
	}},
	{cloudapi.OpListRoutes, func(ctx context.Context, c cloudapi.Client) error {
		_, err := routeAPI(c).ListRoutes(ctx, cloudapi.ListOptions{})
		return err
	}},
	{cloudapi.OpCreateRoute, func(ctx context.Context, c cloudapi.Client) error {
		_, err := routeAPI(c).CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: node.ID})
		return err
	}},
	{cloudapi.OpDeleteRoute, func(ctx context.Context, c cloudapi.Client) error {
		return routeAPI(c).DeleteRoute(ctx, "route-1")
	}},
}

// lbSpec is a load balancer that the fake cloud accepts.
var lbSpec = cloudapi.LoadBalancerSpec{Name: "web", Targets: []string{node.ID},
	Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}}

func lbAPI(c cloudapi.Client) cloudapi.LoadBalancerAPI { api, _ := c.LoadBalancers(); return api }
func routeAPI(c cloudapi.Client) cloudapi.RouteAPI     { api, _ := c.Routes(); return api }

// answer404 answers every request 404 with body, of the given content type.
func answer404(contentType, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(body))
	})
}

// TestOnlyTheAPIsNotFoundIsNotFound sends every operation to 404 answers of every kind:
// only the API's own error body with code "not_found" says that a resource does not
// exist. Any other 404 (a wrong base path, a proxy's page, an empty answer) says nothing
// about the resource; read as ErrNotFound it would make ccmkit delete every NotReady Node.
func TestOnlyTheAPIsNotFoundIsNotFound(t *testing.T) {
	api := serve(t, server.New(newCloud(t, fake.Config{}, node), server.Options{Token: testToken}))
	for _, tc := range []struct {
		name     string
		endpoint string // the adapter's endpoint; empty: a test server of handler
		handler  http.Handler
		want     error
	}{
		{"the API's typed not found", "", answer404("application/json",
			`{"code":"not_found","message":"no such resource"}`), cloudapi.ErrNotFound},
		{"wrong base path", api.URL + "/wrong", nil, cloudapi.ErrInvalidRequest},
		{"wrong API version", api.URL + "/v2", nil, cloudapi.ErrInvalidRequest},
		{"proxy HTML page", "", answer404("text/html",
			"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"), cloudapi.ErrInvalidRequest},
		{"empty answer", "", answer404("", ""), cloudapi.ErrInvalidRequest},
		{"plain text", "", http.NotFoundHandler(), cloudapi.ErrInvalidRequest},
		{"gateway JSON without a code", "", answer404("application/json",
			`{"message":"no Route matched with those values"}`), cloudapi.ErrInvalidRequest},
		{"JSON of another code", "", answer404("application/json",
			`{"code":"unknown_path","message":"no such path"}`), cloudapi.ErrInvalidRequest},
		{"truncated typed not found", "", answer404("application/json", `{"code":"not_found"`), cloudapi.ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = serve(t, tc.handler).URL
			}
			client := adapter.New(endpoint, testToken, api.Client())
			for _, op := range ops {
				err := op.call(t.Context(), client)
				require.ErrorIs(t, err, tc.want, "%s", op.op)
				assert.Equal(t, tc.want, cloudapi.ClassOf(err), "%s: exactly one class: %v", op.op, err)
				var cerr *cloudapi.Error
				require.ErrorAs(t, err, &cerr)
				assert.Equal(t, op.op, cerr.Op)
				assert.Contains(t, err.Error(), "404", "%s: the status is kept", op.op)
				if !errors.Is(tc.want, cloudapi.ErrNotFound) {
					assert.Contains(t, err.Error(), "check the endpoint", "%s: the error says what to do", op.op)
				}
			}
		})
	}
}

// TestWrongEndpointDeletesNoNode builds the registered provider with an endpoint whose
// base path is wrong: every call answers a bare 404, and InstanceExists must fail rather
// than answer false, on which the node lifecycle controller deletes the Node.
func TestWrongEndpointDeletesNoNode(t *testing.T) {
	srv := serve(t, server.New(newCloud(t, fake.Config{}, node), server.Options{Token: testToken}))
	cloud, err := cloudprovider.GetCloudProvider("restcloud", strings.NewReader(
		"restcloud:\n  endpoint: "+srv.URL+"/api\ncluster: {id: c1}\ncredentials:\n  token: "+testToken+"\n"))
	require.NoError(t, err)
	iv2, ok := cloud.InstancesV2()
	require.True(t, ok)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}, Spec: corev1.NodeSpec{ProviderID: "restcloud://" + node.ID}}
	exists, err := iv2.InstanceExists(t.Context(), n)
	require.Error(t, err, "a wrong endpoint found out nothing about the instance (exists %t)", exists)
	assert.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.ErrorContains(t, err, "check the endpoint")
}

// TestRetryAfter reads every kind of Retry-After header, on a throttled (429) and on a
// failed (503) answer: the wait is never negative, never wrapped around and at most 24
// hours, and a header that cannot be read asks for no wait at all.
func TestRetryAfter(t *testing.T) {
	const date = "Sun, 06 Nov 2033 08:49:37 GMT" // the answer's Date: the server's clock
	const day = 24 * time.Hour
	noDate := []string(nil) // a nil Date header makes the server send none
	for _, tc := range []struct {
		name, retryAfter string
		date             []string
		want             time.Duration
	}{
		{"absent", "", nil, 0},
		{"seconds", "7", nil, 7 * time.Second},
		{"zero", "0", nil, 0},
		{"leading zeros", "0030", nil, 30 * time.Second},
		{"one day", "86400", nil, day},
		{"over one day", "86401", nil, day},
		{"overflows when multiplied by time.Second", "9223372037", nil, day},
		{"largest int64", "9223372036854775807", nil, day},
		{"larger than any integer", "99999999999999999999", nil, day},
		{"negative", "-5", nil, 0},
		{"negative and huge", "-99999999999999999999", nil, 0},
		{"plus sign", "+5", nil, 0},
		{"fraction", "1.5", nil, 0},
		{"exponent", "1e3", nil, 0},
		{"not a number", "soon", nil, 0},
		{"date two minutes after the answer's", "Sun, 06 Nov 2033 08:51:37 GMT", []string{date}, 2 * time.Minute},
		{"date in RFC 850 form", "Sunday, 06-Nov-33 08:51:37 GMT", []string{date}, 2 * time.Minute},
		{"date in asctime form", "Sun Nov  6 08:51:37 2033", []string{date}, 2 * time.Minute},
		{"date equal to the answer's", date, []string{date}, 0},
		{"date before the answer's", "Sun, 06 Nov 1994 08:49:37 GMT", []string{date}, 0},
		{"date far after the answer's", "Fri, 31 Dec 9999 23:59:59 GMT", []string{date}, day},
		{"date, the answer's Date unreadable", "Sun, 06 Nov 2033 08:51:37 GMT", []string{"yesterday"}, 0},
		{"date, the answer without a Date", "Sun, 06 Nov 2033 08:51:37 GMT", noDate, 0},
		{"garbled date", "Sun, 06 Nov 2033 25:61:00 GMT", []string{date}, 0},
	} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(fmt.Sprintf("%s %d", tc.name, status), func(t *testing.T) {
				srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header()["Date"] = tc.date // nil: none at all
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(status)
				}))
				_, err := adapter.New(srv.URL, testToken, srv.Client()).Instances().GetInstance(t.Context(), node.ID)
				require.Error(t, err)
				wait, ok := cloudapi.RetryAfter(err)
				assert.Equal(t, tc.want, wait, "%v", err)
				assert.Equal(t, tc.want > 0, ok)
				var cerr *cloudapi.Error
				require.ErrorAs(t, err, &cerr)
				assert.GreaterOrEqual(t, cerr.RetryAfter, time.Duration(0), "never negative")
			})
		}
	}
}

func TestTransportFailures(t *testing.T) {
	blocked := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/instances/garbled":
			_, _ = w.Write([]byte(`{"id": "i-1", "state": `))
		case "/v1/instances/i-hangs": // hang until the client gives up
			close(blocked)
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	client := adapter.New(srv.URL, testToken, srv.Client()).Instances()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	t.Run("garbled answer", func(t *testing.T) {
		_, err := client.GetInstance(t.Context(), "garbled")
		require.ErrorIs(t, err, cloudapi.ErrTransient)
	})
	t.Run("connection refused", func(t *testing.T) {
		_, err := adapter.New(closed.URL, testToken, nil).Instances().GetInstance(t.Context(), "i-1")
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	})
	t.Run("canceled before the request", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := client.GetInstance(ctx, "i-does-not-exist")
		require.Error(t, err)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound, "a canceled call found out nothing")
		assert.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("deadline passed", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0))
		defer cancel()
		_, err := client.ListInstances(ctx, cloudapi.ListOptions{})
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("canceled while the server works", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-blocked; cancel() }()
		_, err := client.GetInstance(ctx, "i-hangs")
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	cloud := newCloud(t, fake.Config{}, node)
	srv := serve(t, server.New(cloud, server.Options{Token: testToken}))
	for _, token := range []provider.Secret{"", "wrong-token"} {
		_, err := adapter.New(srv.URL, token, srv.Client()).Instances().GetInstance(t.Context(), node.ID)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "token %q", token)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
		assert.Contains(t, err.Error(), "401")
	}
	assert.Zero(t, cloud.Calls().Total(), "an unauthorized request never reaches the cloud")
}

// TestTokenNeverLeaks makes every kind of failure and prints configs and clients, and
// looks for the token in all of it.
func TestTokenNeverLeaks(t *testing.T) {
	srv := serve(t, server.New(newCloud(t, fake.Config{}, node), server.Options{Token: "the-servers-token"}))
	good := serve(t, server.New(newCloud(t, fake.Config{}, node), server.Options{Token: testToken}))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()

	var printed []string
	add := func(err error) {
		require.Error(t, err)
		printed = append(printed, err.Error(), fmt.Sprintf("%v|%+v|%#v", err, err, err))
	}
	_, err := adapter.New(srv.URL, testToken, srv.Client()).Instances().GetInstance(t.Context(), node.ID) // 401
	add(err)
	goodClient := adapter.New(good.URL, testToken, good.Client())
	_, err = goodClient.Instances().GetInstance(t.Context(), "i-missing") // 404
	add(err)
	_, err = goodClient.Instances().GetInstance(canceled, node.ID)
	add(err)
	_, err = adapter.New(closed.URL, testToken, nil).Instances().GetInstance(t.Context(), node.ID)
	add(err)
	_, err = adapter.New("http://in valid", testToken, nil).Instances().GetInstance(t.Context(), node.ID)
	add(err)
	printed = append(printed, fmt.Sprintf("%v|%+v|%#v", goodClient, goodClient, goodClient))

	doc := "cluster: {id: c1}\nrestcloud: {endpoint: " + good.URL + "}\ncredentials: {token: " + testToken + "}\n"
	cfg, err := provider.ReadConfig(strings.NewReader(doc), "restcloud")
	require.NoError(t, err)
	require.Equal(t, testToken, cfg.Credentials.Token.Reveal())
	section := adapter.Config{Endpoint: good.URL}
	printed = append(printed, fmt.Sprintf("%v|%+v|%#v|%v|%+v", cfg, cfg, cfg, section, section))

	_, err = cloudprovider.GetCloudProvider("restcloud", strings.NewReader(
		"cluster: {id: c1}\nrestcloud: {endpoint: ftp://nowhere}\ncredentials: {token: "+testToken+"}\n"))
	add(err)

	for _, s := range printed {
		assert.NotContains(t, s, testToken)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		ok       bool
	}{
		{"https://api.restcloud.example", true},
		{"http://127.0.0.1:8080/base/", true},
		{"", false},
		{"api.restcloud.example", false},
		{"/v1", false},
		{"ftp://api.restcloud.example", false},
		{"https://", false},
		{"://bad", false},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			err := (&adapter.Config{Endpoint: tc.endpoint}).Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "endpoint: ")
			}
		})
	}
}

// TestRegisteredProvider builds the provider the adapter registers, as a
// cloud-controller-manager does from --cloud-provider and --cloud-config, and asks it
// about a Node.
func TestRegisteredProvider(t *testing.T) {
	srv := serve(t, server.New(newCloud(t, fake.Config{}, node), server.Options{Token: testToken}))
	t.Run("missing token", func(t *testing.T) {
		_, err := cloudprovider.GetCloudProvider("restcloud", strings.NewReader(
			"cluster: {id: c1}\nrestcloud: {endpoint: "+srv.URL+"}\n"))
		require.ErrorContains(t, err, "needs a token")
	})
	cloud, err := cloudprovider.GetCloudProvider("restcloud", strings.NewReader(
		"restcloud:\n  endpoint: "+srv.URL+"\ncluster: {id: c1}\ncredentials:\n  token: "+testToken+"\n"))
	require.NoError(t, err)
	require.NotNil(t, cloud)
	assert.Equal(t, "restcloud", cloud.ProviderName())
	iv2, ok := cloud.InstancesV2()
	require.True(t, ok)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}, Spec: corev1.NodeSpec{ProviderID: "restcloud://" + node.ID}}
	exists, err := iv2.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	assert.True(t, exists)
	md, err := iv2.InstanceMetadata(t.Context(), n)
	require.NoError(t, err)
	assert.Equal(t, node.Type, md.InstanceType)
	assert.Equal(t, node.Zone, md.Zone)
	assert.Equal(t, node.Region, md.Region)
	require.NotEmpty(t, md.NodeAddresses)
	assert.Equal(t, "10.0.0.1", md.NodeAddresses[0].Address)
}

// TestListQuery checks that tags, page size and page token reach the server.
func TestListQuery(t *testing.T) {
	other := node.Clone()
	other.ID, other.Tags = "i-2", map[string]string{"pool": "b", "ccmkit.io/cluster": "c=1&x"}
	cloud := newCloud(t, fake.Config{}, node, other)
	srv := serve(t, server.New(cloud, server.Options{Token: testToken}))
	api := adapter.New(srv.URL+"/", testToken, srv.Client()).Instances()

	page, err := api.ListInstances(t.Context(), cloudapi.ListOptions{Tags: map[string]string{"ccmkit.io/cluster": "c=1&x"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "i-2", page.Items[0].ID, "a tag value with '=' and '&' is matched whole")

	page, err = api.ListInstances(t.Context(), cloudapi.ListOptions{PageSize: 1})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, "i-1", page.Items[0].ID)
	require.NotEmpty(t, page.NextPageToken)
	page, err = api.ListInstances(t.Context(), cloudapi.ListOptions{PageSize: 1, PageToken: page.NextPageToken})
	require.NoError(t, err)
	assert.Equal(t, []string{"i-2"}, []string{page.Items[0].ID})
	assert.Empty(t, page.NextPageToken)

	_, err = api.ListInstances(t.Context(), cloudapi.ListOptions{PageSize: -1})
	assert.NoError(t, err, "a negative page size asks for the default, not a 400")
}

// TestREADMESettingsReference keeps the README's table of restcloud's annotations equal to
// its declaration. Run with CCMKIT_PRINT_ANNOTATIONS=1 to print the table to paste.
func TestREADMESettingsReference(t *testing.T) {
	want := adapter.Settings.Reference(loadbalancer.DefaultAnnotationPrefix)
	if os.Getenv("CCMKIT_PRINT_ANNOTATIONS") != "" {
		fmt.Print(want)
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), want, "the README's settings table is out of date: run CCMKIT_PRINT_ANNOTATIONS=1 go test -run TestREADMESettingsReference ./examples/restcloud/adapter and paste the table")
}

// TestSizeSetting runs the registered provider over HTTP: the size annotation reaches the
// API as its size field and is changed in place by one PUT; a size the API lacks is an
// annotation error before any write, and a setting restcloud lacks is refused, never sent.
func TestSizeSetting(t *testing.T) {
	cloud := newCloud(t, fake.Config{}, node)
	srv := serve(t, server.New(cloud, server.Options{Token: testToken}))
	ccm, err := cloudprovider.GetCloudProvider("restcloud", strings.NewReader(
		"restcloud: {endpoint: "+srv.URL+"}\ncluster: {id: c1}\ncredentials: {token: "+testToken+"}\n"))
	require.NoError(t, err)
	lbs, ok := ccm.LoadBalancer()
	require.True(t, ok)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Annotations: map[string]string{}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: node.Name}, Spec: corev1.NodeSpec{ProviderID: "restcloud://" + node.ID}}}
	only := func() cloudapi.LoadBalancer {
		t.Helper()
		inv := cloud.Inventory().LoadBalancers
		require.Len(t, inv, 1)
		return inv[0]
	}
	_, err = lbs.EnsureLoadBalancer(t.Context(), "c1", svc, nodes)
	require.NoError(t, err)
	first := only()
	assert.Equal(t, map[string]string{"size": "small"}, first.Spec.SettingValues, "the declared default")

	svc.Annotations[loadbalancer.DefaultAnnotationPrefix+"size"] = "Large"
	before := cloud.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "c1", svc, nodes)
	require.NoError(t, err)
	assert.Equal(t, int64(1), cloud.Calls().Sub(before)[cloudapi.OpUpdateLoadBalancer], "one update")
	assert.Equal(t, int64(1), cloud.Calls().Sub(before).Writes())
	lb := only()
	assert.Equal(t, first.ID, lb.ID)
	assert.Equal(t, first.Addresses, lb.Addresses)
	assert.Equal(t, map[string]string{"size": "large"}, lb.Spec.SettingValues, "canonical")

	svc.Annotations[loadbalancer.DefaultAnnotationPrefix+"size"] = "huge"
	before = cloud.Calls()
	_, err = lbs.EnsureLoadBalancer(t.Context(), "c1", svc, nodes)
	var aerr *loadbalancer.AnnotationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, "small, medium, large", aerr.Allowed)
	assert.Zero(t, cloud.Calls().Sub(before).Writes())

	client := adapter.New(srv.URL, testToken, srv.Client())
	api, _ := client.LoadBalancers()
	spec := lb.Spec.Clone()
	spec.SettingValues["algorithm"] = "round-robin"
	before = cloud.Calls()
	_, err = api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec})
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	assert.ErrorContains(t, err, "algorithm: no such setting (the adapter declares: size)")
	assert.Empty(t, cloud.Calls().Sub(before), "refused before any request")
}
