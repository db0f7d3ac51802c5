package cloudapitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// RedirectStatuses are the redirects RunMiddlebox answers writes with. Go's http.Client
// follows the first three with a GET, the last two with the same method and body.
var RedirectStatuses = []int{
	http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
	http.StatusTemporaryRedirect, http.StatusPermanentRedirect,
}

// NewRESTBackend builds a fresh, isolated backend holding exactly f's instances, served
// over HTTP at baseURL, and newClient, which returns the adapter under test talking to the
// API at any base URL (RunMiddlebox hands it its middlebox's). It fails t when it cannot,
// and registers any cleanup with t.Cleanup.
type NewRESTBackend func(t testing.TB, f Fixture) (baseURL string, newClient func(baseURL string) cloudapi.Client)

// RunMiddlebox checks a REST adapter behind an HTTP middlebox in front of its API (an
// HTTP-to-HTTPS redirect, a moved endpoint, a proxy answering in its own name): no write
// may succeed that did not reach the API. For each of RedirectStatuses, and for a 200
// whose body is longer than maxAnswerBytes (the adapter's bound of an answer's body), a
// middlebox forwards reads (GET, HEAD) to the API and answers every write itself: with
// the redirect, to a URL that answers a GET with 200 and "{}", or with the long 200 (valid
// JSON, then white space: an adapter that decodes a cut answer succeeds). Through it, the
// adapter makes every write of the contract: create, update and delete a load balancer
// and a route (when the client has them). Each must fail, a redirect with
// ErrInvalidRequest naming the redirect's Location, and the API must hold afterwards
// exactly what it held before (read by an adapter talking to it directly).
//
// An http.Client follows a 301, 302 or 303 answer to a POST, PUT or DELETE with a GET;
// an adapter that reads that GET's 200 as success leaks the load balancer it "deleted".
// Build the adapter's client so that it follows no redirect (CheckRedirect returning
// http.ErrUseLastResponse), map a 3xx to ErrInvalidRequest, and read at most a bound of
// every answer, failing beyond it.
//
// The load balancer the writes work on is made directly and read until it is active
// (WithProvisioningReads) before them, and compared by its ID and spec: a cloud that
// assigns its addresses or hostname when it has built it does not fail.
//
// Of the options, RunMiddlebox honours WithInstanceShape (the instance the load balancer
// and the route target, as the backend's cloud holds it), WithProvisioningReads and
// WithIDOrder; the others do not apply.
func RunMiddlebox(t *testing.T, newBackend NewRESTBackend, maxAnswerBytes int64, opts ...Option) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	modes := make([]middleboxMode, 0, len(RedirectStatuses)+1)
	for _, code := range RedirectStatuses {
		modes = append(modes, middleboxMode{name: fmt.Sprintf("redirect %d", code), redirect: code})
	}
	modes = append(modes, middleboxMode{name: fmt.Sprintf("200 with more than %d bytes", maxAnswerBytes), longBody: maxAnswerBytes + 1})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { m.run(t, newBackend, o) })
	}
}

// middleboxMode is how a middlebox answers writes: a redirect with this status, or a 200
// with a body of longBody bytes.
type middleboxMode struct {
	name     string
	redirect int
	longBody int64
}

// redirectedPrefix is the path prefix of the middlebox's redirect targets.
const redirectedPrefix = "/redirected"

// run seeds a backend with a load balancer and a route, then makes every write through a
// middlebox and checks that each failed and that nothing changed.
func (m middleboxMode) run(t *testing.T, newBackend NewRESTBackend, o options) {
	instances := (&suite{opts: o}).makeInstances(1)
	f := Fixture{Instances: []cloudapi.Instance{instances[0].Clone()}}
	baseURL, newClient := newBackend(t, f)
	direct := newClient(baseURL)
	require.NotNil(t, direct, "newClient returned a nil client")
	api, err := url.Parse(baseURL)
	require.NoError(t, err)

	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: api.Scheme, Host: api.Host}) // the path is the request's
	var box *httptest.Server
	box = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, redirectedPrefix):
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, "{}")
				return
			}
			http.Error(w, "the redirect target answers GET only", http.StatusMethodNotAllowed)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			proxy.ServeHTTP(w, r)
		case m.redirect != 0:
			http.Redirect(w, r, box.URL+redirectedPrefix+r.URL.Path, m.redirect)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
			_, _ = io.CopyN(w, spaces{}, m.longBody-2)
		}
	}))
	box.Start()
	t.Cleanup(box.Close)
	through := newClient(box.URL + api.Path)
	require.NotNil(t, through, "newClient returned a nil client")

	// What the writes work on: one load balancer and one route, made directly.
	lbs, hasLBs := direct.LoadBalancers()
	routes, hasRoutes := direct.Routes()
	var lb *cloudapi.LoadBalancer
	if hasLBs {
		lb, err = lbs.CreateLoadBalancer(t.Context(), middleboxLB(instances[0].ID, "kept"))
		require.NoError(t, err, "creating a load balancer directly")
		lb, err = (&suite{opts: o}).awaitActive(t.Context(), lbs, lb) // not finishing its provisioning while the writes run
		require.NoError(t, err)
	}
	var route *cloudapi.Route
	if hasRoutes {
		route, err = routes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.7.0/24", TargetInstanceID: instances[0].ID,
			Tags: map[string]string{cloudapi.TagCluster: "contract"}})
		require.NoError(t, err, "creating a route directly")
	}
	before := inventory(t, direct, o.order)

	var writes []middleboxWrite
	if lbs, ok := through.LoadBalancers(); ok && hasLBs {
		spec := middleboxLB(instances[0].ID, "kept")
		spec.Targets = nil
		writes = append(writes,
			middleboxWrite{cloudapi.OpCreateLoadBalancer, func() error {
				_, err := lbs.CreateLoadBalancer(t.Context(), middleboxLB(instances[0].ID, "new"))
				return err
			}},
			middleboxWrite{cloudapi.OpUpdateLoadBalancer, func() error {
				_, err := lbs.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
				return err
			}},
			middleboxWrite{cloudapi.OpDeleteLoadBalancer, func() error { return lbs.DeleteLoadBalancer(t.Context(), lb.ID) }},
		)
	}
	if routes, ok := through.Routes(); ok && hasRoutes {
		writes = append(writes,
			middleboxWrite{cloudapi.OpCreateRoute, func() error {
				_, err := routes.CreateRoute(t.Context(), cloudapi.RouteSpec{DestinationCIDR: "10.244.8.0/24", TargetInstanceID: instances[0].ID})
				return err
			}},
			middleboxWrite{cloudapi.OpDeleteRoute, func() error { return routes.DeleteRoute(t.Context(), route.ID) }},
		)
	}
	for _, w := range writes {
		err := w.call()
		if m.redirect != 0 {
			if cerr := checkClass(err, cloudapi.ErrInvalidRequest); cerr != nil {
				assert.Failf(t, "a write succeeded on a redirect", "%s answered %d by a middlebox: broke \"no write succeeds on a redirect: a 3xx is ErrInvalidRequest\": %v", w.op, m.redirect, cerr)
				continue
			}
			assert.Contains(t, err.Error(), box.URL+redirectedPrefix, "%s answered %d: the error names the redirect's Location", w.op, m.redirect)
			continue
		}
		assert.Errorf(t, err, "%s answered 200 with more than the adapter's bound of bytes: broke \"an answer longer than the bound is an error, never decoded in part\"", w.op)
	}
	assert.Equal(t, before, inventory(t, direct, o.order), "the API holds what it held: no write reached it")
}

// middleboxWrite is one write RunMiddlebox makes through the middlebox.
type middleboxWrite struct {
	op   cloudapi.Operation
	call func() error
}

// middleboxLB is a load balancer spec the middlebox checks write, named name.
func middleboxLB(target, name string) cloudapi.LoadBalancerSpec {
	return cloudapi.LoadBalancerSpec{
		Name:      "contract-middlebox-" + name,
		Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
		Targets:   []string{target},
		Tags:      map[string]string{cloudapi.TagCluster: "contract"},
	}
}

// inventory lists every load balancer and route of c, the load balancers without what
// the cloud assigns by itself (status, addresses, hostname).
func inventory(t testing.TB, c cloudapi.Client, order func(a, b string) int) (out struct {
	LoadBalancers []cloudapi.LoadBalancer
	Routes        []cloudapi.Route
}) {
	t.Helper()
	if lbs, ok := c.LoadBalancers(); ok {
		out.LoadBalancers = listAll(t, cloudapi.OpListLoadBalancers, listLoadBalancers(lbs), lbID, order, cloudapi.ListOptions{}, 1000)
		for i, lb := range out.LoadBalancers {
			out.LoadBalancers[i] = cloudapi.LoadBalancer{ID: lb.ID, Spec: lb.Spec}
		}
	}
	if routes, ok := c.Routes(); ok {
		out.Routes = listAll(t, cloudapi.OpListRoutes, listRoutes(routes), routeID, order, cloudapi.ListOptions{}, 1000)
	}
	return out
}

// spaces reads as endless white space.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
