package provider

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// sizes are an adapter's load balancer settings.
func sizes() loadbalancer.Settings {
	return loadbalancer.Settings{
		{Name: "size", Values: []string{"small", "medium", "large"}, Default: "small", Doc: "The size."},
		{Name: "algorithm", Values: []string{"round-robin", "least-connections"}, Doc: "The algorithm."},
	}
}

func TestLoadBalancerSettingsFromConfig(t *testing.T) {
	opts := Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry(), LoadBalancerSettings: sizes()}
	factory := Factory(fakeBackend(), opts)

	_, err := factory(strings.NewReader("cluster: {id: 'bad id'}\nloadBalancer:\n  settings: {sise: large, size: huge, algorithm: Least-Connections}\n"))
	require.Error(t, err)
	for _, want := range []string{
		`cluster.id: "bad id"`,
		`loadBalancer.settings.sise: no such setting (the adapter declares: size, algorithm)`,
		`loadBalancer.settings.size: "huge": not an allowed value (allowed: small, medium, large)`,
	} {
		assert.Contains(t, err.Error(), want, "every problem at once")
	}
	assert.NotContains(t, err.Error(), "algorithm:", "a value in another case is allowed")

	_, err = Factory(fakeBackend(), Options{Metrics: metrics.NewKubeRegistry()})(strings.NewReader("cluster: {id: c1}\nloadBalancer: {settings: {size: large}}\n"))
	assert.ErrorContains(t, err, "loadBalancer.settings.size: no such setting (the adapter declares: none)")

	cloud, err := factory(strings.NewReader("cluster: {id: c1}\nloadBalancer:\n  settings: {size: Large}\n"))
	require.NoError(t, err)
	lb := ensureOne(t, cloud, map[string]string{DefaultAnnotationPrefix + "algorithm": "round-robin"})
	assert.Equal(t, map[string]string{"size": "large", "algorithm": "round-robin"}, lb.Spec.SettingValues,
		"the config's default, canonical, and the annotation")
}

// ensureOne ensures the load balancer of a Service web with annotations over cloud (with
// no nodes), and returns the one load balancer the cloud then has.
func ensureOne(t *testing.T, cloud cloudprovider.Interface, annotations map[string]string) cloudapi.LoadBalancer {
	t.Helper()
	lbs, ok := cloud.LoadBalancer()
	require.True(t, ok)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Annotations: annotations},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	_, err := lbs.EnsureLoadBalancer(t.Context(), "c1", svc, nil)
	require.NoError(t, err)
	api, _ := cloud.(*Cloud).client.LoadBalancers()
	page, err := api.ListLoadBalancers(t.Context(), cloudapi.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	return page.Items[0]
}

func TestNewRefusesBadDeclarations(t *testing.T) {
	bad := loadbalancer.Settings{{Name: "internal", Values: []string{"x"}}}
	_, err := New(Config{Cluster: ClusterConfig{ID: "c1"}}, withLoadBalancers(), Options{Metrics: metrics.NewKubeRegistry(), LoadBalancerSettings: bad})
	assert.ErrorContains(t, err, `provider "ccmkit": its load balancer settings are declared wrongly: load balancer setting 0 ("internal"): the name is one of ccmkit's own annotations`)
}

const envRegisterChild = "CCMKIT_TEST_REGISTER_BAD_SETTINGS"

// TestRegisterBadSettingsStops checks, in a child process, that Register stops the
// process on wrongly declared settings or aliases, naming the provider and the problem.
func TestRegisterBadSettingsStops(t *testing.T) {
	bad := map[string]Options{
		"settings": {LoadBalancerSettings: loadbalancer.Settings{
			{Name: "size", Values: []string{"small"}, Default: "huge"}, {Name: "size", Values: []string{"small"}}}},
		"aliases": {AnnotationPrefix: "lb.example.com/", LoadBalancerAliases: loadbalancer.Aliases{Keys: []loadbalancer.Alias{
			{Key: "lb.example.com/old-internal", Name: loadbalancer.AnnotationInternal}, {Key: "old.example.com/size", Name: "size"}}}},
	}
	if which := os.Getenv(envRegisterChild); which != "" {
		Register("ccmkit-test-bad-"+which, fakeBackend(), bad[which])
		return // not reached
	}
	for which, want := range map[string][]string{
		"settings": {"Invalid load balancer settings", `provider="ccmkit-test-bad-settings"`, `the default "huge" is not allowed`, "declared twice"},
		"aliases": {"Invalid annotation aliases", `provider="ccmkit-test-bad-aliases"`, `is under ccmkit's annotation prefix "lb.example.com/"`,
			`"size" is neither one of ccmkit's annotations nor a declared setting`},
	} {
		t.Run(which, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRegisterBadSettingsStops$", "-test.count=1")
			cmd.Env = append(os.Environ(), envRegisterChild+"="+which)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "Register returned; output:\n%s", out)
			assert.Equal(t, 255, exit.ExitCode())
			for _, w := range want {
				assert.Contains(t, string(out), w)
			}
		})
	}
}

// TestLoadBalancerAliases: the adapter's aliases reach the load balancers, and are
// checked against the config's annotation prefix too.
func TestLoadBalancerAliases(t *testing.T) {
	aliases := loadbalancer.Aliases{Prefixes: []string{"old.example.com/"}, Keys: []loadbalancer.Alias{{Key: "old.example.com/type", Name: "size"}}}
	opts := Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry(), LoadBalancerSettings: sizes(), LoadBalancerAliases: aliases}

	_, err := Factory(fakeBackend(), opts)(strings.NewReader("cluster: {id: c1}\nloadBalancer: {annotationPrefix: old.example.com/}\n"))
	assert.ErrorContains(t, err, `provider "mycloud": its annotation aliases are declared wrongly for the annotation prefix "old.example.com/": legacy annotation prefix 0 ("old.example.com/"): overlaps`)
	_, err = New(Config{Cluster: ClusterConfig{ID: "c1"}}, withLoadBalancers(), Options{Metrics: metrics.NewKubeRegistry(), LoadBalancerAliases: aliases})
	assert.ErrorContains(t, err, `"size" is neither one of ccmkit's annotations nor a declared setting`)

	cloud, err := Factory(fakeBackend(), opts)(strings.NewReader("cluster: {id: c1}\n"))
	require.NoError(t, err)
	lb := ensureOne(t, cloud, map[string]string{"old.example.com/type": "Large"})
	assert.Equal(t, map[string]string{"size": "large"}, lb.Spec.SettingValues, "the legacy key's value, canonical")
}
