package fake_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// openCloud opens a cloud over the state file in cfg.
func openCloud(t testing.TB, cfg fake.Config, opts ...fake.Option) *fake.Cloud {
	t.Helper()
	c, err := fake.Open(cfg, opts...)
	require.NoError(t, err)
	return c
}

// stateDir returns a new directory for state files: in /dev/shm where it is a writable
// directory, so that the tests' many fsyncs cost nothing (what they check is what is in
// the file, not how fast a disk syncs), else in t.TempDir().
func stateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ccmkit-fake-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// stateConfig is a cloud with two instances and a small public IPv4 pool, kept in a state
// file in a new temporary directory.
func stateConfig(t testing.TB) fake.Config {
	return fake.Config{
		StateFile: filepath.Join(stateDir(t), "cloud-state.json"),
		AddressPools: fake.AddressPools{
			Public:   fake.Pool{IPv4: []string{"203.0.113.0/29"}, IPv6: []string{"2001:db8:1::/64"}},
			Internal: fake.Pool{IPv4: []string{"10.100.0.0/24"}, IPv6: []string{"fd00:100::/64"}},
		},
		Hostnames: fake.Hostnames{Domain: "lb.example.com"},
		Instances: instances(2),
	}
}

// fullSpec is a load balancer spec with every field set.
func fullSpec(name string) cloudapi.LoadBalancerSpec {
	return spec(name, func(s *cloudapi.LoadBalancerSpec) {
		s.Listeners = append(s.Listeners, cloudapi.Listener{Name: "dns", Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053})
		s.Targets = []string{"i-00001", "i-00000"}
		s.HealthCheck = &cloudapi.HealthCheck{
			Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz",
			Interval: 10 * time.Second, Timeout: 1500 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 3,
		}
		s.SourceRanges = []string{"192.0.2.0/24"}
		s.ProxyProtocol = true
		s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6, cloudapi.IPv4}
		s.RequestedIPs = []string{"10.100.0.9"}
		s.Internal = true
		s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTPS
		s.Listeners[0].Certificates = []string{"cert-1", "cert-2"}
		s.Listeners[0].HealthCheck = &cloudapi.HealthCheck{
			Protocol: cloudapi.HealthCheckHTTPS, Port: 8443, Path: "/ready",
			Interval: 5 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 1, UnhealthyThreshold: 2,
		}
		s.SessionAffinity = cloudapi.SessionAffinityCookie // on the HTTPS listener
		s.SessionAffinityTimeout = 3 * time.Hour
		s.SessionAffinityCookieName = "lb-sticky"
		s.SettingValues = map[string]string{"size": "large", "algorithm": "least-connections"}
	})
}

// requireEveryFieldSet fails when a field of v (a struct, through pointers and into the
// first element of slices) is zero: a field the state file does not keep would then go
// unnoticed by the round trip.
func requireEveryFieldSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		require.False(t, v.IsNil(), "%s is nil", path)
		requireEveryFieldSet(t, v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			requireEveryFieldSet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		require.Positive(t, v.Len(), "%s is empty", path)
		requireEveryFieldSet(t, v.Index(0), path+"[0]")
	default:
		require.False(t, v.IsZero(), "%s is zero", path)
	}
}

func TestStateFileRoundTrip(t *testing.T) {
	cfg := stateConfig(t)
	cfg.Provisioning = fake.Provisioning{Reads: 2}
	first := openCloud(t, cfg)
	ctx := t.Context()
	lbs, routes := lbAPI(t, first), routeAPI(t, first)

	full := fullSpec("full")
	checked := full
	checked.TargetGroup = "tg" // excludes Targets: TestStateFileKeepsTargetGroups keeps it
	requireEveryFieldSet(t, reflect.ValueOf(checked), "LoadBalancerSpec")
	lb1, err := lbs.CreateLoadBalancer(ctx, full)
	require.NoError(t, err)
	_, err = lbs.GetLoadBalancer(ctx, lb1.ID) // one of its two provisioning reads, saved with the next write
	require.NoError(t, err)
	lb2, err := lbs.CreateLoadBalancer(ctx, spec("second"))
	require.NoError(t, err)
	lb3, err := lbs.CreateLoadBalancer(ctx, spec("third"))
	require.NoError(t, err)
	// lb2 is read twice (active now), and its address is released by a delete after lb3
	// moved the cursor on: a new cloud would hand out lb2's address first.
	for range 3 {
		_, err = lbs.GetLoadBalancer(ctx, lb2.ID)
		require.NoError(t, err)
	}
	updated := spec("second-renamed", func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-00000"} })
	_, err = lbs.UpdateLoadBalancer(ctx, lb2.ID, cloudapi.LoadBalancerUpdate{Spec: updated})
	require.NoError(t, err)
	lb4, err := lbs.CreateLoadBalancer(ctx, spec("fourth"))
	require.NoError(t, err)
	require.NoError(t, lbs.DeleteLoadBalancer(ctx, lb4.ID))

	r1, err := routes.CreateRoute(ctx, cloudapi.RouteSpec{Name: "r", DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-00000", TargetAddress: "10.0.0.1",
		Tags: map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagNode: "node-00000"}})
	require.NoError(t, err)
	r2, err := routes.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "i-00001"})
	require.NoError(t, err)
	require.NoError(t, routes.DeleteRoute(ctx, r2.ID))

	require.NoError(t, first.SetInstanceState("i-00000", cloudapi.InstanceStopped))
	require.NoError(t, first.SetInstanceAddresses("i-00000", []cloudapi.Address{{Type: cloudapi.AddressExternalIP, Address: "198.51.100.7"}}))
	require.NoError(t, first.AddInstance(cloudapi.Instance{ID: "i-added", Name: "added", Zone: "z", Tags: map[string]string{"k": "v"}}))
	require.NoError(t, first.DeleteInstance("i-00001"))

	want := first.Inventory()
	second := openCloud(t, cfg)
	assert.Equal(t, want, second.Inventory(), "a cloud opened from the file is the cloud that wrote it")
	assert.Equal(t, first.Config(), second.Config())
	assert.Empty(t, second.Calls(), "call counts are not state")
	assert.Empty(t, second.LoadBalancerHistory(), "the history is this Cloud's own writes")

	got, err := lbAPI(t, second).GetLoadBalancer(ctx, lb1.ID)
	require.NoError(t, err)
	assert.Equal(t, full, got.Spec)
	assert.Equal(t, lb1.Addresses, got.Addresses)
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, got.Status, "lb1's second provisioning read")
	got, err = lbAPI(t, second).GetLoadBalancer(ctx, lb1.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, got.Status, "the read made before the restart counts: the file keeps it")
	got, err = lbAPI(t, second).GetLoadBalancer(ctx, lb2.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, got.Status)
	assert.Equal(t, updated, got.Spec)

	// The sequences and the pool cursor go on where the first cloud left them.
	lb5, err := lbAPI(t, second).CreateLoadBalancer(ctx, spec("fifth"))
	require.NoError(t, err)
	assert.Equal(t, "lb-000005", lb5.ID, "IDs are never reused")
	require.Equal(t, []string{"203.0.113.3"}, lb4.Addresses)
	assert.Equal(t, []string{"203.0.113.4"}, lb5.Addresses, "lb4's released address is not handed out again before the rest of the pool")
	assert.Equal(t, []string{"203.0.113.2"}, lb3.Addresses)
	r3, err := routeAPI(t, second).CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.2.0/24", TargetInstanceID: "i-00000"})
	require.NoError(t, err)
	assert.Equal(t, "r-000003", r3.ID)
	assert.Equal(t, "r-000001", r1.ID)

	// The first cloud reads the second's writes before its next call.
	_, err = lbAPI(t, first).GetLoadBalancer(ctx, lb5.ID)
	require.NoError(t, err)
	assert.Equal(t, second.Inventory(), first.Inventory())
}

// TestStateFileKeepsTargetGroups: the groups, their sequence and the load balancers that
// name them survive a restart; a file without groups has no key for them.
func TestStateFileKeepsTargetGroups(t *testing.T) {
	cfg := stateConfig(t)
	plain := openCloud(t, cfg)
	_, err := lbAPI(t, plain).CreateLoadBalancer(t.Context(), spec("plain"))
	require.NoError(t, err)
	data, err := os.ReadFile(cfg.StateFile)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "targetGroup", "no key for groups in a file without any")

	on := true
	cfg.Capabilities.TargetGroups = &on
	first := openCloud(t, cfg)
	groups, ok := first.TargetGroups()
	require.True(t, ok)
	ctx := t.Context()
	g1, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: "g1", Targets: []string{"i-00001", "i-00000"}, Tags: map[string]string{cloudapi.TagCluster: "c1"}})
	require.NoError(t, err)
	g2, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: "g2"})
	require.NoError(t, err)
	require.NoError(t, groups.DeleteTargetGroup(ctx, g2.ID))
	lb, err := lbAPI(t, first).CreateLoadBalancer(ctx, spec("grouped", func(s *cloudapi.LoadBalancerSpec) { s.Targets, s.TargetGroup = nil, g1.ID }))
	require.NoError(t, err)

	second := openCloud(t, cfg)
	assert.Equal(t, first.Inventory(), second.Inventory())
	got, err := lbAPI(t, second).GetLoadBalancer(ctx, lb.ID)
	require.NoError(t, err)
	assert.Equal(t, g1.ID, got.Spec.TargetGroup)
	assert.Equal(t, []string{"i-00000", "i-00001"}, second.Inventory().Targets(*got))
	groups, _ = second.TargetGroups()
	g3, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: "g3"})
	require.NoError(t, err)
	assert.Equal(t, "tg-000003", g3.ID, "IDs are never reused")
	err = groups.DeleteTargetGroup(ctx, g1.ID)
	assert.ErrorIs(t, err, cloudapi.ErrConflict, "the reopened cloud knows the load balancer names it")
}

func TestStateFileKeepsProvisioningTime(t *testing.T) {
	cfg := stateConfig(t)
	cfg.Provisioning = fake.Provisioning{Duration: time.Minute}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	lb, err := lbAPI(t, openCloud(t, cfg, fake.WithClock(clk))).CreateLoadBalancer(t.Context(), spec("web"))
	require.NoError(t, err)

	clk.SetTime(t0.Add(59 * time.Second))
	got, err := lbAPI(t, openCloud(t, cfg, fake.WithClock(clk))).GetLoadBalancer(t.Context(), lb.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerProvisioning, got.Status)
	clk.SetTime(t0.Add(time.Minute))
	got, err = lbAPI(t, openCloud(t, cfg, fake.WithClock(clk))).GetLoadBalancer(t.Context(), lb.ID)
	require.NoError(t, err)
	assert.Equal(t, cloudapi.LoadBalancerActive, got.Status, "provisioning is measured from the saved creation time")
}

func TestStateFileMissingIsANewCloudWrittenAtOnce(t *testing.T) {
	cfg := stateConfig(t)
	c := openCloud(t, cfg)
	data, err := os.ReadFile(cfg.StateFile)
	require.NoError(t, err, "Open writes a new cloud's state at once")
	var header struct {
		Kind    string `json:"kind"`
		Version int    `json:"version"`
	}
	require.NoError(t, json.Unmarshal(data, &header))
	assert.Equal(t, fake.StateFileKind, header.Kind)
	assert.Equal(t, fake.StateFileVersion, header.Version)
	assert.Len(t, c.Inventory().Instances, 2)

	cfg.StateFile = filepath.Join(t.TempDir(), "no-such-dir", "state.json")
	_, err = fake.Open(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its directory "+filepath.Dir(cfg.StateFile)+" does not exist")
}

func TestStateFileRelativePathIsFromTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := stateConfig(t)
	cfg.StateFile = "state.json"
	c := openCloud(t, cfg)
	_, err := lbAPI(t, c).CreateLoadBalancer(t.Context(), spec("web"))
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "state.json"))
	assert.Equal(t, "state.json", c.Config().StateFile, "Config reports the path as configured")
}

func TestNewRefusesAStateFile(t *testing.T) {
	_, err := fake.New(fake.Config{StateFile: "state.json"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `stateFile "state.json" is set: fake.Open keeps the cloud's state in it`)
	assert.NoFileExists(t, "state.json")
}

// writtenState returns a valid state file's content: a cloud with one load balancer.
func writtenState(t *testing.T) []byte {
	t.Helper()
	cfg := stateConfig(t)
	_, err := lbAPI(t, openCloud(t, cfg)).CreateLoadBalancer(t.Context(), spec("web"))
	require.NoError(t, err)
	data, err := os.ReadFile(cfg.StateFile)
	require.NoError(t, err)
	return data
}

func TestStateFileRefusesWhatItDidNotWrite(t *testing.T) {
	valid := string(writtenState(t))
	edit := func(old, new string) string {
		require.Contains(t, valid, old)
		return strings.Replace(valid, old, new, 1)
	}
	tests := []struct {
		name, content string
		want          string
	}{
		{"empty", "", "the file is empty"},
		{"blank", " \n\t\n", "the file is empty"},
		{"truncated", valid[:len(valid)/2], "ends in the middle of its JSON document (truncated?)"},
		{"cut after the first byte", valid[:1], "ends in the middle of its JSON document (truncated?)"},
		{"YAML", "kind: ccmkit.io/fake-cloud-state\nversion: 1\n", "the file is not JSON"},
		{"a cloud config", "backend: fake\nfake:\n  stateFile: x.json\n", "the file is not JSON"},
		{"JSON array", `[{"kind": "ccmkit.io/fake-cloud-state"}]`, "the file is JSON but not an object"},
		{"JSON string", `"ccmkit.io/fake-cloud-state"`, "the file is JSON but not an object"},
		{"another program's JSON", `{"name": "x", "items": [1, 2]}`, `the file has no "kind"`},
		{"a Kubernetes object", `{"apiVersion": "v1", "kind": "ConfigMap"}`, `the file's kind is "ConfigMap", not "ccmkit.io/fake-cloud-state"`},
		{"kind of another type", `{"kind": 7}`, `the file's "kind" is not what a fake cloud's state file has there`},
		{"no version", `{"kind": "ccmkit.io/fake-cloud-state"}`, `the file has no "version"`},
		{"future version", edit(`"version":1`, `"version":2`), "version 2 of the state file format, newer than the version 1 this ccmkit reads"},
		{"version zero", edit(`"version":1`, `"version":0`), "version 0 is not a version"},
		{"unknown field", edit(`"routeSeq"`, `"surprise":true,"routeSeq"`), `unknown field "surprise"`},
		{"two documents", valid + valid, "the file goes on after its JSON document"},
		{"an ID beyond its sequence", edit(`"loadBalancerSeq":1`, `"loadBalancerSeq":0`), `id "lb-000001" is not an unused lb-N with N at most loadBalancerSeq 0`},
		{"an address that is no IP", edit(`"addresses":["203.0.113.1"]`, `"addresses":["203.0.113.x"]`), `address "203.0.113.x" is not an IP address`},
		{"an unknown status", edit(`"status":"active"`, `"status":"gone"`), `status "gone" is neither provisioning nor active`},
		{"a cursor outside its prefix", edit(`"last":"203.0.113.1"`, `"last":"198.51.100.1"`), `"198.51.100.1" is not an IPv4 address in "203.0.113.0/29"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := stateConfig(t)
			require.NoError(t, os.WriteFile(cfg.StateFile, []byte(tt.content), 0o600))
			_, err := fake.Open(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "state file "+cfg.StateFile+": ", "the error names the file")
			assert.Contains(t, err.Error(), tt.want)
			after, err := os.ReadFile(cfg.StateFile)
			require.NoError(t, err)
			assert.Equal(t, tt.content, string(after), "a file the fake cannot read is never written over")
			assert.NoFileExists(t, cfg.StateFile+".tmp")
		})
	}

	t.Run("a directory", func(t *testing.T) {
		cfg := stateConfig(t)
		require.NoError(t, os.Mkdir(cfg.StateFile, 0o700))
		_, err := fake.Open(cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "state file "+cfg.StateFile+": not a regular file")
	})
}

func TestStateFileAppliesWhatTheConfigChanged(t *testing.T) {
	cfg := stateConfig(t)
	inst := func(id, zone string) fake.Instance { return fake.Instance{ID: id, Name: "node-" + id, Zone: zone} }
	cfg.Instances = []fake.Instance{inst("i-1", "a"), inst("i-2", "a"), inst("i-3", "a"), inst("i-5", "a")}
	first := openCloud(t, cfg)
	// Behind the client's back: i-1 stopped, i-2 deleted, i-9 added.
	require.NoError(t, first.SetInstanceState("i-1", cloudapi.InstanceStopped))
	require.NoError(t, first.DeleteInstance("i-2"))
	require.NoError(t, first.AddInstance(cloudapi.Instance{ID: "i-9"}))

	// The next start's config changes i-3, adds i-4 and drops i-5.
	cfg.Instances = []fake.Instance{inst("i-1", "a"), inst("i-2", "a"), inst("i-3", "b"), inst("i-4", "a")}
	second := openCloud(t, cfg)
	got := map[string]cloudapi.Instance{}
	for _, in := range second.Inventory().Instances {
		got[in.ID] = in
	}
	assert.Equal(t, []string{"i-1", "i-3", "i-4", "i-9"}, slices.Sorted(maps.Keys(got)))
	assert.Equal(t, cloudapi.InstanceStopped, got["i-1"].State, "a change behind the client's back stays when the config did not change the instance")
	assert.Equal(t, "b", got["i-3"].Zone, "the config's change applies")
	assert.Equal(t, cloudapi.InstanceRunning, got["i-4"].State)

	// The same config again changes nothing: i-2 stays deleted, i-1 stopped.
	third := openCloud(t, cfg)
	assert.Equal(t, second.Inventory(), third.Inventory())
}

func TestStateFileWriteThatCannotBeSavedIsNotAcknowledged(t *testing.T) {
	cfg := stateConfig(t)
	c := openCloud(t, cfg)
	ctx := t.Context()
	lbs, routes := lbAPI(t, c), routeAPI(t, c)
	web, err := lbs.CreateLoadBalancer(ctx, spec("web"))
	require.NoError(t, err)
	before := c.Inventory()
	saved, err := os.ReadFile(cfg.StateFile)
	require.NoError(t, err)

	// A directory where the temporary file goes: every save fails, also for root.
	tmp := cfg.StateFile + ".tmp"
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "blocker"), 0o700))
	failures := map[string]error{}
	_, failures["create"] = lbs.CreateLoadBalancer(ctx, spec("api"))
	_, failures["update"] = lbs.UpdateLoadBalancer(ctx, web.ID, cloudapi.LoadBalancerUpdate{Spec: spec("web", func(s *cloudapi.LoadBalancerSpec) { s.Targets = []string{"i-00000"} })})
	failures["delete"] = lbs.DeleteLoadBalancer(ctx, web.ID)
	_, failures["create route"] = routes.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.0.0/24", TargetInstanceID: "i-00000"})
	failures["set instance state"] = c.SetInstanceState("i-00000", cloudapi.InstanceStopped)
	failures["add instance"] = c.AddInstance(cloudapi.Instance{ID: "i-new"})
	failures["delete instance"] = c.DeleteInstance("i-00001")
	for what, err := range failures {
		require.ErrorIs(t, err, cloudapi.ErrTransient, what)
		assert.Contains(t, err.Error(), "saving state file "+cfg.StateFile, what)
	}
	assert.Equal(t, before, c.Inventory(), "no failed write left a trace")
	got, err := lbs.GetLoadBalancer(ctx, web.ID)
	require.NoError(t, err)
	assert.Equal(t, web.Spec, got.Spec)
	_, err = lbs.GetLoadBalancer(ctx, "lb-000002")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	after, err := os.ReadFile(cfg.StateFile)
	require.NoError(t, err)
	assert.Equal(t, saved, after)
	require.Len(t, c.LoadBalancerHistory(), 1, "only the acknowledged create is in the history")

	// Once saving works again, the next create is the one that failed would have been.
	require.NoError(t, os.RemoveAll(tmp))
	api, err := lbs.CreateLoadBalancer(ctx, spec("api"))
	require.NoError(t, err)
	assert.Equal(t, "lb-000002", api.ID)
	assert.Equal(t, []string{"203.0.113.2"}, api.Addresses, "the failed create's address was never handed out")
	assert.Equal(t, c.Inventory(), openCloud(t, cfg).Inventory())
}

func TestStateFileRemovedWhileInUse(t *testing.T) {
	cfg := stateConfig(t)
	c := openCloud(t, cfg)
	require.NoError(t, os.Remove(cfg.StateFile))
	_, err := lbAPI(t, c).CreateLoadBalancer(t.Context(), spec("web"))
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Contains(t, err.Error(), "state file "+cfg.StateFile+": removed while the cloud was using it")
	_, err = c.Instances().GetInstance(t.Context(), "i-00000")
	require.ErrorIs(t, err, cloudapi.ErrTransient, "not ErrNotFound: the cloud does not know")
	assert.NoFileExists(t, cfg.StateFile, "the cloud does not start over on its own")
}

func TestStateFileReplacedByGarbageWhileInUse(t *testing.T) {
	cfg := stateConfig(t)
	c := openCloud(t, cfg)
	require.NoError(t, os.WriteFile(cfg.StateFile+".new", []byte("{}"), 0o600))
	require.NoError(t, os.Rename(cfg.StateFile+".new", cfg.StateFile))
	_, err := c.Instances().ListInstances(t.Context(), cloudapi.ListOptions{})
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Contains(t, err.Error(), "state file "+cfg.StateFile+`: the file has no "kind"`)
}

func TestStateFileLeftoverTemporaryFileIsReplaced(t *testing.T) {
	cfg := stateConfig(t)
	c := openCloud(t, cfg)
	// A writer killed between writing its temporary file and renaming it.
	require.NoError(t, os.WriteFile(cfg.StateFile+".tmp", []byte(`{"kind": "half`), 0o600))
	assert.Len(t, openCloud(t, cfg).Inventory().Instances, 2, "the leftover is not the state")
	_, err := lbAPI(t, c).CreateLoadBalancer(t.Context(), spec("web"))
	require.NoError(t, err)
	assert.NoFileExists(t, cfg.StateFile+".tmp")
	assert.Len(t, openCloud(t, cfg).Inventory().LoadBalancers, 1)
}

// TestStateFileSharedByClouds writes concurrently through two Clouds over one file, as two
// processes sharing it would: every acknowledged write is in the file exactly once.
func TestStateFileSharedByClouds(t *testing.T) {
	cfg := stateConfig(t)
	cfg.AddressPools.Public.IPv4 = []string{"203.0.113.0/24"}
	clouds := []*fake.Cloud{openCloud(t, cfg), openCloud(t, cfg)}
	const n = 40
	var (
		mu      sync.Mutex
		created = map[string]string{} // ID → name
		deleted = map[string]bool{}
	)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := clouds[i%2]
			ctx := context.Background()
			lb, err := lbAPI(t, c).CreateLoadBalancer(ctx, spec(fmt.Sprint("lb-", i)))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			created[lb.ID] = lb.Spec.Name
			mu.Unlock()
			if i%3 == 0 {
				// Delete through the other cloud: it must see the create.
				if assert.NoError(t, lbAPI(t, clouds[(i+1)%2]).DeleteLoadBalancer(ctx, lb.ID)) {
					mu.Lock()
					deleted[lb.ID] = true
					mu.Unlock()
				}
			}
			_, err = routeAPI(t, c).CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i), TargetInstanceID: "i-00000"})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	require.Len(t, created, n, "every create got its own ID")
	inv := openCloud(t, cfg).Inventory()
	addrs := map[string]bool{}
	var live []string
	for _, lb := range inv.LoadBalancers {
		assert.Equal(t, created[lb.ID], lb.Spec.Name)
		assert.False(t, deleted[lb.ID], "%s was deleted", lb.ID)
		assert.False(t, addrs[lb.Addresses[0]], "address %s twice", lb.Addresses[0])
		addrs[lb.Addresses[0]] = true
		live = append(live, lb.ID)
	}
	assert.Len(t, live, n-len(deleted), "every acknowledged create is in the file, but the deleted ones")
	assert.Len(t, inv.Routes, n)
	assert.Equal(t, inv, clouds[0].Inventory())
	assert.Equal(t, inv, clouds[1].Inventory())
}

// TestStateFileSurvivesSIGKILL kills a process that writes the state file as fast as it
// can, at a different moment each time, then opens the file: it is whole and holds every
// load balancer the process reported created.
func TestStateFileSurvivesSIGKILL(t *testing.T) {
	if os.Getenv("FAKE_STATEFILE_WRITER") != "" {
		stateFileWriter()
		return
	}
	cfg := stateConfig(t)
	cfg.AddressPools.Public.IPv4 = []string{"203.0.0.0/16"}
	total := 0
	for round, killAfter := range []int{1, 7, 3, 12, 5} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStateFileSurvivesSIGKILL$")
		cmd.Env = append(os.Environ(), "FAKE_STATEFILE_WRITER="+cfg.StateFile, "FAKE_STATEFILE_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var acked []string
		lines := bufio.NewScanner(out)
		for len(acked) < killAfter && lines.Scan() {
			if id, ok := strings.CutPrefix(lines.Text(), "created "); ok {
				acked = append(acked, id)
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.Len(t, acked, killAfter, "the writer reported its creates")

		inv := openCloud(t, cfg).Inventory()
		have := map[string]bool{}
		for _, lb := range inv.LoadBalancers {
			have[lb.ID] = true
		}
		for _, id := range acked {
			assert.True(t, have[id], "round %d: %s was acknowledged before the kill", round, id)
		}
		assert.GreaterOrEqual(t, len(inv.LoadBalancers), total+killAfter)
		total = len(inv.LoadBalancers)
	}
}

// stateFileWriter is the child process of TestStateFileSurvivesSIGKILL: it creates load
// balancers until it is killed, printing each ID once the create returned.
func stateFileWriter() {
	cfg := fake.Config{StateFile: os.Getenv("FAKE_STATEFILE_WRITER"), AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"203.0.0.0/16"}}}, Instances: instances(2)}
	c, err := fake.Open(cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	api, _ := c.LoadBalancers()
	for i := 0; ; i++ {
		lb, err := api.CreateLoadBalancer(context.Background(), spec(fmt.Sprintf("r%s-%d", os.Getenv("FAKE_STATEFILE_ROUND"), i)))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("created", lb.ID)
	}
}

// TestStateFileBehindASymbolicLink: a link (or a chain of them) to a state file is
// followed, and every write replaces the file it names, never the link; a link that names
// no file is refused, never a new cloud written through it or over it.
func TestStateFileBehindASymbolicLink(t *testing.T) {
	requireLink := func(t *testing.T, path, target string) {
		t.Helper()
		info, err := os.Lstat(path)
		require.NoError(t, err)
		require.NotZero(t, info.Mode()&fs.ModeSymlink, "%s is still a symbolic link", path)
		got, err := os.Readlink(path)
		require.NoError(t, err)
		assert.Equal(t, target, got)
	}
	for _, tc := range []struct {
		name string
		// links makes the links in dir to the state file target and returns the path to
		// open.
		links func(t *testing.T, dir, target string) string
	}{
		{"one link", func(t *testing.T, dir, target string) string {
			require.NoError(t, os.Symlink(target, filepath.Join(dir, "link.json")))
			return filepath.Join(dir, "link.json")
		}},
		{"a chain of links", func(t *testing.T, dir, target string) string {
			require.NoError(t, os.Symlink(target, filepath.Join(dir, "link1.json")))
			require.NoError(t, os.Symlink("link1.json", filepath.Join(dir, "link2.json")))
			return filepath.Join(dir, "link2.json")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := stateConfig(t)
			target := cfg.StateFile
			openCloud(t, cfg) // the state file
			cfg.StateFile = tc.links(t, filepath.Dir(target), target)
			linked, err := os.Readlink(cfg.StateFile)
			require.NoError(t, err)
			c := openCloud(t, cfg)
			_, err = lbAPI(t, c).CreateLoadBalancer(t.Context(), spec("web"))
			require.NoError(t, err)
			requireLink(t, cfg.StateFile, linked)
			cfg.StateFile = target
			assert.Len(t, openCloud(t, cfg).Inventory().LoadBalancers, 1, "the write went to the file the link names")
		})
	}

	t.Run("a link that names no file", func(t *testing.T) {
		dir := stateDir(t)
		target := filepath.Join(dir, "volume", "cloud-state.json") // a volume not mounted
		link := filepath.Join(dir, "cloud-state.json")
		require.NoError(t, os.Symlink(target, link))
		cfg := stateConfig(t)
		cfg.StateFile = link
		_, err := fake.Open(cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "state file "+link+": a symbolic link to "+target+", which names no file")
		requireLink(t, link, target)

		require.NoError(t, os.Mkdir(filepath.Join(dir, "volume"), 0o700)) // the mount point, empty
		_, err = fake.Open(cfg)
		require.Error(t, err, "not a new cloud in the empty mount point")
		requireLink(t, link, target)
		assert.NoFileExists(t, target)
	})

	t.Run("a link put at the path while in use", func(t *testing.T) {
		cfg := stateConfig(t)
		c := openCloud(t, cfg)
		elsewhere := cfg.StateFile + ".elsewhere"
		require.NoError(t, os.Rename(cfg.StateFile, elsewhere))
		require.NoError(t, os.Symlink(elsewhere, cfg.StateFile))
		_, err := lbAPI(t, c).CreateLoadBalancer(t.Context(), spec("web"))
		require.ErrorIs(t, err, cloudapi.ErrTransient)
		assert.Contains(t, err.Error(), cfg.StateFile+" became a symbolic link since the cloud opened it")
		requireLink(t, cfg.StateFile, elsewhere)
	})
}
