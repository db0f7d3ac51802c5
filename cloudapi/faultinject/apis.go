package faultinject

import (
	"context"

	"github.com/ccmkit/ccmkit/cloudapi"
)

var (
	_ cloudapi.InstanceAPI     = (*instanceAPI)(nil)
	_ cloudapi.LoadBalancerAPI = (*loadBalancerAPI)(nil)
	_ cloudapi.TaglessRouteAPI = (*routeAPI)(nil)
)

// instanceAPI injects faults into an InstanceAPI.
type instanceAPI struct {
	c     *Client
	inner cloudapi.InstanceAPI
}

func (a *instanceAPI) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return do(ctx, a.c, cloudapi.OpGetInstance, id, func(ctx context.Context) (*cloudapi.Instance, error) {
		return a.inner.GetInstance(ctx, id)
	}, nil)
}

func (a *instanceAPI) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return list(ctx, a.c, cloudapi.OpListInstances, opts, a.inner.ListInstances,
		func(p *cloudapi.InstancePage) ([]cloudapi.Instance, string) { return p.Items, p.NextPageToken },
		cloudapi.Instance.Clone,
		func(items []cloudapi.Instance, next string) *cloudapi.InstancePage {
			return &cloudapi.InstancePage{Items: items, NextPageToken: next}
		})
}

// loadBalancerAPI injects faults into a LoadBalancerAPI.
type loadBalancerAPI struct {
	c     *Client
	inner cloudapi.LoadBalancerAPI
}

func (a *loadBalancerAPI) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	return do(ctx, a.c, cloudapi.OpGetLoadBalancer, id, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.GetLoadBalancer(ctx, id)
	}, nil)
}

func (a *loadBalancerAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return list(ctx, a.c, cloudapi.OpListLoadBalancers, opts, a.inner.ListLoadBalancers,
		func(p *cloudapi.LoadBalancerPage) ([]cloudapi.LoadBalancer, string) { return p.Items, p.NextPageToken },
		cloudapi.LoadBalancer.Clone,
		func(items []cloudapi.LoadBalancer, next string) *cloudapi.LoadBalancerPage {
			return &cloudapi.LoadBalancerPage{Items: items, NextPageToken: next}
		})
}

func (a *loadBalancerAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	return do(ctx, a.c, cloudapi.OpCreateLoadBalancer, "", func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.CreateLoadBalancer(ctx, spec)
	}, nil)
}

func (a *loadBalancerAPI) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	return do(ctx, a.c, cloudapi.OpUpdateLoadBalancer, id, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.UpdateLoadBalancer(ctx, id, update)
	}, nil)
}

func (a *loadBalancerAPI) DeleteLoadBalancer(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteLoadBalancer, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteLoadBalancer(ctx, id)
	}, nil)
	return err
}

// routeAPI injects faults into a RouteAPI.
type routeAPI struct {
	c     *Client
	inner cloudapi.RouteAPI
}

func (a *routeAPI) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return list(ctx, a.c, cloudapi.OpListRoutes, opts, a.inner.ListRoutes,
		func(p *cloudapi.RoutePage) ([]cloudapi.Route, string) { return p.Items, p.NextPageToken },
		cloudapi.Route.Clone,
		func(items []cloudapi.Route, next string) *cloudapi.RoutePage {
			return &cloudapi.RoutePage{Items: items, NextPageToken: next}
		})
}

func (a *routeAPI) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	return do(ctx, a.c, cloudapi.OpCreateRoute, "", func(ctx context.Context) (*cloudapi.Route, error) {
		return a.inner.CreateRoute(ctx, spec)
	}, nil)
}

// RoutesCarryNoTags answers for the wrapped RouteAPI (cloudapi.RoutesCarryNoTags).
func (a *routeAPI) RoutesCarryNoTags() bool { return cloudapi.RoutesCarryNoTags(a.inner) }

func (a *routeAPI) DeleteRoute(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteRoute, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteRoute(ctx, id)
	}, nil)
	return err
}

// targetGroupAPI injects faults into a TargetGroupAPI.
type targetGroupAPI struct {
	c     *Client
	inner cloudapi.TargetGroupAPI
}

func (a *targetGroupAPI) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return list(ctx, a.c, cloudapi.OpListTargetGroups, opts, a.inner.ListTargetGroups,
		func(p *cloudapi.TargetGroupPage) ([]cloudapi.TargetGroup, string) { return p.Items, p.NextPageToken },
		cloudapi.TargetGroup.Clone,
		func(items []cloudapi.TargetGroup, next string) *cloudapi.TargetGroupPage {
			return &cloudapi.TargetGroupPage{Items: items, NextPageToken: next}
		})
}

func (a *targetGroupAPI) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	return do(ctx, a.c, cloudapi.OpCreateTargetGroup, "", func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.CreateTargetGroup(ctx, spec)
	}, nil)
}

func (a *targetGroupAPI) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	return do(ctx, a.c, cloudapi.OpUpdateTargetGroup, id, func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.UpdateTargetGroup(ctx, id, update)
	}, nil)
}

func (a *targetGroupAPI) DeleteTargetGroup(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteTargetGroup, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteTargetGroup(ctx, id)
	}, nil)
	return err
}
