package providertest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestEverySubInterfaceIsOn(t *testing.T) {
	t.Parallel()
	c := providertest.New(t)
	p := c.Provider
	_, ok := p.InstancesV2()
	assert.True(t, ok, "InstancesV2")
	_, ok = p.Instances()
	assert.True(t, ok, "Instances")
	_, ok = p.Zones()
	assert.True(t, ok, "Zones")
	_, ok = p.LoadBalancer()
	assert.True(t, ok, "LoadBalancer")
	_, ok = p.Routes()
	assert.True(t, ok, "Routes")
	clusters, ok := p.Clusters()
	require.True(t, ok, "Clusters")
	names, err := clusters.ListClusters(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{providertest.DefaultClusterID}, names)
	assert.True(t, p.HasClusterID())
	assert.Equal(t, provider.DefaultProviderName, p.ProviderName())
	assert.Nil(t, c.Faults, "no fault injector unless asked for")
	assert.Empty(t, c.Fake.Inventory().Instances, "an empty cloud")
	assert.Equal(t, time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC), c.Now(), "a fixed instant")
}

// The same cloud and settings described in Go and in YAML give the same provider.
func TestGoAndYAMLDescribeTheSameCloud(t *testing.T) {
	t.Parallel()
	inGo := []providertest.Option{
		providertest.WithFake(fake.Config{
			PageSize: 2,
			Instances: []fake.Instance{
				{ID: "i-1", Name: "node-1", Type: "m5.large", Zone: "eu-1a", Addresses: []fake.Address{{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}},
					Tags: map[string]string{"team": "web", "env": "prod"}},
				{ID: "i-2", Name: "node-2", Zone: "eu-1b", State: cloudapi.InstanceStopped},
			},
		}),
		providertest.WithConfig(func(c *provider.Config) {
			c.Cluster.ID = "c1"
			c.Region = "eu-1"
			c.Nodes.AdditionalLabels = map[string]string{"example.com/pool": "a"}
			c.Nodes.LabelsFromTags = map[string]string{"team": "example.com/team"}
		}),
	}
	inYAML := []providertest.Option{providertest.WithYAML(`
cluster: {id: c1}
region: eu-1
nodes:
  additionalLabels: {example.com/pool: a}
  labelsFromTags: {team: example.com/team}
fake:
  pageSize: 2
  instances:
    - id: i-1
      name: node-1
      type: m5.large
      zone: eu-1a
      addresses: [{type: InternalIP, address: 10.0.0.1}]
      tags: {team: web, env: prod}
    - {id: i-2, name: node-2, zone: eu-1b, state: stopped}
`)}
	for name, opts := range map[string][]providertest.Option{"go": inGo, "yaml": inYAML} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := providertest.New(t, opts...)
			iv2, _ := c.Provider.InstancesV2()
			md, err := iv2.InstanceMetadata(t.Context(), node("node-1", ""))
			require.NoError(t, err)
			assert.Equal(t, &cloudprovider.InstanceMetadata{
				ProviderID:       "ccmkit://i-1",
				InstanceType:     "m5.large",
				NodeAddresses:    []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
				Zone:             "eu-1a",
				Region:           "eu-1",
				AdditionalLabels: map[string]string{"example.com/pool": "a", "example.com/team": "web"},
			}, md)
			down, err := iv2.InstanceShutdown(t.Context(), node("node-2", "ccmkit://i-2"))
			require.NoError(t, err)
			assert.True(t, down)
			assert.Equal(t, "c1", c.Provider.Config().Cluster.ID)
			assert.Equal(t, 2, c.Fake.Config().PageSize)
			assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 1}, c.Fake.Calls(), "two instances in one list page")
		})
	}
}

// The test kit's defaults apply where the test sets nothing, and only there.
func TestDefaultsUnlessAsked(t *testing.T) {
	t.Parallel()
	noRoutes := false
	for _, tc := range []struct {
		name     string
		opts     []providertest.Option
		qps      float64
		burst    int
		attempts int
		routes   bool
		cluster  string
	}{
		{name: "nothing set", qps: 1000, burst: 1000, attempts: 1, routes: true, cluster: "test"},
		{name: "YAML without the keys", opts: []providertest.Option{providertest.WithYAML("cache: {maxAge: 2m}\n")},
			qps: 1000, burst: 1000, attempts: 1, routes: true, cluster: "test"},
		{name: "YAML with the keys", opts: []providertest.Option{providertest.WithYAML(`
cluster: {id: mine}
cloudAPI: {qps: 5, burst: 7, retry: {maxAttempts: 4}}
enable: {routes: false}
`)}, qps: 5, burst: 7, attempts: 4, routes: false, cluster: "mine"},
		{name: "Go", opts: []providertest.Option{providertest.WithConfig(func(c *provider.Config) {
			c.CloudAPI.Retry.MaxAttempts = 3
			c.Enable.Routes = &noRoutes
		})}, qps: 1000, burst: 1000, attempts: 3, routes: false, cluster: "test"},
		{name: "a cloud without routes", opts: []providertest.Option{providertest.WithFake(fake.Config{Capabilities: fake.Capabilities{Routes: &noRoutes}})},
			qps: 1000, burst: 1000, attempts: 1, routes: false, cluster: "test"},
		{name: "later options over earlier ones", opts: []providertest.Option{
			providertest.WithConfig(func(c *provider.Config) { c.CloudAPI.QPS = 1 }),
			providertest.WithYAML("cloudAPI: {burst: 9}\n"),
			providertest.WithConfig(func(c *provider.Config) { c.Cluster.ID = "late" }),
		}, qps: 1000, burst: 9, attempts: 1, routes: true, cluster: "late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := providertest.New(t, tc.opts...)
			cfg := c.Provider.Config()
			assert.Equal(t, tc.qps, cfg.CloudAPI.QPS)
			assert.Equal(t, tc.burst, cfg.CloudAPI.Burst)
			assert.Equal(t, tc.attempts, cfg.CloudAPI.Retry.MaxAttempts)
			assert.Equal(t, tc.cluster, cfg.Cluster.ID)
			_, routes := c.Provider.Routes()
			assert.Equal(t, tc.routes, routes)
			assert.Equal(t, provider.DefaultTimeout, cfg.CloudAPI.Timeout, "the provider's defaults elsewhere")
		})
	}
}

// recorder is a testing.TB that records what New and Advance report instead of failing
// the test that runs them.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	fatal    string
	logs     []string
	cleanups []func()
	failed   bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) Failed() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }

// run calls f with r as its test, as the testing package would: Fatalf ends f, and then
// the cleanups run, last registered first.
func (r *recorder) run(f func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestBadInputFailsTheTestSayingWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []providertest.Option
		want []string
	}{
		{
			name: "unknown key in the YAML",
			opts: []providertest.Option{providertest.WithYAML("cluster: {id: c1}\nfake:\n  pagesize: 3\n")},
			want: []string{`providertest: WithYAML: cloud config: line 3: unknown key "pagesize" in fake`},
		},
		{
			name: "another backend",
			opts: []providertest.Option{providertest.WithYAML("backend: mycloud\n")},
			want: []string{`WithYAML: backend: "mycloud" is not the fake cloud; leave the key out or write "fake"`},
		},
		{
			name: "every problem of the cloud at once",
			opts: []providertest.Option{providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1"}, {ID: "i-1", State: "asleep"}}})},
			want: []string{`instances[1].id: "i-1" is also the id of instances[0]`, `instances[1].state: "asleep" is not one of`},
		},
		{
			name: "faults",
			opts: []providertest.Option{providertest.WithFaults(faultinject.Config{Rules: []faultinject.Rule{{Probability: 2, Kind: faultinject.Transient}}})},
			want: []string{"WithFaults: rule 0: probability 2 is outside [0, 1]"},
		},
		{
			name: "every problem of the options at once",
			opts: []providertest.Option{
				providertest.WithYAML("cloudAPI: {qps: -1}\nunknown: 1\n"),
				providertest.WithFaults(faultinject.Config{Timeout: -time.Second}),
			},
			want: []string{"cloudAPI.qps: -1 must be a finite number of calls per second of at least 0.001", `line 2: unknown key "unknown" at the top level`, "WithFaults: negative timeout -1s"},
		},
		{
			name: "the provider's config",
			opts: []providertest.Option{providertest.WithConfig(func(c *provider.Config) {
				c.Cluster.ID = "not an id"
				c.CloudAPI.Burst = -1
			})},
			want: []string{`cluster.id: "not an id" must be 1-63 letters`, "cloudAPI.burst: -1 must be from 1 to 10000"},
		},
		{
			name: "nil options",
			opts: []providertest.Option{nil, providertest.WithConfig(nil)},
			want: []string{"option 0 is nil", "WithConfig: the function is nil"},
		},
		{
			name: "an unknown section in the YAML",
			opts: []providertest.Option{providertest.WithYAML("cluster: {id: c1}\nfkae: {}\n")},
			want: []string{`line 2: unknown key "fkae" at the top level (the backend section is "fake"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			var got *providertest.Cloud
			r.run(func(tb testing.TB) { got = providertest.New(tb, tc.opts...) })
			require.Nil(t, got, "New does not return after failing the test")
			for _, want := range tc.want {
				assert.Contains(t, r.fatal, want)
			}
			assert.True(t, strings.HasPrefix(r.fatal, "providertest: "), r.fatal)
		})
	}
}

// A failed test's log shows what the fake cloud held and the calls it received; a test
// that passes logs nothing.
func TestAFailedTestShowsTheCloud(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%t", fail), func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			r.run(func(tb testing.TB) {
				c := providertest.New(tb, providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1", Zone: "eu-1a"}}}))
				routes, _ := c.Provider.Routes()
				assert.NoError(t, routes.CreateRoute(t.Context(), "test", "", &cloudprovider.Route{TargetNode: "node-1", DestinationCIDR: "10.244.1.0/24"}))
				if fail {
					r.mu.Lock()
					r.failed = true
					r.mu.Unlock()
				}
			})
			if !fail {
				assert.Empty(t, r.logs)
				return
			}
			require.Len(t, r.logs, 1)
			log := r.logs[0]
			assert.Contains(t, log, "providertest: the fake cloud at the end of the failed test:\n")
			assert.Contains(t, log, "calls: 2 ListInstances=1 CreateRoute=1\n")
			assert.Contains(t, log, `instance i-1 name="node-1" state=running zone="eu-1a"`)
			assert.Regexp(t, `route \S+ 10\.244\.1\.0/24 -> i-1 blackhole=false tags=map\[ccmkit\.io/cluster:test ccmkit\.io/node:node-1\]`, log)
		})
	}
}

// Time stands still until Advance: an instance deleted behind the provider's back is seen
// once the snapshot is older than cache.maxAge, not before.
func TestAdvance(t *testing.T) {
	t.Parallel()
	c := providertest.New(t, providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}))
	start := c.Now()
	iv2, _ := c.Provider.InstancesV2()
	n := node("node-1", "ccmkit://i-1")
	exists, err := iv2.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	require.True(t, exists)

	require.NoError(t, c.Fake.DeleteInstance("i-1"))
	exists, err = iv2.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	assert.True(t, exists, "the snapshot is fresh: no call, no news")
	assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 1}, c.Fake.Calls())

	c.Advance(provider.DefaultCacheMaxAge)
	exists, err = iv2.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	assert.True(t, exists, "a snapshot as old as cache.maxAge is still fresh")

	c.Advance(time.Nanosecond)
	assert.Equal(t, start.Add(provider.DefaultCacheMaxAge+time.Nanosecond), c.Now())
	exists, err = iv2.InstanceExists(t.Context(), n)
	require.NoError(t, err)
	assert.False(t, exists, "the snapshot expired: relisted, and the instance is gone")
	assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 2, cloudapi.OpGetInstance: 1}, c.Fake.Calls(),
		"an instance missing from the new list is confirmed with one GetInstance")
}

// ExpireSnapshots is just enough, with the config's cache.maxAge.
func TestExpireSnapshots(t *testing.T) {
	t.Parallel()
	for _, maxAge := range []time.Duration{0, 5 * time.Minute} {
		t.Run(fmt.Sprint(maxAge), func(t *testing.T) {
			t.Parallel()
			c := providertest.New(t,
				providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}, {ID: "i-2", Name: "node-2"}}}),
				providertest.WithConfig(func(c *provider.Config) { c.Cache.MaxAge = maxAge }))
			start := c.Now()
			iv2, _ := c.Provider.InstancesV2()
			for _, stopped := range []bool{false, true} {
				down, err := iv2.InstanceShutdown(t.Context(), node("node-2", ""))
				require.NoError(t, err)
				assert.Equal(t, stopped, down)
				require.NoError(t, c.Fake.SetInstanceState("i-2", cloudapi.InstanceStopped))
				c.ExpireSnapshots()
			}
			assert.Equal(t, fake.Calls{cloudapi.OpListInstances: 2}, c.Fake.Calls())
			assert.Equal(t, start.Add(2*(c.Provider.Config().Cache.MaxAge+time.Nanosecond)), c.Now())
		})
	}
}

func TestAdvanceNeedsTheKitsClock(t *testing.T) {
	t.Parallel()
	own := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &recorder{TB: t}
	var now time.Time
	r.run(func(tb testing.TB) {
		c := providertest.New(tb, providertest.WithOptions(provider.Options{Clock: clocktesting.NewFakePassiveClock(own)}))
		now = c.Now()
		c.Advance(time.Second)
	})
	assert.Equal(t, own, now)
	assert.Contains(t, r.fatal, "providertest: Advance moves the clock New made, but WithOptions set provider.Options.Clock")
}

// Faults go between the provider and the fake: an injected error reaches the caller
// typed, and never as "instance gone"; the fake does not see the call.
func TestWithFaults(t *testing.T) {
	t.Parallel()
	c := providertest.New(t,
		providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}),
		providertest.WithFaults(faultinject.Config{}))
	require.NotNil(t, c.Faults)
	c.Faults.Script(cloudapi.OpListInstances, faultinject.Fault{Kind: faultinject.Transient})
	c.Faults.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Transient})
	iv2, _ := c.Provider.InstancesV2()
	exists, err := iv2.InstanceExists(t.Context(), node("node-1", "ccmkit://i-1"))
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.ErrorIs(t, err, faultinject.ErrInjected)
	assert.False(t, exists)
	assert.Empty(t, c.Fake.Calls(), "neither call reached the fake")
	total := c.Faults.Injected().Total()
	assert.Equal(t, 2, total.Calls)
	assert.Equal(t, map[faultinject.Kind]int{faultinject.Transient: 2}, total.Faults)

	// One attempt per call by default: the failed list was not retried.
	assert.Equal(t, 1, c.Faults.Injected().Ops[cloudapi.OpListInstances].Calls)
}

// Tests in parallel each get their own provider, cloud and metrics registry.
func TestParallelTestsDoNotCollide(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c := providertest.New(t, providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}))
			iv2, _ := c.Provider.InstancesV2()
			for range i + 1 {
				c.Advance(time.Hour) // each lookup relists
				_, err := iv2.InstanceExists(t.Context(), node("node-1", "ccmkit://i-1"))
				require.NoError(t, err)
			}
			assert.Equal(t, fake.Calls{cloudapi.OpListInstances: int64(i + 1)}, c.Fake.Calls())
			families, err := c.Metrics.Gather()
			require.NoError(t, err)
			var counted uint64
			for _, f := range families {
				if f.GetName() == "cloudprovider_ccmkit_api_request_duration_seconds" {
					for _, m := range f.GetMetric() {
						counted += m.GetHistogram().GetSampleCount()
					}
				}
			}
			assert.Equal(t, uint64(i+1), counted, "this test's calls, in this test's registry")
		})
	}
}

// New and the provider's calls leave no goroutine behind once the test is over.
func TestNoGoroutineLeftBehind(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("busy", func(t *testing.T) {
		c := providertest.New(t,
			providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}}),
			providertest.WithFaults(faultinject.Config{}))
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // a caller that gave up: ccmkit's list goes on without it, and must end
		iv2, _ := c.Provider.InstancesV2()
		// Either answer is right: the list may end before the lookup sees its context ended.
		_, _ = iv2.InstanceExists(ctx, node("node-1", "ccmkit://i-1"))
		lb, _ := c.Provider.LoadBalancer()
		_, err := lb.EnsureLoadBalancer(t.Context(), "test", &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
		}, []*corev1.Node{node("node-1", "ccmkit://i-1")})
		require.NoError(t, err)
	})
	// The list the caller gave up on ends on its own goroutine, soon but not at once.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, goleak.Find(before))
	}, 10*time.Second, 20*time.Millisecond, "no goroutine left once the calls returned")
}
