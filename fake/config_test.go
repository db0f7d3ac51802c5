package fake_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

func TestParseConfigExample(t *testing.T) {
	data, err := os.ReadFile("testdata/cloud.yaml")
	require.NoError(t, err)
	cfg, err := fake.ParseConfig(data)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())

	assert.Equal(t, "eu-1", cfg.Region)
	assert.Equal(t, 500, cfg.PageSize)
	assert.Equal(t, fake.Provisioning{Reads: 2, Duration: 0}, cfg.Provisioning)
	assert.Equal(t, []string{"2001:db8:1::/64"}, cfg.AddressPools.Public.IPv6)
	assert.Equal(t, fake.Hostnames{Domain: "lb.eu-1.example.com"}, cfg.Hostnames)
	require.Len(t, cfg.Instances, 3)
	assert.Equal(t, cloudapi.InstanceStopped, cfg.Instances[2].State)
	assert.Equal(t, fake.Address{Type: cloudapi.AddressInternalIP, Address: "fd00::11"}, cfg.Instances[0].Addresses[1])
	assert.Equal(t, "cloud-state.json", cfg.StateFile)

	t.Chdir(t.TempDir()) // where the relative state file goes
	cloud, err := fake.Open(cfg)
	require.NoError(t, err)
	assert.FileExists(t, "cloud-state.json")
	inst, err := cloud.Instances().GetInstance(t.Context(), "i-0002")
	require.NoError(t, err)
	assert.Equal(t, "eu-1", inst.Region, "an instance without a region is in the cloud's region")
	assert.Equal(t, cloudapi.InstanceRunning, inst.State, "an instance without a state is running")
}

func TestParseConfigDuration(t *testing.T) {
	cfg, err := fake.ParseConfig([]byte("provisioning: {duration: 1m30s}\n"))
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, cfg.Provisioning.Duration)
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{
			name: "unknown key names key and line",
			yaml: "region: x\npagesize: 3\n",
			want: []string{`line 2: unknown key "pagesize"`},
		},
		{
			name: "unknown key inside an instance",
			yaml: "instances:\n  - id: i-1\n    zones: a\n",
			want: []string{`line 3: unknown key "zones"`},
		},
		{
			name: "wrong type",
			yaml: "pageSize: many\n",
			want: []string{"line 1", "many"},
		},
		{
			name: "not YAML",
			yaml: "region: [\n",
			want: []string{"not valid YAML"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fake.ParseConfig([]byte(tt.yaml))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := fake.Config{
		PageSize:     -1,
		Provisioning: fake.Provisioning{Reads: -2, Duration: -time.Second},
		AddressPools: fake.AddressPools{
			Public:   fake.Pool{IPv4: []string{"203.0.113.5/24", "2001:db8::/64", "nope"}},
			Internal: fake.Pool{IPv6: []string{"10.0.0.0/8"}},
		},
		Hostnames: fake.Hostnames{Domain: "LB.example.com"},
		Instances: []fake.Instance{
			{Name: "no-id"},
			{ID: "i-1", State: "sleeping"},
			{ID: "i-1", Addresses: []fake.Address{{Type: "PodIP", Address: "10.0.0.1"}, {Type: cloudapi.AddressInternalIP, Address: "node-a"}}},
		},
	}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"pageSize: -1 is negative",
		"provisioning.reads: -2 is negative",
		"provisioning.duration: -1s is negative",
		`addressPools.public.ipv4[0]: "203.0.113.5/24" has host bits set; write 203.0.113.0/24`,
		`addressPools.public.ipv4[1]: "2001:db8::/64" is not an ipv4 CIDR`,
		`addressPools.public.ipv4[2]: "nope" is not a CIDR`,
		`addressPools.internal.ipv6[0]: "10.0.0.0/8" is not an ipv6 CIDR`,
		`hostnames.domain: "LB.example.com" does not make DNS names of load balancers`,
		"instances[0].id: required",
		`instances[1].state: "sleeping" is not one of`,
		`instances[2].id: "i-1" is also the id of instances[1]`,
		`instances[2].addresses[0]: type "PodIP" is not one of`,
		`instances[2].addresses[1]: address "node-a" of type InternalIP is not an IP address`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = fake.New(cfg)
	require.Error(t, err, "New validates")
}

func TestHostnamesWithoutAddressesNeedADomain(t *testing.T) {
	cfg := fake.Config{Hostnames: fake.Hostnames{WithoutAddresses: true}}
	require.ErrorContains(t, cfg.Validate(), "hostnames.withoutAddresses: load balancers without addresses need hostnames: set hostnames.domain")
}

func TestZeroConfigIsAValidCloud(t *testing.T) {
	var cfg fake.Config
	require.NoError(t, cfg.Validate())
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	got := cloud.Config()
	assert.Equal(t, fake.DefaultRegion, got.Region)
	assert.Equal(t, fake.DefaultPageSize, got.PageSize)
	assert.Equal(t, fake.DefaultPublicIPv4, got.AddressPools.Public.IPv4)
	_, ok := cloud.LoadBalancers()
	assert.True(t, ok)
	_, ok = cloud.Routes()
	assert.True(t, ok)
}

func TestCapabilitiesOff(t *testing.T) {
	off := false
	cloud, err := fake.New(fake.Config{Capabilities: fake.Capabilities{LoadBalancers: &off, Routes: &off}})
	require.NoError(t, err)
	lbs, ok := cloud.LoadBalancers()
	assert.False(t, ok)
	assert.Nil(t, lbs)
	routes, ok := cloud.Routes()
	assert.False(t, ok)
	assert.Nil(t, routes)
	assert.NotNil(t, cloud.Instances())
}
