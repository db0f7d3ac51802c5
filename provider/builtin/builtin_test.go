package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/builtin"
)

func TestBuiltinProviderIsRegistered(t *testing.T) {
	assert.True(t, cloudprovider.IsCloudProvider(provider.DefaultProviderName), "blank-importing builtin registers %q", provider.DefaultProviderName)
	_, err := cloudprovider.GetCloudProvider(provider.DefaultProviderName, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `provider "ccmkit" needs a cloud config: start the cloud-controller-manager with --cloud-config=<file>`)
}

// TestBuiltinProviderFromExampleConfig builds the built-in provider from a cloud config
// that describes its fake cloud, and asks it about a Node, through the instrumented client.
func TestBuiltinProviderFromExampleConfig(t *testing.T) {
	cloudYAML, err := os.ReadFile("../../fake/testdata/cloud.yaml")
	require.NoError(t, err)
	t.Chdir(t.TempDir()) // where its relative state file goes
	var doc strings.Builder
	doc.WriteString("backend: fake\ncluster: {id: demo}\nfake:\n")
	for line := range strings.Lines(string(cloudYAML)) {
		doc.WriteString("  " + line)
	}
	reg := metrics.NewKubeRegistry()
	iface, err := provider.Factory(builtin.Backend(), provider.Options{Metrics: reg})(strings.NewReader(doc.String()))
	require.NoError(t, err)
	assert.Equal(t, "ccmkit", iface.ProviderName())

	iv2, ok := iface.InstancesV2()
	require.True(t, ok)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-0001"}}
	md, err := iv2.InstanceMetadata(t.Context(), node)
	require.NoError(t, err)
	assert.Equal(t, "m5.large", md.InstanceType)
	assert.Equal(t, "eu-1a", md.Zone)
	assert.Equal(t, "eu-1", md.Region)

	shutdown, err := iv2.InstanceShutdown(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-0003"}})
	require.NoError(t, err)
	assert.True(t, shutdown, "i-0003 is stopped in the example cloud")

	lb, ok := iface.LoadBalancer()
	require.True(t, ok, "the fake has load balancers and they are enabled by default")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	var status *corev1.LoadBalancerStatus
	for range 4 { // the create and two reads answer provisioning in the example cloud
		status, err = lb.EnsureLoadBalancer(t.Context(), "demo", svc, []*corev1.Node{node})
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.Len(t, status.Ingress, 1)
	assert.Contains(t, status.Ingress[0].IP, "203.0.113.", "an address from the example cloud's public pool")
	_, ok = iface.Routes()
	assert.False(t, ok, "routes are off unless enabled")

	// The calls went through the instrumented client: they are in the provider's metrics.
	families, err := reg.Gather()
	require.NoError(t, err)
	var samples uint64
	for _, f := range families {
		if f.GetName() == "cloudprovider_ccmkit_api_request_duration_seconds" {
			for _, m := range f.GetMetric() {
				samples += m.GetHistogram().GetSampleCount()
			}
		}
	}
	assert.Positive(t, samples, "cloud calls are timed in cloudprovider_ccmkit_api_request_duration_seconds")
}

func TestBuiltinProviderConfigErrors(t *testing.T) {
	factory := provider.Factory(builtin.Backend(), provider.Options{Metrics: metrics.NewKubeRegistry()})
	_, err := factory(strings.NewReader("cluster: {id: demo}\nfake:\n  pageSize: -1\n  instances:\n    - {id: i-1, zone: a, flavour: big}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 5: unknown key "flavour"`)

	_, err = factory(strings.NewReader("cluster: {id: demo}\nfake:\n  pageSize: -1\n  instances: [{id: i-1}, {id: i-1}]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fake: pageSize: -1 is negative")
	assert.Contains(t, err.Error(), `instances[1].id: "i-1" is also the id of instances[0]`)
}

// TestBuiltinProviderKeepsItsCloudInTheStateFile builds the built-in provider twice from
// one cloud config with a state file, as a restarted cloud-controller-manager does: the
// second finds the first's load balancer, with its address, and creates nothing.
func TestBuiltinProviderKeepsItsCloudInTheStateFile(t *testing.T) {
	stateFile := filepath.Join(t.TempDir(), "cloud-state.json")
	config := "cluster: {id: demo}\nfake:\n  stateFile: " + stateFile + "\n  instances: [{id: i-1, name: node-a}]\n"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-1"}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	ensure := func() (*corev1.LoadBalancerStatus, bool) {
		iface, err := provider.Factory(builtin.Backend(), provider.Options{Metrics: metrics.NewKubeRegistry()})(strings.NewReader(config))
		require.NoError(t, err)
		lb, ok := iface.LoadBalancer()
		require.True(t, ok)
		_, existed, err := lb.GetLoadBalancer(t.Context(), "demo", svc)
		require.NoError(t, err)
		status, err := lb.EnsureLoadBalancer(t.Context(), "demo", svc, []*corev1.Node{node})
		require.NoError(t, err)
		return status, existed
	}
	first, existed := ensure()
	require.False(t, existed)
	second, existed := ensure()
	assert.True(t, existed, "the restarted provider finds the load balancer in the state file")
	assert.Equal(t, first, second, "and its address")

	require.NoError(t, os.WriteFile(stateFile, []byte("kind: something else\n"), 0o600))
	_, err := provider.Factory(builtin.Backend(), provider.Options{Metrics: metrics.NewKubeRegistry()})(strings.NewReader(config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `building the "fake" backend: fake cloud: state file `+stateFile+": the file is not JSON")
}
