package harness

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/bench/baseline"
	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// kind names a provider over ccmkit's fake cloud.
type kind string

const (
	kindCcmkit   kind = "ccmkit"
	kindBaseline kind = "baseline"
	// kindCcmkitGroups is ccmkit over a fake cloud that offers target groups
	// (cloudapi.TargetGroupClient), which ccmkit uses by default: node_add_groups' world.
	kindCcmkitGroups kind = "ccmkit+groups"
)

// fakeColumn is ccmkit or the baseline over ccmkit's fake cloud, whose per-operation
// counters count the calls.
type fakeColumn struct{ kind kind }

func (c fakeColumn) Name() string { return string(c.kind) }

// NewCloud returns the fake cloud with the world's instances, behind a tap.
func (c fakeColumn) NewCloud(cfg CloudConfig) (Cloud, error) {
	fc := fakecloud.Config{
		Region:   Region,
		PageSize: cfg.PageSize,
		// The benchmarking range (RFC 2544): the default pools hold about 500 addresses.
		AddressPools: fakecloud.AddressPools{Public: fakecloud.Pool{IPv4: []string{"198.18.0.0/15"}}},
	}
	if c.kind == kindCcmkitGroups {
		// From the start: the load balancers are created in their groups.
		on := true
		fc.Capabilities.TargetGroups = &on
	}
	for i := range cfg.Nodes {
		fc.Instances = append(fc.Instances, fakeInstance(i))
	}
	cloud, err := fakecloud.New(fc)
	if err != nil {
		return nil, err
	}
	return &fakeCloud{col: c, api: cfg.CloudAPI, cloud: cloud, tap: newTap(cloud)}, nil
}

func instanceID(i int) string { return fmt.Sprintf("i-%05d", i) }

func fakeInstance(i int) fakecloud.Instance {
	wi := WorldInstance(i)
	return fakecloud.Instance{
		ID: instanceID(i), Name: fmt.Sprintf("node-%05d", i), Type: "bench.large", Zone: wi.Zone, Region: wi.Region,
		Addresses: []fakecloud.Address{{Type: cloudapi.AddressInternalIP, Address: wi.PrivateIP}},
	}
}

// fakeCloud is a fakeColumn's cloud.
type fakeCloud struct {
	col   fakeColumn
	api   provider.CloudAPIConfig // ccmkit's
	cloud *fakecloud.Cloud
	tap   *tap
}

var _ Cloud = (*fakeCloud)(nil)

func (c *fakeCloud) NewProvider(clock *clocktesting.FakeClock) (cloudprovider.Interface, error) {
	switch c.col.kind {
	case kindCcmkit, kindCcmkitGroups: // loadBalancer.targetGroups is on by default
		enable := true
		return provider.New(provider.Config{
			Cluster:  provider.ClusterConfig{ID: clusterID},
			CloudAPI: c.api,
			Enable:   provider.EnableConfig{Routes: &enable},
		}, c.tap, provider.Options{Metrics: metrics.NewKubeRegistry(), Clock: clock, LoadBalancerSettings: adapterSettings})
	case kindBaseline:
		return baseline.New(c.tap, baseline.Options{ClusterID: clusterID})
	}
	return nil, fmt.Errorf("unknown provider kind %q", c.col.kind)
}

func (c *fakeCloud) NodeName(i int) string { return fakeInstance(i).Name }

func (c *fakeCloud) ProviderID(i int) string {
	if c.col.kind == kindBaseline {
		return baseline.DefaultProviderName + "://" + instanceID(i)
	}
	return provider.DefaultProviderName + "://" + instanceID(i)
}

// Calls returns the fake cloud's counters.
func (c *fakeCloud) Calls() Calls { return fakeCalls(c.cloud.Calls()) }

func fakeCalls(fc fakecloud.Calls) Calls {
	out := Calls{}
	for op, n := range fc {
		out[fakeOp(op)] = n
	}
	return out
}

func fakeOp(op cloudapi.Operation) Op {
	return Op{Name: string(op), Write: op.IsWrite(), Instance: op == cloudapi.OpListInstances || op == cloudapi.OpGetInstance}
}

func (c *fakeCloud) AddInstance(i int) error {
	fi := fakeInstance(i)
	inst := cloudapi.Instance{ID: fi.ID, Name: fi.Name, Type: fi.Type, Zone: fi.Zone, Region: fi.Region, State: cloudapi.InstanceRunning}
	for _, a := range fi.Addresses {
		inst.Addresses = append(inst.Addresses, cloudapi.Address{Type: a.Type, Address: a.Address})
	}
	return c.cloud.AddInstance(inst)
}

func (c *fakeCloud) RemoveInstance(i int) error { return c.cloud.DeleteInstance(instanceID(i)) }

func (c *fakeCloud) SetLatency(d time.Duration) { c.tap.setLatency(d) }

// Watch watches the tap for writes that reach instance i, or no longer do, through the
// load balancer's own targets or the target group it names (as the cloud holds them now).
func (c *fakeCloud) Watch(i, want int, removed bool) <-chan struct{} {
	lbGroups := map[string]string{}
	for _, lb := range c.cloud.Inventory().LoadBalancers {
		if lb.Spec.TargetGroup != "" {
			lbGroups[lb.ID] = lb.Spec.TargetGroup
		}
	}
	return c.tap.watch(instanceID(i), want, removed, lbGroups)
}

func (c *fakeCloud) Reaching(i int) (int, error) {
	inv := c.cloud.Inventory()
	n := 0
	for _, lb := range inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: clusterID}) {
		if slices.Contains(inv.Targets(lb), instanceID(i)) {
			n++
		}
	}
	return n, nil
}

// checkSettings checks that ccmkit applied the adapter setting of settingsService to its
// load balancer.
func (c *fakeCloud) checkSettings(svc *corev1.Service) error {
	if !slices.ContainsFunc(c.cloud.Inventory().LoadBalancers, func(lb cloudapi.LoadBalancer) bool {
		return lb.Spec.Tags[cloudapi.TagService] == string(svc.UID) && lb.Spec.SettingValues["size"] == "large"
	}) {
		return errors.New("the load balancer of a Service with every setting lacks its adapter setting size=large")
	}
	return nil
}

// Why says why the baseline is lower than ccmkit in a figure.
func (c fakeColumn) Why(key string) string {
	if c.kind != kindBaseline {
		return ""
	}
	switch key {
	case "P5":
		return "it keeps nothing between calls (no instance snapshot, no load balancer snapshot), and pays for it in calls (P1, P4); to win it ccmkit would drop the snapshots that make its calls few, a trade it does not make"
	case "P6_allocs", "P6_settings_allocs":
		return "it builds no desired load balancer to compare with the cloud's: it writes what it read back whole, one write per call (P2_ensure_writes); to win it ccmkit would compare the Service with the cloud's load balancer field by field, a second comparison beside the one every write is planned from"
	case "P6", "P6_cpu", "P6_sorted_nodes", "P6_settings":
		return "its call is one read and one whole write of the load balancer, which cost nothing in memory; ccmkit builds the desired load balancer and compares it, to write nothing (over a cloud, the baseline's write is a request: P2_ensure_writes)"
	case "node_add_seconds", "node_add_groups_seconds":
		return "wall time of a tenth of a second at 1,000 Nodes, as large as its run-to-run noise, most of it the upstream service controller's own (for a Node added it syncs every Service twice, at the Node's registration, without a provider ID, and at its initialization, and lists and compares each Service's N Nodes each time); the providers' share is alike: the fake cloud's check of each write's whole target list weighs as much as either provider's planning, the first call of ccmkit's node sync waits for one list of the cluster's load balancers (the fresh read its writes are based on) and, when its instance snapshot lacks the new Node's instance, for the instance list the node controller's lookup of the Node shares (it then targets the Node from the first node sync's first call on, where the baseline waits for the second node sync); at 5,000 Nodes ccmkit's cheaper calls win (the table at 5,000 Nodes); in calls ccmkit's fewer show (node_add_writes, node_add_groups_calls)"
	case "node_delete_seconds":
		return "wall time of a tenth of a second at 1,000 Nodes, as large as its run-to-run noise (each run's seconds below), most of it the upstream controllers' own; the providers' share is alike (the fake cloud's check of each write's whole target list weighs as much as either provider's planning); ccmkit's updates cost less than the baseline's, and it pays twice for reading the cloud in one list where the baseline reads one object: the lifecycle controller's existence check of the NotReady Node fills ccmkit's instance snapshot with one list of the cluster's instances and confirms the missing one with a GET, where the baseline makes one GET (each run starts the provider afresh; in a process already running the snapshot is listed again once older than cache.maxAge, one list for every Node's lookup: P1_outage), and the first call of ccmkit's node sync waits for one list of the cluster's load balancers, the fresh read its writes are based on (the baseline reads each load balancer before its write); over an in-memory cloud a list of every object costs what its copy costs, over a real one it is a request or a few; at 5,000 Nodes ccmkit's cheaper calls win (the table at 5,000 Nodes); in calls ccmkit's fewer show (the node_delete calls below)"
	case "P3_no_latency":
		return "wall time over an in-memory cloud that answers at once: within run-to-run noise at this size, nothing to win; with latency per call (P3) ccmkit's fewer calls show"
	}
	return ""
}
