package awspeer

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// loadBalancer is a classic ELB as the in-memory AWS holds it.
type loadBalancer struct {
	desc  elbtypes.LoadBalancerDescription
	attrs elbtypes.LoadBalancerAttributes
	tags  []elbtypes.Tag
}

func (lb *loadBalancer) tagged(key string) bool {
	return slices.ContainsFunc(lb.tags, func(t elbtypes.Tag) bool { return aws.ToString(t.Key) == key })
}

// describe returns a copy of the description that shares nothing the caller could change.
func (lb *loadBalancer) describe() elbtypes.LoadBalancerDescription {
	d := lb.desc
	d.Instances = slices.Clone(d.Instances)
	d.Subnets = slices.Clone(d.Subnets)
	d.AvailabilityZones = slices.Clone(d.AvailabilityZones)
	d.SecurityGroups = slices.Clone(d.SecurityGroups)
	d.BackendServerDescriptions = slices.Clone(d.BackendServerDescriptions)
	d.ListenerDescriptions = make([]elbtypes.ListenerDescription, len(lb.desc.ListenerDescriptions))
	for i, l := range lb.desc.ListenerDescriptions {
		cp := *l.Listener
		d.ListenerDescriptions[i] = elbtypes.ListenerDescription{Listener: &cp, PolicyNames: slices.Clone(l.PolicyNames)}
	}
	if lb.desc.HealthCheck != nil {
		hc := *lb.desc.HealthCheck
		d.HealthCheck = &hc
	}
	return d
}

// elbAPI is the provider's ELB (classic) over the in-memory AWS.
type elbAPI struct{ c *cloud }

func elbOp(name string, write bool) harness.Op { return harness.Op{Name: "elb:" + name, Write: write} }

func lbNotFound(name string) error {
	return apiError("LoadBalancerNotFound", "There is no ACTIVE Load Balancer named '%s'", name)
}

// lb returns the load balancer named name; c.mu is held.
func (a elbAPI) lb(name *string) (*loadBalancer, error) {
	lb, ok := a.c.lbs[aws.ToString(name)]
	if !ok {
		return nil, lbNotFound(aws.ToString(name))
	}
	return lb, nil
}

// write counts a write of name and runs f on the load balancer under the lock.
func (a elbAPI) write(ctx context.Context, op string, name *string, f func(*loadBalancer)) error {
	unlock, err := a.c.request(ctx, elbOp(op, true))
	if err != nil {
		return err
	}
	defer unlock()
	lb, err := a.lb(name)
	if err != nil {
		return err
	}
	f(lb)
	return nil
}

func (a elbAPI) CreateLoadBalancer(ctx context.Context, in *elb.CreateLoadBalancerInput, _ ...func(*elb.Options)) (*elb.CreateLoadBalancerOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, elbOp("CreateLoadBalancer", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	name := aws.ToString(in.LoadBalancerName)
	if _, ok := c.lbs[name]; ok {
		return nil, apiError("DuplicateLoadBalancerName", "a load balancer named '%s' exists", name)
	}
	dns := name + "." + harness.Region + ".elb.amazonaws.com"
	lb := &loadBalancer{
		desc: elbtypes.LoadBalancerDescription{
			LoadBalancerName: aws.String(name), DNSName: aws.String(dns), Scheme: aws.String("internet-facing"),
			Subnets: slices.Clone(in.Subnets), SecurityGroups: slices.Clone(in.SecurityGroups), VPCId: aws.String(vpcID),
		},
		attrs: elbtypes.LoadBalancerAttributes{
			AccessLog:              &elbtypes.AccessLog{Enabled: false},
			ConnectionDraining:     &elbtypes.ConnectionDraining{Enabled: false},
			ConnectionSettings:     &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(60)},
			CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: false},
		},
		tags: slices.Clone(in.Tags),
	}
	if in.Scheme != nil {
		lb.desc.Scheme = in.Scheme
	}
	for _, l := range in.Listeners {
		cp := l
		lb.desc.ListenerDescriptions = append(lb.desc.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &cp})
	}
	if len(in.Listeners) > 0 {
		// A new ELB's health check: TCP to the first listener's instance port.
		lb.desc.HealthCheck = &elbtypes.HealthCheck{
			Target: aws.String("TCP:" + strconv.Itoa(int(aws.ToInt32(in.Listeners[0].InstancePort)))), Interval: aws.Int32(30),
			Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(10), UnhealthyThreshold: aws.Int32(2),
		}
	}
	c.lbs[name] = lb
	return &elb.CreateLoadBalancerOutput{DNSName: aws.String(dns)}, nil
}

func (a elbAPI) DeleteLoadBalancer(ctx context.Context, in *elb.DeleteLoadBalancerInput, _ ...func(*elb.Options)) (*elb.DeleteLoadBalancerOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, elbOp("DeleteLoadBalancer", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	delete(c.lbs, aws.ToString(in.LoadBalancerName)) // deleting a missing ELB succeeds
	return &elb.DeleteLoadBalancerOutput{}, nil
}

// describeLoadBalancersPage is the API's largest page.
const describeLoadBalancersPage = 400

// DescribeLoadBalancers answers the named load balancers (LoadBalancerNotFound if one is
// missing), or every one, counted a request per 400.
func (a elbAPI) DescribeLoadBalancers(ctx context.Context, in *elb.DescribeLoadBalancersInput, _ ...func(*elb.Options)) (*elb.DescribeLoadBalancersOutput, error) {
	c := a.c
	c.mu.Lock()
	var out []elbtypes.LoadBalancerDescription
	var err error
	if len(in.LoadBalancerNames) > 0 {
		for _, name := range in.LoadBalancerNames {
			lb, ok := c.lbs[name]
			if !ok {
				out, err = nil, lbNotFound(name)
				break
			}
			out = append(out, lb.describe())
		}
	} else {
		for _, name := range sortedKeys(c.lbs) {
			out = append(out, c.lbs[name].describe())
		}
	}
	c.mu.Unlock()
	if cerr := c.call(ctx, elbOp("DescribeLoadBalancers", false), max(1, (len(out)+describeLoadBalancersPage-1)/describeLoadBalancersPage)); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return &elb.DescribeLoadBalancersOutput{LoadBalancerDescriptions: out}, nil
}

// AddTags tags the named load balancers, one request for all of them.
func (a elbAPI) AddTags(ctx context.Context, in *elb.AddTagsInput, _ ...func(*elb.Options)) (*elb.AddTagsOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, elbOp("AddTags", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if len(in.LoadBalancerNames) == 0 {
		return nil, apiError("ValidationError", "LoadBalancerNames is required")
	}
	var lbs []*loadBalancer
	for _, name := range in.LoadBalancerNames {
		lb, err := a.lb(aws.String(name))
		if err != nil {
			return nil, err
		}
		lbs = append(lbs, lb)
	}
	for _, lb := range lbs {
		for _, t := range in.Tags {
			i := slices.IndexFunc(lb.tags, func(h elbtypes.Tag) bool { return aws.ToString(h.Key) == aws.ToString(t.Key) })
			if i >= 0 {
				lb.tags[i] = t
			} else {
				lb.tags = append(lb.tags, t)
			}
		}
	}
	return &elb.AddTagsOutput{}, nil
}

func (a elbAPI) RegisterInstancesWithLoadBalancer(ctx context.Context, in *elb.RegisterInstancesWithLoadBalancerInput, _ ...func(*elb.Options)) (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
	var instances []elbtypes.Instance
	err := a.write(ctx, "RegisterInstancesWithLoadBalancer", in.LoadBalancerName, func(lb *loadBalancer) {
		for _, add := range in.Instances {
			if !slices.ContainsFunc(lb.desc.Instances, func(h elbtypes.Instance) bool { return aws.ToString(h.InstanceId) == aws.ToString(add.InstanceId) }) {
				lb.desc.Instances = append(lb.desc.Instances, elbtypes.Instance{InstanceId: add.InstanceId})
			}
		}
		instances = slices.Clone(lb.desc.Instances)
		a.c.registered(aws.ToString(in.LoadBalancerName), in.Instances, false)
	})
	if err != nil {
		return nil, err
	}
	return &elb.RegisterInstancesWithLoadBalancerOutput{Instances: instances}, nil
}

func (a elbAPI) DeregisterInstancesFromLoadBalancer(ctx context.Context, in *elb.DeregisterInstancesFromLoadBalancerInput, _ ...func(*elb.Options)) (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
	var instances []elbtypes.Instance
	err := a.write(ctx, "DeregisterInstancesFromLoadBalancer", in.LoadBalancerName, func(lb *loadBalancer) {
		lb.desc.Instances = slices.DeleteFunc(lb.desc.Instances, func(h elbtypes.Instance) bool {
			return slices.ContainsFunc(in.Instances, func(r elbtypes.Instance) bool { return aws.ToString(r.InstanceId) == aws.ToString(h.InstanceId) })
		})
		instances = slices.Clone(lb.desc.Instances)
		a.c.registered(aws.ToString(in.LoadBalancerName), in.Instances, true)
	})
	if err != nil {
		return nil, err
	}
	return &elb.DeregisterInstancesFromLoadBalancerOutput{Instances: instances}, nil
}

func (a elbAPI) CreateLoadBalancerPolicy(ctx context.Context, in *elb.CreateLoadBalancerPolicyInput, _ ...func(*elb.Options)) (*elb.CreateLoadBalancerPolicyOutput, error) {
	return &elb.CreateLoadBalancerPolicyOutput{}, a.write(ctx, "CreateLoadBalancerPolicy", in.LoadBalancerName, func(*loadBalancer) {})
}

func (a elbAPI) SetLoadBalancerPoliciesForBackendServer(ctx context.Context, in *elb.SetLoadBalancerPoliciesForBackendServerInput, _ ...func(*elb.Options)) (*elb.SetLoadBalancerPoliciesForBackendServerOutput, error) {
	err := a.write(ctx, "SetLoadBalancerPoliciesForBackendServer", in.LoadBalancerName, func(lb *loadBalancer) {
		lb.desc.BackendServerDescriptions = slices.DeleteFunc(lb.desc.BackendServerDescriptions, func(b elbtypes.BackendServerDescription) bool {
			return aws.ToInt32(b.InstancePort) == aws.ToInt32(in.InstancePort)
		})
		if len(in.PolicyNames) > 0 {
			lb.desc.BackendServerDescriptions = append(lb.desc.BackendServerDescriptions, elbtypes.BackendServerDescription{InstancePort: in.InstancePort, PolicyNames: slices.Clone(in.PolicyNames)})
		}
	})
	return &elb.SetLoadBalancerPoliciesForBackendServerOutput{}, err
}

func (a elbAPI) SetLoadBalancerPoliciesOfListener(ctx context.Context, in *elb.SetLoadBalancerPoliciesOfListenerInput, _ ...func(*elb.Options)) (*elb.SetLoadBalancerPoliciesOfListenerOutput, error) {
	err := a.write(ctx, "SetLoadBalancerPoliciesOfListener", in.LoadBalancerName, func(lb *loadBalancer) {
		for i, l := range lb.desc.ListenerDescriptions {
			if l.Listener.LoadBalancerPort == in.LoadBalancerPort {
				lb.desc.ListenerDescriptions[i].PolicyNames = slices.Clone(in.PolicyNames)
			}
		}
	})
	return &elb.SetLoadBalancerPoliciesOfListenerOutput{}, err
}

// DescribeLoadBalancerPolicies answers none: the world's load balancers have no policy.
func (a elbAPI) DescribeLoadBalancerPolicies(ctx context.Context, _ *elb.DescribeLoadBalancerPoliciesInput, _ ...func(*elb.Options)) (*elb.DescribeLoadBalancerPoliciesOutput, error) {
	if err := a.c.call(ctx, elbOp("DescribeLoadBalancerPolicies", false), 1); err != nil {
		return nil, err
	}
	return &elb.DescribeLoadBalancerPoliciesOutput{}, nil
}

func (a elbAPI) DetachLoadBalancerFromSubnets(ctx context.Context, in *elb.DetachLoadBalancerFromSubnetsInput, _ ...func(*elb.Options)) (*elb.DetachLoadBalancerFromSubnetsOutput, error) {
	var subnets []string
	err := a.write(ctx, "DetachLoadBalancerFromSubnets", in.LoadBalancerName, func(lb *loadBalancer) {
		lb.desc.Subnets = slices.DeleteFunc(lb.desc.Subnets, func(s string) bool { return slices.Contains(in.Subnets, s) })
		subnets = slices.Clone(lb.desc.Subnets)
	})
	return &elb.DetachLoadBalancerFromSubnetsOutput{Subnets: subnets}, err
}

func (a elbAPI) AttachLoadBalancerToSubnets(ctx context.Context, in *elb.AttachLoadBalancerToSubnetsInput, _ ...func(*elb.Options)) (*elb.AttachLoadBalancerToSubnetsOutput, error) {
	var subnets []string
	err := a.write(ctx, "AttachLoadBalancerToSubnets", in.LoadBalancerName, func(lb *loadBalancer) {
		for _, s := range in.Subnets {
			if !slices.Contains(lb.desc.Subnets, s) {
				lb.desc.Subnets = append(lb.desc.Subnets, s)
			}
		}
		subnets = slices.Clone(lb.desc.Subnets)
	})
	return &elb.AttachLoadBalancerToSubnetsOutput{Subnets: subnets}, err
}

func (a elbAPI) CreateLoadBalancerListeners(ctx context.Context, in *elb.CreateLoadBalancerListenersInput, _ ...func(*elb.Options)) (*elb.CreateLoadBalancerListenersOutput, error) {
	err := a.write(ctx, "CreateLoadBalancerListeners", in.LoadBalancerName, func(lb *loadBalancer) {
		for _, l := range in.Listeners {
			cp := l
			lb.desc.ListenerDescriptions = append(lb.desc.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &cp})
		}
	})
	return &elb.CreateLoadBalancerListenersOutput{}, err
}

func (a elbAPI) DeleteLoadBalancerListeners(ctx context.Context, in *elb.DeleteLoadBalancerListenersInput, _ ...func(*elb.Options)) (*elb.DeleteLoadBalancerListenersOutput, error) {
	err := a.write(ctx, "DeleteLoadBalancerListeners", in.LoadBalancerName, func(lb *loadBalancer) {
		lb.desc.ListenerDescriptions = slices.DeleteFunc(lb.desc.ListenerDescriptions, func(l elbtypes.ListenerDescription) bool {
			return slices.Contains(in.LoadBalancerPorts, l.Listener.LoadBalancerPort)
		})
	})
	return &elb.DeleteLoadBalancerListenersOutput{}, err
}

func (a elbAPI) ApplySecurityGroupsToLoadBalancer(ctx context.Context, in *elb.ApplySecurityGroupsToLoadBalancerInput, _ ...func(*elb.Options)) (*elb.ApplySecurityGroupsToLoadBalancerOutput, error) {
	err := a.write(ctx, "ApplySecurityGroupsToLoadBalancer", in.LoadBalancerName, func(lb *loadBalancer) {
		lb.desc.SecurityGroups = slices.Clone(in.SecurityGroups)
	})
	return &elb.ApplySecurityGroupsToLoadBalancerOutput{SecurityGroups: slices.Clone(in.SecurityGroups)}, err
}

func (a elbAPI) ConfigureHealthCheck(ctx context.Context, in *elb.ConfigureHealthCheckInput, _ ...func(*elb.Options)) (*elb.ConfigureHealthCheckOutput, error) {
	if in.HealthCheck == nil {
		return nil, errors.Join(a.c.call(ctx, elbOp("ConfigureHealthCheck", true), 1), apiError("ValidationError", "HealthCheck is required"))
	}
	hc := *in.HealthCheck
	err := a.write(ctx, "ConfigureHealthCheck", in.LoadBalancerName, func(lb *loadBalancer) { lb.desc.HealthCheck = &hc })
	return &elb.ConfigureHealthCheckOutput{HealthCheck: &hc}, err
}

func (a elbAPI) DescribeLoadBalancerAttributes(ctx context.Context, in *elb.DescribeLoadBalancerAttributesInput, _ ...func(*elb.Options)) (*elb.DescribeLoadBalancerAttributesOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, elbOp("DescribeLoadBalancerAttributes", false))
	if err != nil {
		return nil, err
	}
	defer unlock()
	lb, err := a.lb(in.LoadBalancerName)
	if err != nil {
		return nil, err
	}
	return &elb.DescribeLoadBalancerAttributesOutput{LoadBalancerAttributes: cloneAttributes(lb.attrs)}, nil
}

func (a elbAPI) ModifyLoadBalancerAttributes(ctx context.Context, in *elb.ModifyLoadBalancerAttributesInput, _ ...func(*elb.Options)) (*elb.ModifyLoadBalancerAttributesOutput, error) {
	if in.LoadBalancerAttributes == nil {
		return nil, errors.Join(a.c.call(ctx, elbOp("ModifyLoadBalancerAttributes", true), 1), apiError("ValidationError", "LoadBalancerAttributes is required"))
	}
	attrs := cloneAttributes(*in.LoadBalancerAttributes)
	err := a.write(ctx, "ModifyLoadBalancerAttributes", in.LoadBalancerName, func(lb *loadBalancer) { lb.attrs = *attrs })
	return &elb.ModifyLoadBalancerAttributesOutput{LoadBalancerName: in.LoadBalancerName, LoadBalancerAttributes: cloneAttributes(*attrs)}, err
}

// cloneAttributes copies attributes, each part of them.
func cloneAttributes(in elbtypes.LoadBalancerAttributes) *elbtypes.LoadBalancerAttributes {
	out := in
	if in.AccessLog != nil {
		v := *in.AccessLog
		out.AccessLog = &v
	}
	if in.ConnectionDraining != nil {
		v := *in.ConnectionDraining
		out.ConnectionDraining = &v
	}
	if in.ConnectionSettings != nil {
		v := *in.ConnectionSettings
		out.ConnectionSettings = &v
	}
	if in.CrossZoneLoadBalancing != nil {
		v := *in.CrossZoneLoadBalancing
		out.CrossZoneLoadBalancing = &v
	}
	out.AdditionalAttributes = slices.Clone(in.AdditionalAttributes)
	return &out
}

// unsupported is the answer of a request the world does not need: counted, then refused
// with UnsupportedOperation, saying why.
func unsupported(ctx context.Context, c *cloud, op harness.Op, why string) error {
	if err := c.call(ctx, op, 1); err != nil {
		return err
	}
	return apiError("UnsupportedOperation", "the in-memory AWS does not model %s: %s", op.Name, why)
}

// elbv2API is the provider's ELBV2: the world has no Network Load Balancer.
type elbv2API struct{ c *cloud }

func v2(ctx context.Context, c *cloud, name string) error {
	return unsupported(ctx, c, harness.Op{Name: "elbv2:" + name, Write: !strings.HasPrefix(name, "Describe")}, "the world's Services are classic load balancers")
}

func (a elbv2API) AddTags(ctx context.Context, _ *elbv2.AddTagsInput, _ ...func(*elbv2.Options)) (*elbv2.AddTagsOutput, error) {
	return nil, v2(ctx, a.c, "AddTags")
}

func (a elbv2API) CreateLoadBalancer(ctx context.Context, _ *elbv2.CreateLoadBalancerInput, _ ...func(*elbv2.Options)) (*elbv2.CreateLoadBalancerOutput, error) {
	return nil, v2(ctx, a.c, "CreateLoadBalancer")
}

func (a elbv2API) DescribeLoadBalancers(ctx context.Context, _ *elbv2.DescribeLoadBalancersInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error) {
	return nil, v2(ctx, a.c, "DescribeLoadBalancers")
}

func (a elbv2API) DeleteLoadBalancer(ctx context.Context, _ *elbv2.DeleteLoadBalancerInput, _ ...func(*elbv2.Options)) (*elbv2.DeleteLoadBalancerOutput, error) {
	return nil, v2(ctx, a.c, "DeleteLoadBalancer")
}

func (a elbv2API) SetSecurityGroups(ctx context.Context, _ *elbv2.SetSecurityGroupsInput, _ ...func(*elbv2.Options)) (*elbv2.SetSecurityGroupsOutput, error) {
	return nil, v2(ctx, a.c, "SetSecurityGroups")
}

func (a elbv2API) ModifyLoadBalancerAttributes(ctx context.Context, _ *elbv2.ModifyLoadBalancerAttributesInput, _ ...func(*elbv2.Options)) (*elbv2.ModifyLoadBalancerAttributesOutput, error) {
	return nil, v2(ctx, a.c, "ModifyLoadBalancerAttributes")
}

func (a elbv2API) DescribeLoadBalancerAttributes(ctx context.Context, _ *elbv2.DescribeLoadBalancerAttributesInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancerAttributesOutput, error) {
	return nil, v2(ctx, a.c, "DescribeLoadBalancerAttributes")
}

func (a elbv2API) CreateTargetGroup(ctx context.Context, _ *elbv2.CreateTargetGroupInput, _ ...func(*elbv2.Options)) (*elbv2.CreateTargetGroupOutput, error) {
	return nil, v2(ctx, a.c, "CreateTargetGroup")
}

func (a elbv2API) DescribeTargetGroups(ctx context.Context, _ *elbv2.DescribeTargetGroupsInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error) {
	return nil, v2(ctx, a.c, "DescribeTargetGroups")
}

func (a elbv2API) ModifyTargetGroup(ctx context.Context, _ *elbv2.ModifyTargetGroupInput, _ ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupOutput, error) {
	return nil, v2(ctx, a.c, "ModifyTargetGroup")
}

func (a elbv2API) DeleteTargetGroup(ctx context.Context, _ *elbv2.DeleteTargetGroupInput, _ ...func(*elbv2.Options)) (*elbv2.DeleteTargetGroupOutput, error) {
	return nil, v2(ctx, a.c, "DeleteTargetGroup")
}

func (a elbv2API) DescribeTargetHealth(ctx context.Context, _ *elbv2.DescribeTargetHealthInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error) {
	return nil, v2(ctx, a.c, "DescribeTargetHealth")
}

func (a elbv2API) DescribeTargetGroupAttributes(ctx context.Context, _ *elbv2.DescribeTargetGroupAttributesInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
	return nil, v2(ctx, a.c, "DescribeTargetGroupAttributes")
}

func (a elbv2API) ModifyTargetGroupAttributes(ctx context.Context, _ *elbv2.ModifyTargetGroupAttributesInput, _ ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
	return nil, v2(ctx, a.c, "ModifyTargetGroupAttributes")
}

func (a elbv2API) RegisterTargets(ctx context.Context, _ *elbv2.RegisterTargetsInput, _ ...func(*elbv2.Options)) (*elbv2.RegisterTargetsOutput, error) {
	return nil, v2(ctx, a.c, "RegisterTargets")
}

func (a elbv2API) DeregisterTargets(ctx context.Context, _ *elbv2.DeregisterTargetsInput, _ ...func(*elbv2.Options)) (*elbv2.DeregisterTargetsOutput, error) {
	return nil, v2(ctx, a.c, "DeregisterTargets")
}

func (a elbv2API) CreateListener(ctx context.Context, _ *elbv2.CreateListenerInput, _ ...func(*elbv2.Options)) (*elbv2.CreateListenerOutput, error) {
	return nil, v2(ctx, a.c, "CreateListener")
}

func (a elbv2API) DescribeListeners(ctx context.Context, _ *elbv2.DescribeListenersInput, _ ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error) {
	return nil, v2(ctx, a.c, "DescribeListeners")
}

func (a elbv2API) DeleteListener(ctx context.Context, _ *elbv2.DeleteListenerInput, _ ...func(*elbv2.Options)) (*elbv2.DeleteListenerOutput, error) {
	return nil, v2(ctx, a.c, "DeleteListener")
}

func (a elbv2API) ModifyListener(ctx context.Context, _ *elbv2.ModifyListenerInput, _ ...func(*elbv2.Options)) (*elbv2.ModifyListenerOutput, error) {
	return nil, v2(ctx, a.c, "ModifyListener")
}

// kmsAPI is the provider's KMS: the world has no encrypted volume.
type kmsAPI struct{ c *cloud }

func (a kmsAPI) DescribeKey(ctx context.Context, _ *kms.DescribeKeyInput, _ ...func(*kms.Options)) (*kms.DescribeKeyOutput, error) {
	return nil, unsupported(ctx, a.c, harness.Op{Name: "kms:DescribeKey"}, "the world has no encrypted volume")
}

// metadataAPI is the instance metadata service of instance 0, where the provider runs.
type metadataAPI struct{ c *cloud }

func (a metadataAPI) GetMetadata(ctx context.Context, in *imds.GetMetadataInput, _ ...func(*imds.Options)) (*imds.GetMetadataOutput, error) {
	if err := a.c.call(ctx, harness.Op{Name: "imds:GetMetadata"}, 1); err != nil {
		return nil, err
	}
	if in.Path != "instance-id" {
		return nil, apiError("NotFound", "the in-memory metadata service answers instance-id only, not %q", in.Path)
	}
	return &imds.GetMetadataOutput{Content: io.NopCloser(strings.NewReader(instanceID(0)))}, nil
}

func (a metadataAPI) GetRegion(ctx context.Context, _ *imds.GetRegionInput, _ ...func(*imds.Options)) (*imds.GetRegionOutput, error) {
	if err := a.c.call(ctx, harness.Op{Name: "imds:GetRegion"}, 1); err != nil {
		return nil, err
	}
	return &imds.GetRegionOutput{Region: harness.Region}, nil
}
