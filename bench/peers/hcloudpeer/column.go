package hcloudpeer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/bench/harness"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/provider"
)

// Name is the column's name in the report.
const Name = "ccmkit+hcloud"

// The project's fixed resources.
const (
	networkID   = 1
	networkName = "bench"
	// location is the hcloud section's default location.
	location   = "fsn1"
	serverType = "cx22"
	// firstServerID is instance 0's server ID.
	firstServerID = 1000
)

// locations are the world's zones as Hetzner locations: instance i, in harness.Zones[i%3],
// is in locations[i%3].
var locations = []string{"fsn1", "nbg1", "hel1"}

// certificates are the project's certificates: the ones the benchmark's Service with every
// setting names.
var certificates = []string{"cert-main", "cert-alt"}

// Column returns the Hetzner-shaped column.
func Column() harness.Column { return column{} }

type column struct{}

func (column) Name() string { return Name }

// Budget is the Hetzner Cloud API's limit per project (hcloudmock.DefaultRateLimit).
func (column) Budget() (perMinute float64, limit string) {
	return hcloudmock.DefaultRateLimit.PerSecond * 60, "Hetzner Cloud's limit per project: 3,600 requests an hour, one more each second"
}

var _ harness.OnCcmkit = column{}

// NewCloud returns a mock project with the world's first cfg.Nodes servers.
func (column) NewCloud(cfg harness.CloudConfig) (harness.Cloud, error) {
	mc := hcloudmock.Config{
		Networks: []schema.Network{{ID: networkID, Name: networkName, IPRange: "10.0.0.0/8"}},
		// Off: see the package doc.
		RateLimit: hcloudmock.RateLimit{Limit: math.MaxInt32, PerSecond: 1e9},
		// The benchmarking range (RFC 2544), for thousands of load balancers.
		IPv4Pool: "198.18.0.0/15",
	}
	for i, name := range certificates {
		mc.Certificates = append(mc.Certificates, schema.Certificate{ID: int64(networkID + 1 + i), Name: name})
	}
	for i := range cfg.Nodes {
		mc.Servers = append(mc.Servers, server(i))
	}
	m, err := hcloudmock.New(mc)
	if err != nil {
		return nil, err
	}
	return &cloud{api: cfg.CloudAPI, mock: m}, nil
}

func serverID(i int) int64 { return int64(firstServerID + i) }

// server is instance i of the world as a Hetzner server.
func server(i int) schema.Server {
	wi := harness.WorldInstance(i)
	return schema.Server{
		ID: serverID(i), Name: fmt.Sprintf("node-%05d", i), Status: "running",
		ServerType: schema.ServerType{Name: serverType},
		Location:   schema.Location{Name: locations[i%len(locations)]},
		// The world's address moved on by one: the network's first address is its gateway.
		PrivateNet: []schema.ServerPrivateNet{{Network: networkID, IP: netip.MustParseAddr(wi.PrivateIP).Next().String()}},
	}
}

// cloud is the column's mock project, with the requests of a Watch under way observed.
type cloud struct {
	api     provider.CloudAPIConfig // ccmkit's, as the ccmkit column's
	mock    *hcloudmock.Server
	latency atomic.Int64 // time.Duration

	mu    sync.Mutex
	watch *watch
}

// watch is a Watch under way: the load balancers written so that they reach server, or
// no longer do with removed.
type watch struct {
	server  int64
	removed bool
	*harness.Reaches
}

var _ harness.Cloud = (*cloud)(nil)

// NewProvider returns ccmkit's provider with the adapter, configured as the package doc
// says, whose requests the mock answers in-process.
func (c *cloud) NewProvider(clock *clocktesting.FakeClock) (cloudprovider.Interface, error) {
	enable := true
	cfg := provider.Config{
		Cluster:  provider.ClusterConfig{ID: harness.ClusterName},
		CloudAPI: c.api,
		Enable:   provider.EnableConfig{Routes: &enable},
		// Hetzner's routes carry no labels: ccmkit owns those into the cluster's pod CIDR.
		Routes: provider.RoutesConfig{ClusterCIDRs: []string{harness.ClusterCIDR}},
	}
	section := adapter.Config{Endpoint: "http://hcloud.bench", Network: networkName, Location: location}
	opts := adapter.Options()
	opts.Metrics, opts.Clock = metrics.NewKubeRegistry(), clock
	return provider.New(cfg, adapter.New(section, "bench-token", &http.Client{Transport: c}), opts)
}

// NodeName is the server's name, which the kubelet registers the Node with.
func (c *cloud) NodeName(i int) string { return server(i).Name }

// ProviderID is the adapter's: hcloud://<server ID>.
func (c *cloud) ProviderID(i int) string {
	return adapter.ProviderName + "://" + strconv.FormatInt(serverID(i), 10)
}

// Calls returns the mock's requests by route; a route that is not a GET is a write, and
// the servers' routes are the instance calls.
func (c *cloud) Calls() harness.Calls {
	out := harness.Calls{}
	for route, n := range c.mock.Calls() {
		out[harness.Op{Name: route, Write: !strings.HasPrefix(route, "GET "), Instance: strings.HasPrefix(route, "GET /servers")}] += int64(n)
	}
	return out
}

// AddInstance adds instance i's server to the project.
func (c *cloud) AddInstance(i int) error { return c.mock.AddServer(server(i)) }

// RemoveInstance deletes instance i's server; the mock keeps it a target of its load
// balancers until they are written without it.
func (c *cloud) RemoveInstance(i int) error {
	c.mock.DeleteServer(serverID(i))
	return nil
}

func (c *cloud) SetLatency(d time.Duration) { c.latency.Store(int64(d)) }

// Watch returns a channel closed once want different load balancers were created with
// instance i's server among their targets or had it added, or with removed, had it
// removed.
func (c *cloud) Watch(i, want int, removed bool) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = &watch{server: serverID(i), removed: removed, Reaches: harness.NewReaches(want)}
	return c.watch.Done()
}

// Reaching returns how many load balancers have instance i's server as a target (every
// load balancer of the project is the cluster's).
func (c *cloud) Reaching(i int) (int, error) {
	return len(c.mock.LoadBalancersTargeting(serverID(i))), nil
}

// RoundTrip answers a request of the SDK with the mock's handler (which serves the API from
// the root: the endpoint has no /v1), after the latency.
func (c *cloud) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		_ = r.Body.Close() // a RoundTripper closes the body, also on an error
		if err != nil {
			return nil, err
		}
	}
	if d := time.Duration(c.latency.Load()); d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return nil, r.Context().Err()
		}
	}
	served := r.Clone(r.Context()) // a RoundTripper does not change the request
	served.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	c.mock.ServeHTTP(rec, served)
	if rec.Code/100 == 2 && r.Method == http.MethodPost {
		c.written(r.URL.Path, body)
	}
	return rec.Result(), nil
}

// written notes a successful write of a load balancer for the Watch under way: a create
// whose targets include the watched server, or an add_target of it; or with removed, a
// remove_target of it.
func (c *cloud) written(path string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.watch
	if w == nil {
		return
	}
	var req struct {
		Name    string                           `json:"name"`
		Server  *schema.LoadBalancerTargetServer `json:"server"`
		Targets []schema.LoadBalancerTarget      `json:"targets"`
	}
	rest, isLB := strings.CutPrefix(path, "/load_balancers")
	if !isLB || json.Unmarshal(body, &req) != nil {
		return
	}
	var key string
	switch id, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/"); {
	case w.removed:
		if action == "actions/remove_target" && req.Server != nil && req.Server.ID == w.server {
			key = id
		}
	case rest == "":
		for _, t := range req.Targets {
			if t.Server != nil && t.Server.ID == w.server {
				key = "created " + req.Name
			}
		}
	case action == "actions/add_target" && req.Server != nil && req.Server.ID == w.server:
		key = id
	}
	if key != "" {
		w.Reach(key)
	}
}
