package adapter_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

// statuses are the API's server statuses with the state each maps to; terminated has no
// status (a deleted server is gone), so the tests seed it as deleting.
var statuses = map[string]cloudapi.InstanceState{
	"running": cloudapi.InstanceRunning, "migrating": cloudapi.InstanceRunning,
	"initializing": cloudapi.InstancePending, "starting": cloudapi.InstancePending, "rebuilding": cloudapi.InstancePending,
	"stopping": cloudapi.InstanceStopping, "off": cloudapi.InstanceStopped, "deleting": cloudapi.InstanceTerminating,
	"unknown": cloudapi.InstanceUnknown, "some-future-status": cloudapi.InstanceUnknown,
}

// statusOf is a status that maps to st.
func statusOf(st cloudapi.InstanceState) string {
	return map[cloudapi.InstanceState]string{
		cloudapi.InstanceRunning: "running", cloudapi.InstancePending: "starting", cloudapi.InstanceStopping: "stopping",
		cloudapi.InstanceStopped: "off", cloudapi.InstanceTerminating: "deleting", cloudapi.InstanceUnknown: "unknown",
	}[st]
}

// locations are the mock's locations the tests use, by the contract suite's zones.
var locations = map[string]string{"zone-a": "fsn1", "zone-b": "nbg1", "zone-c": "hel1"}

// datacenters are the zones Hetzner's own CCM gave the Nodes of servers in the tests'
// locations: their legacy datacenters.
var datacenters = map[string]string{"fsn1": "fsn1-dc14", "nbg1": "nbg1-dc3", "hel1": "hel1-dc2"}

// shape is how Hetzner holds an instance of the contract suite: a numeric ID, a location
// for the region and its legacy datacenter for the zone, public addresses and private
// IPv4 ones only (public first; the adapter is dualstack), then the name as Hostname, no
// terminated state.
func shape(inst cloudapi.Instance) cloudapi.Instance {
	n, err := strconv.Atoi(strings.TrimPrefix(inst.ID, "i-contract-"))
	inst.ID = strconv.Itoa(1000 + n)
	if err != nil {
		inst.ID = "999999"
	}
	if inst.Zone != "" {
		inst.Zone, inst.Region = datacenters[locations[inst.Zone]], locations[inst.Zone]
	}
	var public, private []cloudapi.Address
	for _, a := range inst.Addresses {
		switch ip := net.ParseIP(a.Address); {
		case a.Type == cloudapi.AddressExternalIP:
			public = append(public, a)
		case a.Type == cloudapi.AddressInternalIP && ip.To4() != nil:
			private = append(private, a)
		}
	}
	inst.Addresses = append(public, private...)
	if inst.Name != "" {
		inst.Addresses = append(inst.Addresses, cloudapi.Address{Type: cloudapi.AddressHostname, Address: inst.Name})
	}
	if inst.State == cloudapi.InstanceTerminated {
		inst.State = cloudapi.InstanceTerminating
	}
	return inst
}

// serverOf is the mock's server for a shaped instance.
func serverOf(t testing.TB, inst cloudapi.Instance) schema.Server {
	t.Helper()
	id, err := strconv.ParseInt(inst.ID, 10, 64)
	require.NoError(t, err)
	labels, err := cloudapi.EncodeLabels(inst.Tags, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	srv := schema.Server{ID: id, Name: inst.Name, Status: statusOf(inst.State), Labels: labels,
		ServerType: schema.ServerType{Name: inst.Type}, Location: schema.Location{Name: inst.Region}}
	for _, a := range inst.Addresses {
		switch ip := net.ParseIP(a.Address); {
		case a.Type == cloudapi.AddressHostname:
		case a.Type == cloudapi.AddressInternalIP:
			srv.PrivateNet = append(srv.PrivateNet, schema.ServerPrivateNet{Network: network.ID, IP: a.Address})
		case ip.To4() != nil:
			srv.PublicNet.IPv4.IP = a.Address
		default:
			srv.PublicNet.IPv6.IP = a.Address + "/64" // the adapter reports the network's ::1
		}
	}
	return srv
}

// network is the private network of the test servers.
var network = schema.Network{ID: 900000, Name: "k8s", IPRange: "10.0.0.0/8"}

// newMock serves a mock holding servers and returns it with its URL.
func newMock(t testing.TB, cfg hcloudmock.Config, wrap func(http.Handler) http.Handler) (*hcloudmock.Server, string) {
	t.Helper()
	cfg.Networks = append(cfg.Networks, network)
	m, err := hcloudmock.New(cfg)
	require.NoError(t, err)
	var h http.Handler = m
	if wrap != nil {
		h = wrap(m)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// contractClient is a client of a fresh mock holding f's instances, configured as cfg
// (its endpoint the mock's). The mock's rate limit is off: the suite counts no time.
func contractClient(t testing.TB, f cloudapitest.Fixture, cfg adapter.Config) *adapter.Client {
	t.Helper()
	cfg.Endpoint = contractMock(t, f)
	return adapter.New(cfg, "token", nil)
}

// contractMock serves a mock holding f's instances as servers, without a rate limit to
// speak of, and returns its base URL.
func contractMock(t testing.TB, f cloudapitest.Fixture) string {
	t.Helper()
	var mc hcloudmock.Config
	for _, inst := range f.Instances {
		mc.Servers = append(mc.Servers, serverOf(t, inst))
	}
	mc.RateLimit = hcloudmock.RateLimit{Limit: 1 << 20, PerSecond: 1 << 20}
	_, url := newMock(t, mc, nil)
	return url
}

func TestContract(t *testing.T) {
	cloudapitest.Run(t, func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		return contractClient(t, f, adapter.Config{Location: "nbg1", Network: network.Name, AddressFamily: adapter.AddressFamilyDualStack})
	}, cloudapitest.WithInstanceShape(routeShape), cloudapitest.WithLoadBalancerShape(adapter.Shape), cloudapitest.WithProvisioningReads(0), cloudapitest.WithPageNumbers(),
		cloudapitest.WithIPv4RoutesOnly(),
		cloudapitest.WithSettings(
			map[string]string{adapter.SettingType: "lb11", adapter.SettingAlgorithm: "round_robin", adapter.SettingLocation: "fsn1"},
			map[string]string{adapter.SettingType: "lb21", adapter.SettingAlgorithm: "least_connections", adapter.SettingLocation: "fsn1"},
		))
}

func TestGetInstance(t *testing.T) {
	var cfg hcloudmock.Config
	i := 0
	for status := range statuses {
		i++
		cfg.Servers = append(cfg.Servers, schema.Server{ID: int64(i), Name: status, Status: status, ServerType: schema.ServerType{Name: "cx22"},
			Location: schema.Location{Name: "nbg1"}, Labels: map[string]string{"ccmkit.io/service": "b32-mrswmylvnr2c653fmi", "bad": "b32-1"},
			PublicNet:  schema.ServerPublicNet{IPv4: schema.ServerPublicNetIPv4{IP: "198.51.100.7"}, IPv6: schema.ServerPublicNetIPv6{IP: "2001:db8:1:2::/64"}},
			PrivateNet: []schema.ServerPrivateNet{{Network: network.ID, IP: "10.0.0.7"}}})
	}
	m, url := newMock(t, cfg, nil)
	api := adapter.New(adapter.Config{Endpoint: url}, "token", nil).Instances()
	for _, srv := range cfg.Servers {
		t.Run(srv.Status, func(t *testing.T) {
			got, err := api.GetInstance(t.Context(), strconv.FormatInt(srv.ID, 10))
			require.NoError(t, err)
			assert.Equal(t, cloudapi.Instance{ID: strconv.FormatInt(srv.ID, 10), Name: srv.Status, Type: "cx22", Zone: "nbg1-dc3", Region: "nbg1",
				State: statuses[srv.Status], Tags: map[string]string{cloudapi.TagServiceName: "default/web"},
				Addresses: []cloudapi.Address{{Type: cloudapi.AddressExternalIP, Address: "198.51.100.7"},
					{Type: cloudapi.AddressInternalIP, Address: "10.0.0.7"}, {Type: cloudapi.AddressHostname, Address: srv.Status}}}, *got)
		})
	}
	calls := m.Calls()["GET /servers/{id}"]
	for _, id := range []string{"bm-123", "0", "-1", "0123", "12a", "", "123456789012345678901234567890"} {
		_, err := api.GetInstance(t.Context(), id)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, id)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	}
	assert.Equal(t, calls, m.Calls()["GET /servers/{id}"], "an ID that is no server's asks nothing")
	_, err := api.GetInstance(t.Context(), "4242")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
}

// TestProviderIDs checks through the registered provider that a provider ID naming no
// Hetzner Cloud server is an error, never "gone".
func TestProviderIDs(t *testing.T) {
	_, url := newMock(t, hcloudmock.Config{Servers: []schema.Server{{ID: 123, Name: "node-1"}}}, nil)
	cloud, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(
		"cluster: {id: c1}\nhcloud: {endpoint: "+url+"}\ncredentials: {token: t}\n"))
	require.NoError(t, err)
	iv2, ok := cloud.InstancesV2()
	require.True(t, ok)
	legacy, ok := cloud.Instances()
	require.True(t, ok)
	for _, tt := range []struct {
		providerID string
		exists     bool
		err        bool
	}{
		{providerID: "hcloud://123", exists: true},
		{providerID: "hcloud://124"},
		{providerID: "hcloud://bm-123", err: true},
		{providerID: "hrobot://123", err: true},
	} {
		t.Run(tt.providerID, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}, Spec: corev1.NodeSpec{ProviderID: tt.providerID}}
			exists, err := iv2.InstanceExists(t.Context(), node)
			legacyExists, legacyErr := legacy.InstanceExistsByProviderID(t.Context(), tt.providerID)
			if tt.err {
				require.Error(t, err, "exists %t", exists)
				require.Error(t, legacyErr, "exists %t", legacyExists)
				return
			}
			require.NoError(t, err)
			require.NoError(t, legacyErr)
			assert.Equal(t, tt.exists, exists)
			assert.Equal(t, tt.exists, legacyExists)
		})
	}
}

// servers returns n running servers with IDs from 1001.
func servers(n int) []schema.Server {
	out := make([]schema.Server, n)
	for i := range out {
		out[i] = schema.Server{ID: int64(1001 + i), Name: fmt.Sprintf("node-%d", 1001+i), Labels: map[string]string{"pool": "a"}}
	}
	return out
}

func TestListInstancesPages(t *testing.T) {
	m, url := newMock(t, hcloudmock.Config{Servers: servers(120)}, nil)
	api := adapter.New(adapter.Config{Endpoint: url}, "token", nil).Instances()
	var ids []string
	opts := cloudapi.ListOptions{PageSize: 500, Tags: map[string]string{"pool": "a"}}
	for {
		page, err := api.ListInstances(t.Context(), opts)
		require.NoError(t, err)
		for _, inst := range page.Items {
			ids = append(ids, inst.ID)
		}
		if opts.PageToken = page.NextPageToken; opts.PageToken == "" {
			break
		}
	}
	assert.Len(t, ids, 120)
	assert.Equal(t, "1001", ids[0])
	assert.Equal(t, "1120", ids[119])
	assert.Equal(t, 3, m.Calls()["GET /servers"], "120 servers, 50 a page")

	for _, token := range []string{"x", "0", "1", "-2", "02"} {
		_, err := api.ListInstances(t.Context(), cloudapi.ListOptions{PageToken: token})
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, token)
	}
	page, err := api.ListInstances(t.Context(), cloudapi.ListOptions{Tags: map[string]string{"pool": "b"}})
	require.NoError(t, err)
	assert.Empty(t, page.Items)
}

// TestShiftingPagesKeepNodes changes the servers while the provider's instance snapshot
// reads the second page of three: servers of the first page deleted shift the first
// servers of the second page onto the first, and the list misses them; a server created
// with a low ID shifts the last server of the first page onto the second, and the list
// repeats it. The provider must still find every server it listed or missed.
func TestShiftingPagesKeepNodes(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *hcloudmock.Server) error
		gets   int // servers the snapshot checks one by one
	}{
		{name: "skip", change: func(m *hcloudmock.Server) error {
			m.DeleteServer(1010)
			m.DeleteServer(1011)
			return nil
		}, gets: 2}, // 1051 and 1052, missed; 1010 and 1011 are in the snapshot, listed before
		{name: "repeat", change: func(m *hcloudmock.Server) error {
			return m.AddServer(schema.Server{ID: 5, Name: "early"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var once sync.Once
			var m *hcloudmock.Server
			m, url := newMock(t, hcloudmock.Config{Servers: servers(120)}, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/servers" && r.URL.Query().Get("page") == "2" {
						once.Do(func() { assert.NoError(t, tt.change(m)) })
					}
					h.ServeHTTP(w, r)
				})
			})
			cloud, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(
				"cluster: {id: c1}\nhcloud: {endpoint: "+url+"}\ncredentials: {token: t}\n"))
			require.NoError(t, err)
			iv2, ok := cloud.InstancesV2()
			require.True(t, ok)
			for id := 1001; id <= 1120; id++ {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", id)},
					Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("hcloud://%d", id)}}
				exists, err := iv2.InstanceExists(t.Context(), node)
				require.NoError(t, err, id)
				assert.True(t, exists, "server %d", id)
			}
			assert.Equal(t, 3, m.Calls()["GET /servers"], "one list of three pages")
			assert.Equal(t, tt.gets, m.Calls()["GET /servers/{id}"], "the missed servers checked one by one")
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		code   string
		get    error // the class of GetInstance's error
		list   error // the class of ListInstances' error
		header bool
	}{
		{code: "rate_limit_exceeded", get: cloudapi.ErrThrottled, list: cloudapi.ErrThrottled, header: true},
		{code: "not_found", get: cloudapi.ErrNotFound, list: cloudapi.ErrTransient},
		{code: "locked", get: cloudapi.ErrTransient, list: cloudapi.ErrTransient},
		{code: "conflict", get: cloudapi.ErrTransient, list: cloudapi.ErrTransient},
		{code: "uniqueness_error", get: cloudapi.ErrConflict, list: cloudapi.ErrConflict},
		{code: "invalid_input", get: cloudapi.ErrInvalidRequest, list: cloudapi.ErrInvalidRequest},
		{code: "unauthorized", get: cloudapi.ErrInvalidRequest, list: cloudapi.ErrInvalidRequest},
		{code: "service_error", get: cloudapi.ErrTransient, list: cloudapi.ErrTransient},
	}
	m, url := newMock(t, hcloudmock.Config{Servers: servers(1)}, nil)
	api := adapter.New(adapter.Config{Endpoint: url}, "token", nil).Instances()
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			m.Inject("GET /servers/{id}", 1, hcloudmock.Fault{Code: tt.code})
			m.Inject("GET /servers", 1, hcloudmock.Fault{Code: tt.code})
			_, getErr := api.GetInstance(t.Context(), "1001")
			_, listErr := api.ListInstances(t.Context(), cloudapi.ListOptions{})
			for _, c := range []struct{ err, want error }{{getErr, tt.get}, {listErr, tt.list}} {
				require.ErrorIs(t, c.err, c.want)
				assert.Equal(t, c.want, cloudapi.ClassOf(c.err))
				wait, ok := cloudapi.RetryAfter(c.err)
				assert.Equal(t, tt.header, ok, "retry-after %v", wait)
				if ok {
					assert.LessOrEqual(t, wait, 3601*time.Second)
				}
			}
		})
	}
	assert.Equal(t, 8, m.Calls()["GET /servers"], "the SDK retries nothing")

	bare := httptest.NewServer(http.NotFoundHandler()) // a proxy's or a wrong path's 404
	t.Cleanup(bare.Close)
	_, err := adapter.New(adapter.Config{Endpoint: bare.URL}, "token", nil).Instances().GetInstance(t.Context(), "1")
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
	bare.Close()
	_, err = adapter.New(adapter.Config{Endpoint: bare.URL}, "token", nil).Instances().GetInstance(t.Context(), "1")
	require.ErrorIs(t, err, cloudapi.ErrTransient, "no answer")
	assert.False(t, errors.Is(err, cloudapi.ErrNotFound))
}
