package provider

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/fake"
)

// envFallbacks are the fallbacks of the tests' backend "alpha".
var envFallbacks = []EnvFallback{
	{Name: "ALPHA_ENDPOINT", Key: "alpha.endpoint", Doc: "The API endpoint."},
	{Name: "ALPHA_LB_ENABLED", Key: "enable.loadBalancers", Bool: true, Doc: "Load balancers on or off."},
	{Name: "ALPHA_CLUSTER_NAME", Key: "cluster.name", Doc: "The cluster name."},
	{Name: "ALPHA_TOKEN", Key: "credentials.token", Doc: "The token."},
	{Name: "ALPHA_DEBUG", Doc: "Debug logging: ccmkit's -v flag instead."},
}

// envFactory builds a provider "mycloud" of the backend alpha with envFallbacks, the
// sections it built appended to built.
func envFactory(built *[]stubSection, needsToken bool) func(string) (*Cloud, error) {
	backend := stubBackend("alpha", built)
	backend.NeedsToken = needsToken
	opts := Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry(), EnvFallbacks: envFallbacks}
	return func(config string) (*Cloud, error) { return build(strings.NewReader(config), backend, opts) }
}

func TestEnvFallbacksFillWhatTheFileLeavesOut(t *testing.T) {
	t.Setenv("ALPHA_ENDPOINT", "https://env.example")
	t.Setenv("ALPHA_LB_ENABLED", "0")
	t.Setenv("ALPHA_CLUSTER_NAME", "from-env")
	t.Setenv("ALPHA_DEBUG", "1")
	var built []stubSection
	cloud, err := envFactory(&built, false)("cluster: {id: c1, name: from-file}\n")
	require.NoError(t, err)
	assert.Equal(t, []stubSection{{Endpoint: "https://env.example"}}, built, "the backend's section from the environment")
	assert.False(t, *cloud.Config().Enable.LoadBalancers, "0 is false, as strconv.ParseBool reads it")
	assert.Equal(t, "from-file", cloud.Config().Cluster.Name, "the file wins where both set a key")

	built = nil
	_, err = envFactory(&built, false)("cluster: {id: c1}\nalpha: {endpoint: https://file.example}\n")
	require.NoError(t, err)
	assert.Equal(t, []stubSection{{Endpoint: "https://file.example"}}, built, "the file wins for the backend's section too")

	built = nil
	_, err = envFactory(&built, false)("cluster: {id: c1}\nalpha:\n")
	require.NoError(t, err)
	assert.Equal(t, []stubSection{{Endpoint: "https://env.example"}}, built, "an empty section sets nothing")

	t.Setenv("ALPHA_ENDPOINT", "")
	_, err = envFactory(&built, false)("cluster: {id: c1}\n")
	require.Error(t, err, "an empty variable is unset: the stub's section needs an https endpoint")
}

func TestEnvFallbackErrorsNameTheVariable(t *testing.T) {
	var built []stubSection
	t.Setenv("ALPHA_ENDPOINT", "https://env.example")
	t.Setenv("ALPHA_LB_ENABLED", "yes please")
	_, err := envFactory(&built, false)("cluster: {id: c1}\n")
	require.ErrorContains(t, err, `$ALPHA_LB_ENABLED (for enable.loadBalancers): "yes please" is not a boolean (true or false, 1 or 0)`)

	t.Setenv("ALPHA_LB_ENABLED", "")
	t.Setenv("ALPHA_ENDPOINT", "http://plain")
	_, err = envFactory(&built, false)("cluster: {id: c1}\n")
	require.ErrorContains(t, err, `alpha: endpoint: must start with "https://"`)
	require.ErrorContains(t, err, "(read from the environment: alpha.endpoint from $ALPHA_ENDPOINT)")
	assert.Empty(t, built)
}

func TestEnvFallbackCredentials(t *testing.T) {
	t.Setenv("ALPHA_ENDPOINT", "https://env.example")
	t.Setenv("ALPHA_TOKEN", "from-alpha-token")
	var built []stubSection
	cloud, err := envFactory(&built, true)("cluster: {id: c1}\n")
	require.NoError(t, err)
	assert.Equal(t, Secret("from-alpha-token"), cloud.Config().Credentials.Token)

	cloud, err = envFactory(&built, true)("cluster: {id: c1}\ncredentials: {token: from-file}\n")
	require.NoError(t, err)
	assert.Equal(t, Secret("from-file"), cloud.Config().Credentials.Token, "the file's credential wins")

	t.Setenv("MYCLOUD_CLOUD_TOKEN", "from-mycloud-token")
	cloud, err = envFactory(&built, true)("cluster: {id: c1}\n")
	require.NoError(t, err, "ccmkit's own variable is a credential set otherwise: no conflict")
	assert.Equal(t, Secret("from-mycloud-token"), cloud.Config().Credentials.Token)
}

func TestEnvFallbackDeclarations(t *testing.T) {
	var built []stubSection
	for _, tt := range []struct {
		fallback EnvFallback
		want     string
	}{
		{EnvFallback{Name: "lower", Key: "alpha.endpoint", Doc: "d"}, `name "lower" is not an environment variable's`},
		{EnvFallback{Name: "ALPHA_ENDPOINT", Key: "alpha.endpoint", Doc: "d"}, "ALPHA_ENDPOINT is declared twice"},
		{EnvFallback{Name: "ALPHA_X", Key: "alpha.x"}, "ALPHA_X has no Doc"},
		{EnvFallback{Name: "ALPHA_X", Key: "nodes..x", Doc: "d"}, `key "nodes..x" is no key of the cloud config`},
		{EnvFallback{Name: "ALPHA_X", Key: "beta.x", Doc: "d"}, `key "beta.x" is no key of the cloud config`},
	} {
		opts := Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry(), EnvFallbacks: append([]EnvFallback{envFallbacks[0]}, tt.fallback)}
		_, err := build(strings.NewReader("cluster: {id: c1}\nalpha: {endpoint: https://a}\n"), stubBackend("alpha", &built), opts)
		require.ErrorContains(t, err, "its environment fallbacks are declared wrongly", tt.want)
		require.ErrorContains(t, err, tt.want)
	}
	assert.Empty(t, built)
}

func TestOptionsNodeLabels(t *testing.T) {
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}})
	require.NoError(t, err)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-1"}}
	declared := map[string]string{"cloud.example/provided-by": "cloud", "cloud.example/kind": "vm"}
	for _, tt := range []struct {
		name  string
		nodes NodesConfig
		want  map[string]string
	}{
		{name: "declared", want: declared},
		{name: "the config's additional label wins",
			nodes: NodesConfig{AdditionalLabels: map[string]string{"cloud.example/kind": "metal", "team": "a"}},
			want:  map[string]string{"cloud.example/provided-by": "cloud", "cloud.example/kind": "metal", "team": "a"}},
		{name: "the config's label from a tag wins",
			nodes: NodesConfig{LabelsFromTags: map[string]string{"kind": "cloud.example/kind"}},
			want:  map[string]string{"cloud.example/provided-by": "cloud"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Cluster: ClusterConfig{ID: "c"}, Nodes: tt.nodes}
			p, err := New(cfg, cloud, Options{Metrics: metrics.NewKubeRegistry(), NodeLabels: declared})
			require.NoError(t, err)
			iv2, _ := p.InstancesV2()
			md, err := iv2.InstanceMetadata(t.Context(), node)
			require.NoError(t, err)
			assert.Equal(t, tt.want, md.AdditionalLabels)
		})
	}
	_, err = New(Config{Cluster: ClusterConfig{ID: "c"}}, cloud, Options{Metrics: metrics.NewKubeRegistry(),
		NodeLabels: map[string]string{"node.kubernetes.io/kind": "vm"}})
	require.ErrorContains(t, err, `provider.Options.NodeLabels: key "node.kubernetes.io/kind"`)
}
