package adapter_test

import (
	"strings"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
	"github.com/ccmkit/ccmkit/provider"
)

// hetznerAddresses are the addresses Hetzner's own CCM gave the Node of a server named
// name with the public IPv4 address v4, the IPv6 network whose ::1 is v6 and the address
// private in its configured network, for its address family (HCLOUD_INSTANCES_ADDRESS_FAMILY).
func hetznerAddresses(family, name, v4, v6, private string) []corev1.NodeAddress {
	out := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	if family == adapter.AddressFamilyIPv4 || family == adapter.AddressFamilyDualStack {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: v4})
	}
	if family == adapter.AddressFamilyIPv6 || family == adapter.AddressFamilyDualStack {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: v6})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: private})
}

// TestNodeMetadataAsHetznersCCM checks that a Node gets the labels and addresses Hetzner's
// own CCM gave it (its hcloud/instances.go): the region is the server's location, the zone
// its legacy datacenter (none with HCLOUD_INSTANCES_ZONE_LABEL_ENABLED=false),
// instance.hetzner.cloud/provided-by is "cloud", and the addresses are the Hostname, the
// public ones of the address family, and the one in the network. The family and the zone
// switch come from the cloud config or, where it sets none, from that CCM's variables.
func TestNodeMetadataAsHetznersCCM(t *testing.T) {
	srv := schema.Server{ID: 7, Name: "worker-7", Status: "running", ServerType: schema.ServerType{Name: "cx22"}, Location: schema.Location{Name: "fsn1"},
		PublicNet:  schema.ServerPublicNet{IPv4: schema.ServerPublicNetIPv4{IP: "198.51.100.7"}, IPv6: schema.ServerPublicNetIPv6{IP: "2001:db8:1:2::/64"}},
		PrivateNet: []schema.ServerPrivateNet{{Network: network.ID, IP: "10.0.0.7"}}}
	_, url := newMock(t, hcloudmock.Config{Servers: []schema.Server{srv}}, nil)
	for _, tt := range []struct {
		name    string
		env     map[string]string
		section string // more keys of the hcloud section
		family  string // the address family Hetzner's CCM was configured with
		zone    string
	}{
		{name: "default", family: adapter.AddressFamilyIPv4, zone: "fsn1-dc14"},
		{name: "ipv6 from the environment", env: map[string]string{adapter.EnvInstancesAddressFamily: "ipv6"}, family: adapter.AddressFamilyIPv6, zone: "fsn1-dc14"},
		{name: "dualstack from the environment", env: map[string]string{adapter.EnvInstancesAddressFamily: "dualstack"}, family: adapter.AddressFamilyDualStack, zone: "fsn1-dc14"},
		{name: "dualstack from the config", section: ", addressFamily: dualstack", family: adapter.AddressFamilyDualStack, zone: "fsn1-dc14"},
		{name: "the config wins", env: map[string]string{adapter.EnvInstancesAddressFamily: "ipv6"}, section: ", addressFamily: ipv4", family: adapter.AddressFamilyIPv4, zone: "fsn1-dc14"},
		{name: "zone label off", env: map[string]string{adapter.EnvInstancesZoneLabelEnabled: "false"}, family: adapter.AddressFamilyIPv4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cloud, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(
				"cluster: {id: c1}\nhcloud: {endpoint: "+url+", network: k8s"+tt.section+"}\ncredentials: {token: t}\n"))
			require.NoError(t, err)
			iv2, _ := cloud.InstancesV2()
			md, err := iv2.InstanceMetadata(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-7"}, Spec: corev1.NodeSpec{ProviderID: "hcloud://7"}})
			require.NoError(t, err)
			assert.Equal(t, "fsn1", md.Region)
			assert.Equal(t, tt.zone, md.Zone)
			assert.Equal(t, "cx22", md.InstanceType)
			assert.Equal(t, map[string]string{adapter.LabelProvidedBy: "cloud"}, md.AdditionalLabels)
			// The cloud node controller compares addresses as a set: the order (ccmkit's,
			// InternalIP first) changes no Node.
			assert.ElementsMatch(t, hetznerAddresses(tt.family, "worker-7", "198.51.100.7", "2001:db8:1:2::1", "10.0.0.7"), md.NodeAddresses)
		})
	}
}

// TestEnvOfHetznersCCM checks that the variables users set for Hetzner's own CCM configure
// the adapter where the cloud config sets nothing, and that a value that does not parse
// is an error naming its variable.
func TestEnvOfHetznersCCM(t *testing.T) {
	_, url := newMock(t, hcloudmock.Config{}, nil)
	read := func(config string) (provider.Config, adapter.Config, error) {
		cloud, err := cloudprovider.GetCloudProvider(adapter.ProviderName, strings.NewReader(config))
		if err != nil {
			return provider.Config{}, adapter.Config{}, err
		}
		cfg := cloud.(*provider.Cloud).Config()
		section, _, err := provider.Section[adapter.Config](&cfg, "hcloud")
		require.NoError(t, err)
		return cfg, section, nil
	}
	t.Setenv(adapter.EnvToken, "from-env")
	t.Setenv(adapter.EnvEndpoint, url)
	t.Setenv(adapter.EnvNetwork, "k8s")
	t.Setenv(adapter.EnvLoadBalancersLocation, "hel1")
	t.Setenv(adapter.EnvLoadBalancersUsePrivateIP, "1")
	t.Setenv(adapter.EnvLoadBalancersType, "lb21")
	t.Setenv(adapter.EnvLoadBalancersAlgorithmType, "least_connections")
	t.Setenv(adapter.EnvLoadBalancersHealthCheckInterval, "15s") // no counterpart: logged, not read
	cfg, section, err := read("cluster: {id: c1}\n")
	require.NoError(t, err)
	assert.Equal(t, provider.Secret("from-env"), cfg.Credentials.Token)
	assert.Equal(t, adapter.Config{Endpoint: url, Network: "k8s", Location: "hel1", UsePrivateIP: true}, section)
	assert.Equal(t, map[string]string{adapter.SettingType: "lb21", adapter.SettingAlgorithm: "least_connections"}, cfg.LoadBalancer.SettingDefaults)

	cfg, section, err = read("cluster: {id: c1}\nhcloud: {location: nbg1}\nloadBalancer: {settings: {type: lb11}}\ncredentials: {token: from-file}\n")
	require.NoError(t, err)
	assert.Equal(t, provider.Secret("from-file"), cfg.Credentials.Token, "the cloud config wins")
	assert.Equal(t, "nbg1", section.Location, "the cloud config wins")
	assert.Equal(t, map[string]string{adapter.SettingType: "lb11", adapter.SettingAlgorithm: "least_connections"}, cfg.LoadBalancer.SettingDefaults)

	t.Setenv(adapter.EnvLoadBalancersEnabled, "false")
	cfg, _, err = read("cluster: {id: c1}\n")
	require.NoError(t, err)
	assert.False(t, *cfg.Enable.LoadBalancers)

	for name, value := range map[string]string{
		adapter.EnvLoadBalancersUsePrivateIP:  "yes please",
		adapter.EnvInstancesAddressFamily:     "ipv5",
		adapter.EnvLoadBalancersAlgorithmType: "random",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			_, _, err := read("cluster: {id: c1}\n")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "$"+name)
			assert.Contains(t, err.Error(), value)
		})
	}
}
