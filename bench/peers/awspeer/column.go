package awspeer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	stscredsv2 "github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/config"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/iface"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// Name is the column's name in the report.
const Name = "aws"

// The in-memory AWS's fixed resources.
const (
	vpcID        = "vpc-bench"
	routeTableID = "rtb-bench"
	gatewayID    = "igw-bench"
	// elbSecurityGroupID is the security group every ELB shares (Config's ElbSecurityGroup).
	elbSecurityGroupID = "sg-elb-bench"
	instanceType       = "m5.large"
)

// Column returns the AWS provider's column.
func Column() harness.Column { return column{} }

type column struct{}

func (column) Name() string { return Name }

// NewCloud returns the in-memory AWS with the world's first cfg.Nodes instances.
func (column) NewCloud(cfg harness.CloudConfig) (harness.Cloud, error) {
	c := newCloud()
	for i := range cfg.Nodes {
		if err := c.AddInstance(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WaitsPerCall is the AWS provider's DescribeInstances batcher's wait for more requests
// (its IdleTimeout), which every lookup of one instance waits in real time.
func (column) WaitsPerCall() time.Duration { return 100 * time.Millisecond }

var _ harness.RealTimer = column{}

// Why says why the AWS provider is lower than ccmkit in a figure.
func (column) Why(key string) string {
	switch key {
	case "P5":
		return "it keeps no instance snapshot between calls but the last full instance list its load balancers use, and a cache of zones; what it keeps of the Nodes is the shared informer's; to win it ccmkit would drop the instance snapshot that makes its P1 and P4 a list per pass, a trade it does not make"
	case "node_add_seconds":
		return "wall time, most of it the upstream service controller's own (for a Node added it syncs every Service twice, at the Node's registration and at its initialization, comparing each Service's N Nodes both times); like the baseline it skips a Node without a provider ID, so it targets the Node in the second node sync; its in-memory ELB registers the one instance per call, while ccmkit plans each write from the load balancer's whole target list (N targets) and its fake cloud takes and checks that whole list; in writes they are even (node_add_writes); to win it ccmkit's load balancers would name a target group, one write per Node added (node_add_groups_seconds), or cloudapi would need a write of the targets that changed"
	case "node_delete_seconds":
		return "wall time: its in-memory ELB registers or deregisters the one instance per call, while ccmkit plans each write from the load balancer's whole target list (N targets) and its fake cloud takes and checks that whole list; in writes they are even (node_add_writes, node_delete_writes); to win it ccmkit's load balancers would name a target group, one write per Node added (node_add_groups_seconds), or cloudapi would need a write of the targets that changed"
	case "P6_allocs", "P6_settings_allocs":
		return "it compares the load balancer it reads field by field with what the Service asks, without building a desired load balancer first; to win it ccmkit would need that second comparison beside the one every write is planned from"
	}
	return ""
}

// Config is the provider's cloud config for the world: what its documentation gives a
// large cluster (see the package doc).
func Config() config.CloudConfig {
	var cfg config.CloudConfig
	cfg.Global.Region = harness.Region
	cfg.Global.KubernetesClusterID = harness.ClusterName
	cfg.Global.ElbSecurityGroup = elbSecurityGroupID
	cfg.Global.DisableSecurityGroupIngress = true
	return cfg
}

// instanceID is instance i's ID, of the length EC2 gives today.
func instanceID(i int) string { return fmt.Sprintf("i-%017x", i+1) }

func subnetID(zone string) string { return "subnet-" + zone }

// cloud is the in-memory AWS: EC2, classic ELB and metadata over one state.
type cloud struct {
	latency atomic.Int64 // time.Duration

	callsMu sync.Mutex
	calls   harness.Calls

	mu         sync.Mutex
	instances  map[string]*ec2types.Instance
	order      []string // instance IDs in the order they were added
	groups     map[string]*ec2types.SecurityGroup
	subnets    []ec2types.Subnet
	routeTable ec2types.RouteTable
	lbs        map[string]*loadBalancer
	watch      *watch // the Watch under way
}

// watch is a Watch under way: the load balancers that have target registered, or
// deregistered with removed.
type watch struct {
	target  string
	removed bool
	*harness.Reaches
}

var _ harness.Cloud = (*cloud)(nil)

func newCloud() *cloud {
	c := &cloud{
		calls:     harness.Calls{},
		instances: map[string]*ec2types.Instance{},
		groups:    map[string]*ec2types.SecurityGroup{},
		lbs:       map[string]*loadBalancer{},
	}
	clusterTag := ec2types.Tag{Key: aws.String(clusterTagKey()), Value: aws.String("owned")}
	for _, zone := range harness.Zones {
		c.subnets = append(c.subnets, ec2types.Subnet{
			SubnetId: aws.String(subnetID(zone)), VpcId: aws.String(vpcID), AvailabilityZone: aws.String(zone),
			CidrBlock: aws.String("10.0.0.0/8"),
			Tags:      []ec2types.Tag{clusterTag, {Key: aws.String(awsv1.TagNameSubnetPublicELB), Value: aws.String("1")}},
		})
	}
	c.routeTable = ec2types.RouteTable{
		RouteTableId: aws.String(routeTableID), VpcId: aws.String(vpcID),
		Associations: []ec2types.RouteTableAssociation{{Main: aws.Bool(true), RouteTableId: aws.String(routeTableID)}},
		Routes: []ec2types.Route{
			{DestinationCidrBlock: aws.String("10.0.0.0/8"), GatewayId: aws.String("local"), State: ec2types.RouteStateActive},
			{DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: aws.String(gatewayID), State: ec2types.RouteStateActive},
		},
		Tags: []ec2types.Tag{clusterTag},
	}
	c.groups[elbSecurityGroupID] = &ec2types.SecurityGroup{
		GroupId: aws.String(elbSecurityGroupID), GroupName: aws.String("bench-elb"), VpcId: aws.String(vpcID),
		Tags: []ec2types.Tag{clusterTag},
	}
	return c
}

func clusterTagKey() string { return awsv1.TagNameKubernetesClusterPrefix + harness.ClusterName }

// NewProvider returns the AWS provider over the in-memory AWS, configured with Config. It
// reads no clock of the benchmark's.
func (c *cloud) NewProvider(*clocktesting.FakeClock) (cloudprovider.Interface, error) {
	p, err := awsv1.NewAWSCloud(Config(), services{c})
	if err != nil {
		return nil, err
	}
	return provider{p}, nil
}

// provider is the AWS provider, whose Initialize is given a clientset of its own, empty:
// the provider uses its client for events alone (and the server's version, which it
// logs), and starts an event broadcaster that it never stops, which would keep a session's
// clientset, every Node and Service of the world, alive for the rest of the run.
type provider struct{ *awsv1.Cloud }

func (p provider) Initialize(_ cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	p.Cloud.Initialize(harness.ClientBuilder{Clientset: k8sfake.NewClientset()}, stop)
}

// NodeName is the instance ID: resource-based naming.
func (c *cloud) NodeName(i int) string { return instanceID(i) }

// ProviderID is the provider's: aws:///<zone>/<instance ID>.
func (c *cloud) ProviderID(i int) string {
	return "aws:///" + harness.WorldInstance(i).Zone + "/" + instanceID(i)
}

// Calls returns the AWS API requests answered so far.
func (c *cloud) Calls() harness.Calls {
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	out := make(harness.Calls, len(c.calls))
	for op, n := range c.calls {
		out[op] = n
	}
	return out
}

// call counts n requests of op and waits the latency once per request.
func (c *cloud) call(ctx context.Context, op harness.Op, n int) error {
	c.callsMu.Lock()
	c.calls[op] += int64(n)
	c.callsMu.Unlock()
	d := time.Duration(c.latency.Load())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d * time.Duration(n))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// request counts one request of op and waits the latency, then locks the state: the
// caller defers the unlock it returns.
func (c *cloud) request(ctx context.Context, op harness.Op) (unlock func(), err error) {
	if err := c.call(ctx, op, 1); err != nil {
		return nil, err
	}
	c.mu.Lock()
	return c.mu.Unlock, nil
}

func (c *cloud) SetLatency(d time.Duration) { c.latency.Store(int64(d)) }

// RemoveInstance deletes instance i: DescribeInstances no longer answers it.
func (c *cloud) RemoveInstance(i int) error {
	id := instanceID(i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.instances[id]; !ok {
		return fmt.Errorf("no instance %s", id)
	}
	delete(c.instances, id)
	c.order = slices.DeleteFunc(c.order, func(o string) bool { return o == id })
	return nil
}

// AddInstance adds instance i, running, with the cluster tag.
func (c *cloud) AddInstance(i int) error {
	wi := harness.WorldInstance(i)
	id := instanceID(i)
	dns := id + "." + wi.Region + ".compute.internal"
	inst := &ec2types.Instance{
		InstanceId:       aws.String(id),
		InstanceType:     ec2types.InstanceType(instanceType),
		State:            &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning, Code: aws.Int32(16)},
		Placement:        &ec2types.Placement{AvailabilityZone: aws.String(wi.Zone)},
		VpcId:            aws.String(vpcID),
		SubnetId:         aws.String(subnetID(wi.Zone)),
		PrivateIpAddress: aws.String(wi.PrivateIP),
		PrivateDnsName:   aws.String(dns),
		SourceDestCheck:  aws.Bool(true),
		NetworkInterfaces: []ec2types.InstanceNetworkInterface{{
			Attachment: &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(0)},
			Status:     ec2types.NetworkInterfaceStatusInUse,
			PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{{
				Primary: aws.Bool(true), PrivateIpAddress: aws.String(wi.PrivateIP), PrivateDnsName: aws.String(dns),
			}},
		}},
		Tags: []ec2types.Tag{{Key: aws.String(clusterTagKey()), Value: aws.String("owned")}},
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.instances[id]; ok {
		return fmt.Errorf("instance %s exists", id)
	}
	c.instances[id] = inst
	c.order = append(c.order, id)
	return nil
}

// Watch returns a channel closed once want different load balancers have instance i
// registered by a write, or deregistered with removed.
func (c *cloud) Watch(i, want int, removed bool) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = &watch{target: instanceID(i), removed: removed, Reaches: harness.NewReaches(want)}
	return c.watch.Done()
}

// registered notes instances registered with load balancer name, or deregistered from it
// with deregistered; c.mu is held.
func (c *cloud) registered(name string, instances []elbtypes.Instance, deregistered bool) {
	w := c.watch
	if w != nil && w.removed == deregistered &&
		slices.ContainsFunc(instances, func(in elbtypes.Instance) bool { return aws.ToString(in.InstanceId) == w.target }) {
		w.Reach(name)
	}
}

// Reaching returns the cluster's load balancers that have instance i registered.
func (c *cloud) Reaching(i int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, lb := range c.lbs {
		if !lb.tagged(clusterTagKey()) {
			continue
		}
		if slices.ContainsFunc(lb.desc.Instances, func(in elbtypes.Instance) bool { return aws.ToString(in.InstanceId) == instanceID(i) }) {
			n++
		}
	}
	return n, nil
}

// services is the provider's Services over the in-memory AWS.
type services struct{ c *cloud }

var _ awsv1.Services = services{}

func (s services) Compute(context.Context, string, *stscredsv2.AssumeRoleProvider) (iface.EC2, error) {
	return ec2API{s.c}, nil
}

func (s services) LoadBalancing(context.Context, string, *stscredsv2.AssumeRoleProvider) (awsv1.ELB, error) {
	return elbAPI{s.c}, nil
}

func (s services) LoadBalancingV2(context.Context, string, *stscredsv2.AssumeRoleProvider) (awsv1.ELBV2, error) {
	return elbv2API{s.c}, nil
}

func (s services) Metadata(context.Context) (config.EC2Metadata, error) { return metadataAPI{s.c}, nil }

func (s services) KeyManagement(context.Context, string, *stscredsv2.AssumeRoleProvider) (awsv1.KMS, error) {
	return kmsAPI{s.c}, nil
}
