package faultinject

import (
	"context"

	"github.com/ccmkit/ccmkit/cloudapi"
)

var (
	_ cloudapi.InstanceAPI     = (*instanceAPI)(nil)
	_ cloudapi.LoadBalancerAPI = (*loadBalancerAPI)(nil)
	_ cloudapi.RouteAPI        = (*routeAPI)(nil)
)

// instanceAPI injects faults into an InstanceAPI.
type instanceAPI struct {
	c     *Client
	inner cloudapi.InstanceAPI
}

func (a *instanceAPI) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return do(ctx, a.c, cloudapi.OpGetInstance, id, func(ctx context.Context) (*cloudapi.Instance, error) {
		return a.inner.GetInstance(ctx, id)
	})
}

func (a *instanceAPI) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return do(ctx, a.c, cloudapi.OpListInstances, "", func(ctx context.Context) (*cloudapi.InstancePage, error) {
		return a.inner.ListInstances(ctx, opts)
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
	})
}

func (a *loadBalancerAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return do(ctx, a.c, cloudapi.OpListLoadBalancers, "", func(ctx context.Context) (*cloudapi.LoadBalancerPage, error) {
		return a.inner.ListLoadBalancers(ctx, opts)
	})
}

func (a *loadBalancerAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	return do(ctx, a.c, cloudapi.OpCreateLoadBalancer, "", func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.CreateLoadBalancer(ctx, spec)
	})
}

func (a *loadBalancerAPI) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	return do(ctx, a.c, cloudapi.OpUpdateLoadBalancer, id, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.UpdateLoadBalancer(ctx, id, update)
	})
}

func (a *loadBalancerAPI) DeleteLoadBalancer(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteLoadBalancer, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteLoadBalancer(ctx, id)
	})
	return err
}

// routeAPI injects faults into a RouteAPI.
type routeAPI struct {
	c     *Client
	inner cloudapi.RouteAPI
}

func (a *routeAPI) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return do(ctx, a.c, cloudapi.OpListRoutes, "", func(ctx context.Context) (*cloudapi.RoutePage, error) {
		return a.inner.ListRoutes(ctx, opts)
	})
}

func (a *routeAPI) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	return do(ctx, a.c, cloudapi.OpCreateRoute, "", func(ctx context.Context) (*cloudapi.Route, error) {
		return a.inner.CreateRoute(ctx, spec)
	})
}

func (a *routeAPI) DeleteRoute(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteRoute, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteRoute(ctx, id)
	})
	return err
}

// targetGroupAPI injects faults into a TargetGroupAPI.
type targetGroupAPI struct {
	c     *Client
	inner cloudapi.TargetGroupAPI
}

func (a *targetGroupAPI) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return do(ctx, a.c, cloudapi.OpListTargetGroups, "", func(ctx context.Context) (*cloudapi.TargetGroupPage, error) {
		return a.inner.ListTargetGroups(ctx, opts)
	})
}

func (a *targetGroupAPI) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	return do(ctx, a.c, cloudapi.OpCreateTargetGroup, "", func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.CreateTargetGroup(ctx, spec)
	})
}

func (a *targetGroupAPI) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	return do(ctx, a.c, cloudapi.OpUpdateTargetGroup, id, func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.UpdateTargetGroup(ctx, id, update)
	})
}

func (a *targetGroupAPI) DeleteTargetGroup(ctx context.Context, id string) error {
	_, err := do(ctx, a.c, cloudapi.OpDeleteTargetGroup, id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteTargetGroup(ctx, id)
	})
	return err
}
