package instances

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/providerid"
)

// lookup is a Lookup over a fixed set of instances; err, when set, is what every lookup
// answers.
type lookup struct {
	byID map[string]*cloudapi.Instance
	err  error
}

func (l *lookup) ByID(_ context.Context, id string) (*cloudapi.Instance, error) {
	if l.err != nil {
		return nil, l.err
	}
	if inst, ok := l.byID[id]; ok {
		return inst, nil
	}
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, nil)
}

func (l *lookup) ByName(_ context.Context, name string) (*cloudapi.Instance, error) {
	if l.err != nil {
		return nil, l.err
	}
	for _, inst := range l.byID {
		if inst.Name == name {
			return inst, nil
		}
	}
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpListInstances, "", nil)
}

func newLookup(insts ...cloudapi.Instance) *lookup {
	l := &lookup{byID: map[string]*cloudapi.Instance{}}
	for i := range insts {
		l.byID[insts[i].ID] = &insts[i]
	}
	return l
}

func instance(id string, state cloudapi.InstanceState, addrs ...cloudapi.Address) cloudapi.Instance {
	return cloudapi.Instance{ID: id, Name: "node-" + id, Type: "m5.large", Zone: "eu-1a", Region: "eu-1", State: state, Addresses: addrs}
}

type nodeTweak func(*corev1.Node)

func newNode(name string, tweaks ...nodeTweak) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, t := range tweaks {
		t(n)
	}
	return n
}

func withProviderID(id string) nodeTweak { return func(n *corev1.Node) { n.Spec.ProviderID = id } }

func withProvidedIP(ip string) nodeTweak {
	return func(n *corev1.Node) {
		n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: ip}
	}
}

func newInstances(t *testing.T, l Lookup, tweak func(*Options)) *Instances {
	t.Helper()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	opts := Options{ProviderID: format}
	if tweak != nil {
		tweak(&opts)
	}
	i, err := New(l, opts)
	require.NoError(t, err)
	return i
}

func TestExistsAndShutdownTable(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", errors.New("503"))
	tests := []struct {
		name         string
		state        cloudapi.InstanceState
		lookupErr    error
		providerID   string
		wantExists   bool
		wantShutdown bool
		wantErr      error // matched with errors.Is, for both calls
		shutdownErr  error // exact (==) for the sentinel
	}{
		{name: "running", state: cloudapi.InstanceRunning, wantExists: true},
		{name: "pending", state: cloudapi.InstancePending, wantExists: true},
		{name: "stopping", state: cloudapi.InstanceStopping, wantExists: true},
		{name: "unknown", state: cloudapi.InstanceUnknown, wantExists: true},
		{name: "stopped", state: cloudapi.InstanceStopped, wantExists: true, wantShutdown: true},
		{name: "terminating", state: cloudapi.InstanceTerminating, wantExists: true, wantShutdown: true},
		{name: "terminated", state: cloudapi.InstanceTerminated, wantExists: false, shutdownErr: cloudprovider.InstanceNotFound},
		{name: "not found", providerID: "ccmkit://i-other", wantExists: false, shutdownErr: cloudprovider.InstanceNotFound},
		{name: "transient error is not gone", lookupErr: transient, wantErr: cloudapi.ErrTransient},
		{name: "throttled is not gone", lookupErr: cloudapi.Throttled(cloudapi.OpListInstances, 0, nil), wantErr: cloudapi.ErrThrottled},
		{name: "deadline is not gone", lookupErr: context.DeadlineExceeded, wantErr: context.DeadlineExceeded},
		{name: "foreign provider ID is not gone", providerID: "aws:///eu-1a/i-1", wantErr: providerid.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLookup(instance("i-1", tt.state))
			l.err = tt.lookupErr
			inst := newInstances(t, l, nil)
			pid := tt.providerID
			if pid == "" {
				pid = "ccmkit://i-1"
			}
			node := newNode("node-i-1", withProviderID(pid))

			exists, err := inst.InstanceExists(context.Background(), node)
			shutdown, shutdownErr := inst.InstanceShutdown(context.Background(), node)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, shutdownErr, tt.wantErr)
				assert.False(t, exists)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantExists, exists)
			if tt.shutdownErr != nil {
				assert.Equal(t, tt.shutdownErr, shutdownErr, "returned unwrapped: upstream compares with ==")
				return
			}
			require.NoError(t, shutdownErr)
			assert.Equal(t, tt.wantShutdown, shutdown)
		})
	}
}

func TestLookupByNameWithoutProviderID(t *testing.T) {
	inst := newInstances(t, newLookup(instance("i-7", cloudapi.InstanceRunning)), nil)
	md, err := inst.InstanceMetadata(context.Background(), newNode("node-i-7"))
	require.NoError(t, err)
	assert.Equal(t, "ccmkit://i-7", md.ProviderID)
	exists, err := inst.InstanceExists(context.Background(), newNode("node-nobody"))
	require.NoError(t, err)
	assert.False(t, exists)
}

func TestInstanceMetadata(t *testing.T) {
	a := func(t cloudapi.AddressType, s string) cloudapi.Address { return cloudapi.Address{Type: t, Address: s} }
	dual := instance("i-1", cloudapi.InstanceRunning,
		a(cloudapi.AddressHostname, "node-i-1"),
		a(cloudapi.AddressExternalIP, "2001:db8::1"),
		a(cloudapi.AddressInternalIP, "fd00::1"),
		a(cloudapi.AddressExternalIP, "203.0.113.1"),
		a(cloudapi.AddressInternalIP, "10.0.0.1"),
		a(cloudapi.AddressInternalDNS, "node-i-1.internal"),
		a(cloudapi.AddressInternalIP, "10.0.0.2"),
	)
	na := func(t corev1.NodeAddressType, s string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: t, Address: s}
	}
	tests := []struct {
		name     string
		families []cloudapi.IPFamily
		node     *corev1.Node
		want     []corev1.NodeAddress
		wantErr  string
	}{
		{
			name: "IPv4 primary",
			node: newNode("node-i-1", withProviderID("ccmkit://i-1")),
			want: []corev1.NodeAddress{
				na(corev1.NodeInternalIP, "10.0.0.1"), na(corev1.NodeInternalIP, "10.0.0.2"), na(corev1.NodeInternalIP, "fd00::1"),
				na(corev1.NodeExternalIP, "203.0.113.1"), na(corev1.NodeExternalIP, "2001:db8::1"),
				na(corev1.NodeInternalDNS, "node-i-1.internal"), na(corev1.NodeHostName, "node-i-1"),
			},
		},
		{
			name:     "IPv6 primary",
			families: []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4},
			node:     newNode("node-i-1", withProviderID("ccmkit://i-1")),
			want: []corev1.NodeAddress{
				na(corev1.NodeInternalIP, "fd00::1"), na(corev1.NodeInternalIP, "10.0.0.1"), na(corev1.NodeInternalIP, "10.0.0.2"),
				na(corev1.NodeExternalIP, "2001:db8::1"), na(corev1.NodeExternalIP, "203.0.113.1"),
				na(corev1.NodeInternalDNS, "node-i-1.internal"), na(corev1.NodeHostName, "node-i-1"),
			},
		},
		{
			name: "provided node IP first",
			node: newNode("node-i-1", withProviderID("ccmkit://i-1"), withProvidedIP("10.0.0.2")),
			want: []corev1.NodeAddress{
				na(corev1.NodeInternalIP, "10.0.0.2"), na(corev1.NodeInternalIP, "10.0.0.1"), na(corev1.NodeInternalIP, "fd00::1"),
				na(corev1.NodeExternalIP, "203.0.113.1"), na(corev1.NodeExternalIP, "2001:db8::1"),
				na(corev1.NodeInternalDNS, "node-i-1.internal"), na(corev1.NodeHostName, "node-i-1"),
			},
		},
		{
			name: "dual-stack provided node IPs",
			node: newNode("node-i-1", withProviderID("ccmkit://i-1"), withProvidedIP("fd00::1,10.0.0.2")),
			want: []corev1.NodeAddress{
				na(corev1.NodeInternalIP, "fd00::1"), na(corev1.NodeInternalIP, "10.0.0.2"), na(corev1.NodeInternalIP, "10.0.0.1"),
				na(corev1.NodeExternalIP, "203.0.113.1"), na(corev1.NodeExternalIP, "2001:db8::1"),
				na(corev1.NodeInternalDNS, "node-i-1.internal"), na(corev1.NodeHostName, "node-i-1"),
			},
		},
		{
			name:    "provided node IP the cloud does not have",
			node:    newNode("node-i-1", withProviderID("ccmkit://i-1"), withProvidedIP("10.9.9.9")),
			wantErr: `the Node's alpha.kubernetes.io/provided-node-ip annotation asks for 10.9.9.9, but instance "i-1" has only [10.0.0.1, 10.0.0.2, fd00::1, 203.0.113.1, 2001:db8::1]`,
		},
		{
			name:    "provided node IP malformed",
			node:    newNode("node-i-1", withProviderID("ccmkit://i-1"), withProvidedIP("ten")),
			wantErr: `annotation alpha.kubernetes.io/provided-node-ip="ten": "ten" is not an IP address`,
		},
		{
			name: "provided node IP of 10 KB: quoted in part",
			node: newNode("node-i-1", withProviderID("ccmkit://i-1"), withProvidedIP(strings.Repeat("x", 10240))),
			wantErr: `annotation alpha.kubernetes.io/provided-node-ip="` + strings.Repeat("x", 128) + `"… (10240 bytes): "` +
				strings.Repeat("x", 128) + `"… (10240 bytes) is not an IP address`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := newInstances(t, newLookup(dual), func(o *Options) {
				o.IPFamilies = tt.families
				o.AdditionalLabels = map[string]string{"example.com/pool": "general"}
			})
			md, err := inst.InstanceMetadata(context.Background(), tt.node)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Nil(t, md)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, md)
			assert.Equal(t, "ccmkit://i-1", md.ProviderID)
			assert.Equal(t, "m5.large", md.InstanceType)
			assert.Equal(t, "eu-1a", md.Zone)
			assert.Equal(t, "eu-1", md.Region)
			assert.Equal(t, map[string]string{"example.com/pool": "general"}, md.AdditionalLabels)
			assert.Equal(t, tt.want, md.NodeAddresses)
		})
	}
}

// TestLabelsFromTags is the table of instance tags and the Node labels InstanceMetadata
// reports for them, with what is logged for a tag that cannot be a label.
func TestLabelsFromTags(t *testing.T) {
	mapping := map[string]string{"team": "example.com/team", "cost-center": "example.com/cost-center", "Tier": "tier"}
	tests := []struct {
		name       string
		tags       map[string]string
		additional map[string]string
		want       map[string]string
		wantLogged []string // the tags whose values were skipped, in order
	}{
		{name: "no tags", want: nil},
		{name: "unmapped tags only", tags: map[string]string{"Name": "web-1", "env": "prod"}, want: nil},
		{
			name: "every mapped tag",
			tags: map[string]string{"team": "web", "cost-center": "cc-42", "Tier": "front", "env": "prod"},
			want: map[string]string{"example.com/team": "web", "example.com/cost-center": "cc-42", "tier": "front"},
		},
		{
			name: "tag keys are case-sensitive",
			tags: map[string]string{"Team": "web", "tier": "front"},
			want: nil,
		},
		{name: "an empty value is a label value", tags: map[string]string{"team": ""}, want: map[string]string{"example.com/team": ""}},
		{
			name:       "with the additional labels",
			tags:       map[string]string{"team": "web"},
			additional: map[string]string{"example.com/pool": "general"},
			want:       map[string]string{"example.com/pool": "general", "example.com/team": "web"},
		},
		{
			name:       "invalid values are skipped and logged, the rest kept",
			tags:       map[string]string{"team": "Web Team", "cost-center": strings.Repeat("x", 64), "Tier": "front"},
			want:       map[string]string{"tier": "front"},
			wantLogged: []string{"cost-center", "team"},
		},
		{
			name:       "an invalid value alone leaves the additional labels",
			tags:       map[string]string{"team": "-web"},
			additional: map[string]string{"example.com/pool": "general"},
			want:       map[string]string{"example.com/pool": "general"},
			wantLogged: []string{"team"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := instance("i-1", cloudapi.InstanceRunning)
			in.Tags = tt.tags
			inst := newInstances(t, newLookup(in), func(o *Options) {
				o.LabelsFromTags = mapping
				o.AdditionalLabels = tt.additional
			})
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx := klog.NewContext(context.Background(), logger)
			md, err := inst.InstanceMetadata(ctx, newNode("node-i-1", withProviderID("ccmkit://i-1")))
			require.NoError(t, err, "a bad tag never fails initialization")
			assert.Equal(t, tt.want, md.AdditionalLabels)

			var logged []string
			for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
				kv := map[string]any{}
				for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
					kv[e.ParameterKVList[i].(string)] = e.ParameterKVList[i+1]
				}
				require.Equal(t, ktesting.LogInfo, e.Type)
				assert.Equal(t, 0, e.Verbosity, "seen at the default verbosity")
				assert.Equal(t, "i-1", kv["instance"])
				assert.Equal(t, tt.tags[kv["tag"].(string)], kv["value"])
				assert.Equal(t, mapping[kv["tag"].(string)], kv["label"])
				assert.NotEmpty(t, kv["reason"])
				logged = append(logged, kv["tag"].(string))
			}
			assert.Equal(t, tt.wantLogged, logged)

			if tt.additional != nil {
				md.AdditionalLabels["example.com/pool"] = "changed"
				assert.Equal(t, "general", tt.additional["example.com/pool"], "the caller's map is a copy")
			}
		})
	}
}

func TestInstanceMetadataErrors(t *testing.T) {
	// An address the Node's status cannot hold is an error naming the instance and the
	// value (cut to a bound), never published, never dropped.
	for _, tc := range []struct {
		addr     cloudapi.Address
		wantErr  string
		wantCaps int // the error's length is at most this
	}{
		{cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: "10.0.0.300"}, `InternalIP address "10.0.0.300" is not an IP address a Node's status can hold: must be a valid IP address`, 300},
		{cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: "fe80::1%eth0"}, `InternalIP address "fe80::1%eth0" is not an IP address a Node's status can hold: must be a valid IP address`, 300},
		{cloudapi.Address{Type: cloudapi.AddressExternalIP, Address: "::ffff:203.0.113.7"}, `ExternalIP address "::ffff:203.0.113.7" is not an IP address a Node's status can hold: must not be an IPv4-mapped IPv6 address`, 300},
		{cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: ""}, `InternalIP address "" is not an IP address`, 300},
		{cloudapi.Address{Type: cloudapi.AddressExternalIP, Address: strings.Repeat("1", 10_000)}, `ExternalIP address "` + strings.Repeat("1", 128) + `"… (10000 bytes) is not an IP address`, 500},
	} {
		t.Run(tc.addr.Address[:min(len(tc.addr.Address), 20)], func(t *testing.T) {
			broken := instance("i-1", cloudapi.InstanceRunning, cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}, tc.addr)
			inst := newInstances(t, newLookup(broken), nil)
			md, err := inst.InstanceMetadata(context.Background(), newNode("x", withProviderID("ccmkit://i-1")))
			require.Error(t, err)
			assert.Nil(t, md)
			assert.Contains(t, err.Error(), `instance "i-1": `+tc.wantErr)
			assert.LessOrEqual(t, len(err.Error()), tc.wantCaps)
			_, err = inst.NodeAddressesByProviderID(context.Background(), "ccmkit://i-1")
			require.ErrorContains(t, err, tc.wantErr, "the legacy interface too")
		})
	}
	inst := newInstances(t, newLookup(instance("i-1", cloudapi.InstanceRunning)), nil)
	var md *cloudprovider.InstanceMetadata
	var err error

	md, err = inst.InstanceMetadata(context.Background(), newNode("x", withProviderID("ccmkit://i-2")))
	assert.Nil(t, md)
	assert.Equal(t, cloudprovider.InstanceNotFound, err, "unwrapped")

	l := newLookup()
	l.err = fmt.Errorf("listing: %w", cloudapi.ErrTransient)
	md, err = newInstances(t, l, nil).InstanceMetadata(context.Background(), newNode("x"))
	assert.Nil(t, md)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotEqual(t, cloudprovider.InstanceNotFound, err)

	_, err = inst.InstanceExists(context.Background(), nil)
	assert.Error(t, err, "a nil Node is an error, not a panic")
}

func TestRegionFallbackAndTemplate(t *testing.T) {
	in := instance("i-1", cloudapi.InstanceRunning)
	in.Region = ""
	format, err := providerid.Compile("aws:///{zone}/{id}")
	require.NoError(t, err)
	inst := newInstances(t, newLookup(in), func(o *Options) { o.ProviderID = format; o.Region = "eu-default" })
	md, err := inst.InstanceMetadata(context.Background(), newNode("x", withProviderID("aws:///eu-1a/i-1")))
	require.NoError(t, err)
	assert.Equal(t, "eu-default", md.Region)
	assert.Equal(t, "aws:///eu-1a/i-1", md.ProviderID)
}

func TestNewValidates(t *testing.T) {
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	_, err = New(nil, Options{})
	assert.ErrorContains(t, err, "a provider ID format is required")
	assert.ErrorContains(t, err, "an instance lookup is required")
	_, err = New(newLookup(), Options{ProviderID: format, AdditionalLabels: map[string]string{
		"node.kubernetes.io/x": "a", "k8s.io/y": "b", "example.com/ok": "c", "plain": "d", "example.com/v": "bad value!",
	}, LabelsFromTags: map[string]string{
		"zone": "topology.kubernetes.io/zone", "team": "example.com/team", "owner": "example.com/team", "pool": "plain", "fine": "example.com/fine",
	}, IPFamilies: []cloudapi.IPFamily{"IPv5"}})
	require.Error(t, err)
	assert.Equal(t, []string{
		`instances: AdditionalLabels: value of "example.com/v": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		`instances: AdditionalLabels: key "k8s.io/y": it is under k8s.io, which Kubernetes reserves: use a prefix of your own`,
		`instances: AdditionalLabels: key "node.kubernetes.io/x": it is under kubernetes.io, which Kubernetes reserves: use a prefix of your own`,
		`instances: LabelsFromTags: label "plain" of tag "pool" is an additional label too: set it in one place`,
		`instances: LabelsFromTags: tags "owner" and "team" both map to label "example.com/team": map each label from one tag`,
		`instances: LabelsFromTags: label key "topology.kubernetes.io/zone" of tag "zone": it is under kubernetes.io, which Kubernetes reserves: use a prefix of your own`,
		`instances: IP family "IPv5" is neither IPv4 nor IPv6`,
	}, strings.Split(err.Error(), "\n"), "every problem at once, the valid ones not named")
}

func TestLegacyInstances(t *testing.T) {
	ctx := context.Background()
	inst := newInstances(t, newLookup(
		instance("i-1", cloudapi.InstanceStopped, cloudapi.Address{Type: cloudapi.AddressInternalIP, Address: "10.0.0.1"}),
		instance("i-2", cloudapi.InstanceTerminated),
	), nil)
	id, err := inst.InstanceID(ctx, "node-i-1")
	require.NoError(t, err)
	assert.Equal(t, "i-1", id)
	typ, err := inst.InstanceTypeByProviderID(ctx, "ccmkit://i-1")
	require.NoError(t, err)
	assert.Equal(t, "m5.large", typ)
	typ, err = inst.InstanceType(ctx, "node-i-1")
	require.NoError(t, err)
	assert.Equal(t, "m5.large", typ)
	addrs, err := inst.NodeAddresses(ctx, "node-i-1")
	require.NoError(t, err)
	assert.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}, addrs)
	addrs, err = inst.NodeAddressesByProviderID(ctx, "ccmkit://i-1")
	require.NoError(t, err)
	assert.Len(t, addrs, 1)
	shut, err := inst.InstanceShutdownByProviderID(ctx, "ccmkit://i-1")
	require.NoError(t, err)
	assert.True(t, shut)
	exists, err := inst.InstanceExistsByProviderID(ctx, "ccmkit://i-2")
	require.NoError(t, err)
	assert.False(t, exists, "terminated")
	_, err = inst.InstanceID(ctx, "node-i-2")
	assert.Equal(t, cloudprovider.InstanceNotFound, err)
	_, err = inst.InstanceID(ctx, "nobody")
	assert.Equal(t, cloudprovider.InstanceNotFound, err)
	assert.Equal(t, cloudprovider.NotImplemented, inst.AddSSHKeyToAllInstances(ctx, "u", nil))
	name, err := inst.CurrentNodeName(ctx, "host-1")
	require.NoError(t, err)
	assert.EqualValues(t, "host-1", name)
}
