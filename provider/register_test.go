package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/sweeper"
)

// instancesOnly is a backend with instances only: a fake cloud without load balancers and
// routes.
func instancesOnly() cloudapi.Client { return fakeCloud(false, false) }

// withLoadBalancers is a backend that also has load balancers.
func withLoadBalancers() cloudapi.Client { return fakeCloud(true, false) }

// withRoutes is a backend with load balancers and routes.
func withRoutes() cloudapi.Client { return fakeCloud(true, true) }

func fakeCloud(lbs, routes bool) *fake.Cloud {
	c, err := fake.New(fake.Config{Capabilities: fake.Capabilities{LoadBalancers: &lbs, Routes: &routes}})
	if err != nil {
		panic(err) // a fixed, valid config
	}
	return c
}

// fakeBackend serves the fake cloud from the config's `fake:` section, as the built-in
// provider (package builtin, which imports this one) does.
func fakeBackend() Backend[fake.Config] {
	return Backend[fake.Config]{
		Name: fake.SectionName,
		New: func(_ *Config, section fake.Config) (cloudapi.Client, error) {
			return fake.New(section)
		},
	}
}

type stubSection struct {
	Endpoint string `yaml:"endpoint"`
}

func (s stubSection) Validate() error {
	if !strings.HasPrefix(s.Endpoint, "https://") {
		return errors.New(`endpoint: must start with "https://"`)
	}
	return nil
}

func stubBackend(name string, built *[]stubSection) Backend[stubSection] {
	return Backend[stubSection]{
		Name: name,
		New: func(cfg *Config, section stubSection) (cloudapi.Client, error) {
			*built = append(*built, section)
			return instancesOnly(), nil
		},
	}
}

func testOptions() Options { return Options{Metrics: metrics.NewKubeRegistry()} }

func TestRegisterTwoProvidersSideBySide(t *testing.T) {
	var builtA, builtB []stubSection
	// Names unique to this test: the global registry stops the process on duplicates.
	Register("ccmkit-test-alpha", stubBackend("alpha", &builtA), testOptions())
	Register("ccmkit-test-beta", stubBackend("beta", &builtB), Options{ProviderIDTemplate: "beta:///{zone}/{id}", Metrics: metrics.NewKubeRegistry()})

	a, err := cloudprovider.GetCloudProvider("ccmkit-test-alpha", strings.NewReader("cluster: {id: c1}\nalpha: {endpoint: https://a.example}\n"))
	require.NoError(t, err)
	b, err := cloudprovider.GetCloudProvider("ccmkit-test-beta", strings.NewReader("cluster: {id: c2}\nbackend: beta\nbeta: {endpoint: https://b.example}\n"))
	require.NoError(t, err)

	assert.Equal(t, "ccmkit-test-alpha", a.ProviderName())
	assert.Equal(t, "ccmkit-test-beta", b.ProviderName())
	assert.Equal(t, []stubSection{{Endpoint: "https://a.example"}}, builtA)
	assert.Equal(t, []stubSection{{Endpoint: "https://b.example"}}, builtB)
	assert.Equal(t, "beta:///{zone}/{id}", b.(*Cloud).providerID.String())
	assert.Equal(t, "ccmkit-test-alpha://{id}", a.(*Cloud).providerID.String())

	_, err = cloudprovider.GetCloudProvider("ccmkit-test-alpha", strings.NewReader("cluster: {id: c1}\nbeta: {endpoint: https://b.example}\n"))
	require.Error(t, err, "a section of another backend is not silently ignored")
	assert.Contains(t, err.Error(), `line 2: unknown key "beta" at the top level (the backend section is "alpha"`)
}

func TestFactoryErrors(t *testing.T) {
	var built []stubSection
	factory := Factory(stubBackend("alpha", &built), Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry()})
	tests := []struct {
		name   string
		config *strings.Reader
		want   []string
	}{
		{
			name: "no cloud config",
			want: []string{`provider "mycloud" needs a cloud config: start the cloud-controller-manager with --cloud-config=<file> (a YAML file with at least cluster.id and a "alpha" section; see the configuration reference in the README)`},
		},
		{
			name:   "other backend named",
			config: strings.NewReader("backend: gamma\ncluster: {id: c1}\n"),
			want:   []string{`backend: "gamma" is not a backend of provider "mycloud"; it has "alpha"`},
		},
		{
			name:   "section invalid with the rest",
			config: strings.NewReader("cluster: {id: 'no spaces'}\nalpha: {endpoint: http://plain}\n"),
			want: []string{
				`invalid cloud config for provider "mycloud":`,
				`cluster.id: "no spaces" must be`,
				`alpha: endpoint: must start with "https://"`,
			},
		},
		{
			name:   "section key misspelt",
			config: strings.NewReader("cluster: {id: c1}\nalpha:\n  endpiont: https://x\n"),
			want:   []string{`line 3: unknown key "endpiont" in alpha (known keys: endpoint)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.config == nil {
				_, err = factory(nil)
			} else {
				_, err = factory(tt.config)
			}
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
	assert.Empty(t, built, "no backend is built from a bad config")

	needsToken := stubBackend("alpha", &built)
	needsToken.NeedsToken = true
	_, err := Factory(needsToken, Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry()})(strings.NewReader("cluster: {id: c1}\nalpha: {endpoint: http://plain}\n"))
	require.Error(t, err)
	assert.ErrorContains(t, err, `credentials: the "alpha" backend needs a token: set credentials.token or credentials.tokenFile, or $MYCLOUD_CLOUD_TOKEN or $MYCLOUD_CLOUD_TOKEN_FILE`)
	assert.ErrorContains(t, err, `alpha: endpoint: must start with "https://"`, "with the config's other problems")
	assert.Empty(t, built, "New is not called without a token")
}

func TestConfigOptionalBackend(t *testing.T) {
	backend := Backend[struct{}]{
		Name:           "metadata",
		ConfigOptional: true,
		New:            func(*Config, struct{}) (cloudapi.Client, error) { return instancesOnly(), nil },
	}
	cloud, err := Factory(backend, testOptions())(nil)
	require.NoError(t, err)
	assert.False(t, cloud.HasClusterID())
	_, ok := cloud.LoadBalancer()
	assert.False(t, ok)
}

func TestNewCapabilities(t *testing.T) {
	yes := true
	cfg := Config{Cluster: ClusterConfig{ID: "c1"}, Enable: EnableConfig{Routes: &yes, LoadBalancers: &yes}}
	_, err := New(cfg, instancesOnly(), testOptions())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `enable.routes: the "ccmkit" backend has no routes`)
	assert.Contains(t, err.Error(), `enable.loadBalancers: the "ccmkit" backend has no load balancers`)

	_, err = New(Config{}, instancesOnly(), testOptions())
	require.NoError(t, err, "load balancers on by default quietly stay off for a backend without them, and need no cluster ID")

	_, err = New(Config{}, withLoadBalancers(), testOptions())
	assert.ErrorContains(t, err, "cluster.id: required because load balancers or routes are enabled")

	_, err = New(Config{Cluster: ClusterConfig{ID: "c1"}}, instancesOnly(), Options{ProviderIDTemplate: "x://{zone}", Metrics: metrics.NewKubeRegistry()})
	assert.ErrorContains(t, err, "must contain {id}")
}

// TestLoadBalancerClass checks which LoadBalancer the upstream service controller
// (LoadBalancer) and the class controller (LoadBalancerClass) get for each setting of
// loadBalancer.class and loadBalancer.serveUnclassed.
func TestLoadBalancerClass(t *testing.T) {
	no := false
	tests := []struct {
		name          string
		lb            LoadBalancerConfig
		wantUnclassed bool
		wantClass     string
		wantClassLBs  bool
	}{
		{name: "no class", wantUnclassed: true},
		{name: "a class and Services without one", lb: LoadBalancerConfig{Class: "example.com/ccmkit"}, wantUnclassed: true, wantClass: "example.com/ccmkit", wantClassLBs: true},
		{name: "only a class", lb: LoadBalancerConfig{Class: "example.com/ccmkit", ServeUnclassed: &no}, wantClass: "example.com/ccmkit", wantClassLBs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud, err := New(Config{Cluster: ClusterConfig{ID: "c1"}, LoadBalancer: tt.lb}, withLoadBalancers(), testOptions())
			require.NoError(t, err)
			unclassed, ok := cloud.LoadBalancer()
			assert.Equal(t, tt.wantUnclassed, ok, "LoadBalancer")
			assert.Equal(t, tt.wantUnclassed, unclassed != nil, "LoadBalancer")
			class, lb, ok := cloud.LoadBalancerClass()
			assert.Equal(t, tt.wantClassLBs, ok, "LoadBalancerClass")
			assert.Equal(t, tt.wantClass, class)
			if tt.wantUnclassed && tt.wantClassLBs {
				assert.Same(t, unclassed, lb, "one LoadBalancer for both controllers")
			}
		})
	}

	t.Run("a class without load balancers", func(t *testing.T) {
		_, err := New(Config{Cluster: ClusterConfig{ID: "c1"}, LoadBalancer: LoadBalancerConfig{Class: "example.com/ccmkit"}}, instancesOnly(), testOptions())
		assert.ErrorContains(t, err, `loadBalancer.class: "example.com/ccmkit" is set, but load balancers are off (enable.loadBalancers: false, or the "ccmkit" backend has none)`)
		_, err = New(Config{Cluster: ClusterConfig{ID: "c1"}, Enable: EnableConfig{LoadBalancers: &no}, LoadBalancer: LoadBalancerConfig{Class: "example.com/ccmkit"}}, withLoadBalancers(), testOptions())
		assert.ErrorContains(t, err, `loadBalancer.class: "example.com/ccmkit" is set, but load balancers are off`)
	})
}

// TestSweeper checks what the sweeper gets for each setting: the instrumented client's
// load balancers unless they are kept on delete, the routes when they are on, the target
// groups when load balancers are on and the cloud has them (with the load balancers to
// list when they are kept on delete).
func TestSweeper(t *testing.T) {
	yes, no := true, false
	on := SweeperConfig{Enabled: true, GracePeriod: time.Hour, Interval: time.Minute}
	withGroups := func() cloudapi.Client {
		c, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &yes}})
		require.NoError(t, err)
		return c
	}
	tests := []struct {
		name     string
		cfg      Config
		client   cloudapi.Client
		want     bool
		lbs, rts bool
		// groups: target groups swept; listed: the load balancers only listed for them.
		groups, listed bool
		wantErr        string
	}{
		{name: "off by default", cfg: Config{Cluster: ClusterConfig{ID: "c1"}}, client: withLoadBalancers()},
		{name: "load balancers", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on}, client: withLoadBalancers(), want: true, lbs: true},
		{name: "load balancers and routes", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, Enable: EnableConfig{Routes: &yes}}, client: withRoutes(), want: true, lbs: true, rts: true},
		{name: "kept load balancers are not swept", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, Enable: EnableConfig{Routes: &yes}, LoadBalancer: LoadBalancerConfig{KeepOnDelete: true}}, client: withRoutes(), want: true, rts: true},
		{name: "nothing to sweep", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, LoadBalancer: LoadBalancerConfig{KeepOnDelete: true}}, client: withLoadBalancers(),
			wantErr: "sweeper.enabled: there is nothing to sweep"},
		{name: "target groups", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on}, client: withGroups(), want: true, lbs: true, groups: true},
		{name: "target groups with load balancers kept on delete", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, LoadBalancer: LoadBalancerConfig{KeepOnDelete: true}},
			client: withGroups(), want: true, groups: true, listed: true},
		{name: "target groups left from when they were on", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, LoadBalancer: LoadBalancerConfig{TargetGroups: &no}},
			client: withGroups(), want: true, lbs: true, groups: true},
		{name: "no target groups without load balancers", cfg: Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, Enable: EnableConfig{LoadBalancers: &no, Routes: &yes}},
			client: withGroups(), want: true, rts: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud, err := New(tt.cfg, tt.client, testOptions())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			target, ok := cloud.Sweeper()
			require.Equal(t, tt.want, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.lbs, target.LoadBalancers != nil, "load balancers swept")
			assert.Equal(t, tt.rts, target.Routes != nil, "routes swept")
			assert.Equal(t, tt.groups, target.Options.TargetGroups != nil, "target groups swept")
			assert.Equal(t, tt.listed, target.Options.ListedLoadBalancers != nil, "load balancers listed for the groups")
			assert.Equal(t, tt.lbs, target.Options.ShareKey != nil, "shared load balancers swept with the load balancers")
			if tt.groups {
				raw, _ := cloudapi.TargetGroups(tt.client)
				assert.NotEqual(t, fmt.Sprintf("%T", raw), fmt.Sprintf("%T", target.Options.TargetGroups), "groups through the instrumented client")
				assert.Equal(t, DefaultCacheMaxAge, target.Options.TargetGroupMaxAge, "the load balancers' collection's, for its rule")
			}
			assert.Equal(t, "c1", target.Options.ClusterID)
			assert.Equal(t, time.Hour, target.Options.GracePeriod)
			assert.Equal(t, time.Minute, target.Options.Interval)
			require.NotNil(t, target.Options.OnSwept)
			target.Options.OnSwept(sweeper.KindRoute, sweeper.ResultDeleted) // registered: no panic
			_, raw := tt.client.LoadBalancers()
			assert.NotEqual(t, fmt.Sprintf("%T", raw), fmt.Sprintf("%T", target.LoadBalancers), "through the instrumented client")
		})
	}
}

// The sweeper reads which share a Service is in as the load balancers do: the config's
// annotation prefix and loadBalancer.shareAcrossNamespaces.
func TestSweeperReadsSharesAsTheLoadBalancers(t *testing.T) {
	on := SweeperConfig{Enabled: true, GracePeriod: time.Hour, Interval: time.Minute}
	svc := func(annotations map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", Annotations: annotations}}
	}
	for _, tc := range []struct {
		name    string
		lb      LoadBalancerConfig
		svc     *corev1.Service
		want    string
		wantErr bool
	}{
		{name: "default prefix", svc: svc(map[string]string{DefaultAnnotationPrefix + "share": "front"}), want: "ns/front"},
		{name: "no share", svc: svc(nil)},
		{name: "the config's prefix", lb: LoadBalancerConfig{AnnotationPrefix: "lb.example.com/"},
			svc: svc(map[string]string{"lb.example.com/share": "front", DefaultAnnotationPrefix + "share": "other"}), want: "ns/front"},
		{name: "across namespaces", lb: LoadBalancerConfig{ShareAcrossNamespaces: true}, svc: svc(map[string]string{DefaultAnnotationPrefix + "share": "front"}), want: "*/front"},
		{name: "malformed", svc: svc(map[string]string{DefaultAnnotationPrefix + "share": "Not A Label"}), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, err := New(Config{Cluster: ClusterConfig{ID: "c1"}, Sweeper: on, LoadBalancer: tc.lb}, withLoadBalancers(), testOptions())
			require.NoError(t, err)
			target, ok := cloud.Sweeper()
			require.True(t, ok)
			require.NotNil(t, target.Options.ShareKey)
			got, err := target.Options.ShareKey(tc.svc)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestClusters(t *testing.T) {
	cloud, err := New(Config{Cluster: ClusterConfig{ID: "c1", Name: "prod", Master: "10.0.0.1"}}, instancesOnly(), testOptions())
	require.NoError(t, err)
	assert.True(t, cloud.HasClusterID())
	clusters, ok := cloud.Clusters()
	require.True(t, ok)
	names, err := clusters.ListClusters(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"prod"}, names)
	master, err := clusters.Master(context.Background(), "prod")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1", master)
	_, err = clusters.Master(context.Background(), "staging")
	assert.ErrorContains(t, err, `cluster "staging" is unknown; the cloud config describes "prod"`)
}
