package awspeer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// describeInstancesPage is the MaxResults the provider's SDK wrapper sets on a
// DescribeInstances without instance IDs: every 1,000 instances are one more request.
const describeInstancesPage = 1000

// ec2API is the provider's iface.EC2 over the in-memory AWS.
type ec2API struct{ c *cloud }

func ec2Op(name string, write bool) harness.Op {
	return harness.Op{Name: "ec2:" + name, Write: write, Instance: name == "DescribeInstances" || name == "DescribeInstanceTopology"}
}

func apiError(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// filterSet is a request's filters: a resource matches when every filter admits one of
// its values.
type filterSet []ec2types.Filter

// match reports whether every filter admits the resource whose filterable fields field
// returns (ok false: the filter is not supported, an InvalidParameterValue).
func (fs filterSet) match(field func(name string) (values []string, ok bool)) (bool, error) {
	for _, f := range fs {
		name := aws.ToString(f.Name)
		have, ok := field(name)
		if !ok {
			return false, apiError("InvalidParameterValue", "the in-memory EC2 does not support the filter %q", name)
		}
		if !slices.ContainsFunc(f.Values, func(v string) bool { return slices.Contains(have, v) }) {
			return false, nil
		}
	}
	return true, nil
}

// tagField answers the tag filters of tags.
func tagField(name string, tags []ec2types.Tag) ([]string, bool) {
	if name == "tag-key" {
		var keys []string
		for _, t := range tags {
			keys = append(keys, aws.ToString(t.Key))
		}
		return keys, true
	}
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		for _, t := range tags {
			if aws.ToString(t.Key) == key {
				return []string{aws.ToString(t.Value)}, true
			}
		}
		return nil, true
	}
	return nil, false
}

func cloneInstance(in *ec2types.Instance) ec2types.Instance {
	out := *in
	out.Tags = slices.Clone(in.Tags)
	out.NetworkInterfaces = slices.Clone(in.NetworkInterfaces)
	if in.State != nil {
		st := *in.State
		out.State = &st
	}
	return out
}

func (a ec2API) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) ([]ec2types.Instance, error) {
	c := a.c
	c.mu.Lock()
	var out []ec2types.Instance
	var err error
	if len(in.InstanceIds) > 0 {
		for _, id := range in.InstanceIds {
			inst, ok := c.instances[id]
			if !ok {
				err = apiError(string(ec2types.UnsuccessfulInstanceCreditSpecificationErrorCodeInstanceNotFound), "The instance ID '%s' does not exist", id)
				out = nil
				break
			}
			out = append(out, cloneInstance(inst))
		}
	} else {
		for _, id := range c.order {
			inst := c.instances[id]
			var ok bool
			ok, err = filterSet(in.Filters).match(func(name string) ([]string, bool) {
				switch name {
				case "instance-id":
					return []string{id}, true
				case "private-dns-name":
					return []string{aws.ToString(inst.PrivateDnsName)}, true
				case "instance-state-name":
					return []string{string(inst.State.Name)}, true
				case "vpc-id":
					return []string{aws.ToString(inst.VpcId)}, true
				}
				return tagField(name, inst.Tags)
			})
			if err != nil {
				out = nil
				break
			}
			if ok {
				out = append(out, cloneInstance(inst))
			}
		}
	}
	c.mu.Unlock()
	requests := 1
	if len(in.InstanceIds) == 0 {
		requests = max(1, (len(out)+describeInstancesPage-1)/describeInstancesPage)
	}
	if cerr := c.call(ctx, ec2Op("DescribeInstances", false), requests); cerr != nil {
		return nil, cerr
	}
	return out, err
}

// DescribeInstanceTopology answers no topology: the world's instance type has none.
func (a ec2API) DescribeInstanceTopology(ctx context.Context, _ *ec2.DescribeInstanceTopologyInput, _ ...func(*ec2.Options)) ([]ec2types.InstanceTopology, error) {
	return nil, a.c.call(ctx, ec2Op("DescribeInstanceTopology", false), 1)
}

func (a ec2API) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) ([]ec2types.SecurityGroup, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("DescribeSecurityGroups", false))
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []ec2types.SecurityGroup
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		if len(in.GroupIds) > 0 && !slices.Contains(in.GroupIds, id) {
			continue
		}
		ok, err := filterSet(in.Filters).match(func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{id}, true
			case "group-name":
				return []string{aws.ToString(g.GroupName)}, true
			case "vpc-id":
				return []string{aws.ToString(g.VpcId)}, true
			}
			return tagField(name, g.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			cp := *g
			cp.IpPermissions, cp.Tags = slices.Clone(g.IpPermissions), slices.Clone(g.Tags)
			out = append(out, cp)
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func (a ec2API) CreateSecurityGroup(ctx context.Context, in *ec2.CreateSecurityGroupInput, _ ...func(*ec2.Options)) (*ec2.CreateSecurityGroupOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("CreateSecurityGroup", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, g := range c.groups {
		if aws.ToString(g.GroupName) == aws.ToString(in.GroupName) {
			return nil, apiError("InvalidGroup.Duplicate", "The security group '%s' already exists", aws.ToString(in.GroupName))
		}
	}
	id := fmt.Sprintf("sg-%08d", len(c.groups))
	g := &ec2types.SecurityGroup{GroupId: aws.String(id), GroupName: in.GroupName, Description: in.Description, VpcId: in.VpcId}
	for _, spec := range in.TagSpecifications {
		g.Tags = append(g.Tags, spec.Tags...)
	}
	c.groups[id] = g
	return &ec2.CreateSecurityGroupOutput{GroupId: aws.String(id)}, nil
}

func (a ec2API) DeleteSecurityGroup(ctx context.Context, in *ec2.DeleteSecurityGroupInput, _ ...func(*ec2.Options)) (*ec2.DeleteSecurityGroupOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("DeleteSecurityGroup", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	id := aws.ToString(in.GroupId)
	if _, ok := c.groups[id]; !ok {
		return nil, apiError("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	delete(c.groups, id)
	return &ec2.DeleteSecurityGroupOutput{}, nil
}

func (a ec2API) AuthorizeSecurityGroupIngress(ctx context.Context, in *ec2.AuthorizeSecurityGroupIngressInput, _ ...func(*ec2.Options)) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("AuthorizeSecurityGroupIngress", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, ok := c.groups[aws.ToString(in.GroupId)]
	if !ok {
		return nil, apiError("InvalidGroup.NotFound", "The security group '%s' does not exist", aws.ToString(in.GroupId))
	}
	g.IpPermissions = append(g.IpPermissions, in.IpPermissions...)
	return &ec2.AuthorizeSecurityGroupIngressOutput{Return: aws.Bool(true)}, nil
}

// RevokeSecurityGroupIngress is counted; the world never needs a rule removed.
func (a ec2API) RevokeSecurityGroupIngress(ctx context.Context, _ *ec2.RevokeSecurityGroupIngressInput, _ ...func(*ec2.Options)) (*ec2.RevokeSecurityGroupIngressOutput, error) {
	return nil, unsupported(ctx, a.c, ec2Op("RevokeSecurityGroupIngress", true), "the world never removes a security group rule")
}

func (a ec2API) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) ([]ec2types.Subnet, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("DescribeSubnets", false))
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []ec2types.Subnet
	for _, s := range c.subnets {
		if len(in.SubnetIds) > 0 && !slices.Contains(in.SubnetIds, aws.ToString(s.SubnetId)) {
			continue
		}
		ok, err := filterSet(in.Filters).match(func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{aws.ToString(s.SubnetId)}, true
			case "vpc-id":
				return []string{aws.ToString(s.VpcId)}, true
			case "availability-zone":
				return []string{aws.ToString(s.AvailabilityZone)}, true
			}
			return tagField(name, s.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			cp := s
			cp.Tags = slices.Clone(s.Tags)
			out = append(out, cp)
		}
	}
	return out, nil
}

func (a ec2API) DescribeAvailabilityZones(ctx context.Context, _ *ec2.DescribeAvailabilityZonesInput, _ ...func(*ec2.Options)) ([]ec2types.AvailabilityZone, error) {
	if err := a.c.call(ctx, ec2Op("DescribeAvailabilityZones", false), 1); err != nil {
		return nil, err
	}
	var out []ec2types.AvailabilityZone
	for i, z := range harness.Zones {
		out = append(out, ec2types.AvailabilityZone{
			ZoneName: aws.String(z), ZoneId: aws.String(fmt.Sprintf("bench1-az%d", i+1)), ZoneType: aws.String("availability-zone"),
			RegionName: aws.String(harness.Region), State: ec2types.AvailabilityZoneStateAvailable,
		})
	}
	return out, nil
}

func (a ec2API) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("CreateTags", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, id := range in.Resources {
		switch {
		case c.instances[id] != nil:
			c.instances[id].Tags = setTags(c.instances[id].Tags, in.Tags)
		case c.groups[id] != nil:
			c.groups[id].Tags = setTags(c.groups[id].Tags, in.Tags)
		default:
			return nil, apiError("InvalidID", "The ID '%s' is not valid", id)
		}
	}
	return &ec2.CreateTagsOutput{}, nil
}

func setTags(have, set []ec2types.Tag) []ec2types.Tag {
	out := slices.Clone(have)
	for _, t := range set {
		i := slices.IndexFunc(out, func(h ec2types.Tag) bool { return aws.ToString(h.Key) == aws.ToString(t.Key) })
		if i >= 0 {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return out
}

// DeleteTags is counted; the world never needs a tag removed.
func (a ec2API) DeleteTags(ctx context.Context, _ *ec2.DeleteTagsInput, _ ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
	return nil, unsupported(ctx, a.c, ec2Op("DeleteTags", true), "the world never removes a tag")
}

func (a ec2API) DescribeRouteTables(ctx context.Context, in *ec2.DescribeRouteTablesInput, _ ...func(*ec2.Options)) ([]ec2types.RouteTable, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("DescribeRouteTables", false))
	if err != nil {
		return nil, err
	}
	defer unlock()
	t := c.routeTable
	if len(in.RouteTableIds) > 0 && !slices.Contains(in.RouteTableIds, aws.ToString(t.RouteTableId)) {
		return nil, nil
	}
	ok, err := filterSet(in.Filters).match(func(name string) ([]string, bool) {
		switch name {
		case "route-table-id":
			return []string{aws.ToString(t.RouteTableId)}, true
		case "vpc-id":
			return []string{aws.ToString(t.VpcId)}, true
		}
		return tagField(name, t.Tags)
	})
	if err != nil || !ok {
		return nil, err
	}
	t.Routes, t.Associations, t.Tags = slices.Clone(t.Routes), slices.Clone(t.Associations), slices.Clone(t.Tags)
	return []ec2types.RouteTable{t}, nil
}

func (a ec2API) CreateRoute(ctx context.Context, in *ec2.CreateRouteInput, _ ...func(*ec2.Options)) (*ec2.CreateRouteOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("CreateRoute", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if aws.ToString(in.RouteTableId) != routeTableID {
		return nil, apiError("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", aws.ToString(in.RouteTableId))
	}
	if _, ok := c.instances[aws.ToString(in.InstanceId)]; !ok {
		return nil, apiError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", aws.ToString(in.InstanceId))
	}
	cidr := aws.ToString(in.DestinationCidrBlock)
	if slices.ContainsFunc(c.routeTable.Routes, func(r ec2types.Route) bool { return aws.ToString(r.DestinationCidrBlock) == cidr }) {
		return nil, apiError("RouteAlreadyExists", "The route identified by %s already exists", cidr)
	}
	c.routeTable.Routes = append(c.routeTable.Routes, ec2types.Route{
		DestinationCidrBlock: aws.String(cidr), InstanceId: in.InstanceId, State: ec2types.RouteStateActive,
	})
	return &ec2.CreateRouteOutput{Return: aws.Bool(true)}, nil
}

func (a ec2API) DeleteRoute(ctx context.Context, in *ec2.DeleteRouteInput, _ ...func(*ec2.Options)) (*ec2.DeleteRouteOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("DeleteRoute", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	cidr := aws.ToString(in.DestinationCidrBlock)
	i := slices.IndexFunc(c.routeTable.Routes, func(r ec2types.Route) bool { return aws.ToString(r.DestinationCidrBlock) == cidr })
	if i < 0 {
		return nil, apiError("InvalidRoute.NotFound", "no route with destination-cidr-block %s in route table %s", cidr, routeTableID)
	}
	c.routeTable.Routes = slices.Delete(c.routeTable.Routes, i, i+1)
	return &ec2.DeleteRouteOutput{}, nil
}

func (a ec2API) ModifyInstanceAttribute(ctx context.Context, in *ec2.ModifyInstanceAttributeInput, _ ...func(*ec2.Options)) (*ec2.ModifyInstanceAttributeOutput, error) {
	c := a.c
	unlock, err := c.request(ctx, ec2Op("ModifyInstanceAttribute", true))
	if err != nil {
		return nil, err
	}
	defer unlock()
	inst, ok := c.instances[aws.ToString(in.InstanceId)]
	if !ok {
		return nil, apiError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", aws.ToString(in.InstanceId))
	}
	if in.SourceDestCheck != nil {
		inst.SourceDestCheck = aws.Bool(aws.ToBool(in.SourceDestCheck.Value))
	}
	return &ec2.ModifyInstanceAttributeOutput{}, nil
}

func (a ec2API) DescribeVpcs(ctx context.Context, _ *ec2.DescribeVpcsInput, _ ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error) {
	if err := a.c.call(ctx, ec2Op("DescribeVpcs", false), 1); err != nil {
		return nil, err
	}
	return &ec2.DescribeVpcsOutput{Vpcs: []ec2types.Vpc{{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.0.0/8")}}}, nil
}

// DescribeNetworkInterfaces answers none: the world has no interface beyond its
// instances' own.
func (a ec2API) DescribeNetworkInterfaces(ctx context.Context, _ *ec2.DescribeNetworkInterfacesInput, _ ...func(*ec2.Options)) (*ec2.DescribeNetworkInterfacesOutput, error) {
	if err := a.c.call(ctx, ec2Op("DescribeNetworkInterfaces", false), 1); err != nil {
		return nil, err
	}
	return &ec2.DescribeNetworkInterfacesOutput{}, nil
}
