package cloudclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
)

// Client is a cloudapi.Client that rate-limits, retries, times and counts every call of
// the client it wraps; see the package documentation for the policy. It is safe for
// concurrent use, and all its operations share one rate limit and one Retry-After hold.
type Client struct {
	opts    Options // with defaults
	metrics *clientMetrics

	instances instanceAPI
	lbs       *loadBalancerAPI // nil when the inner client has no load balancers
	routes    *routeAPI        // nil when the inner client has no routes
	groups    *targetGroupAPI  // nil when the inner client has no target groups

	mu sync.Mutex
	// notBefore is when the last throttled answer allows the next call; zero before any.
	notBefore time.Time
	// The rest is the adaptive rate limit, used only when opts.limited().
	bucket pace.Bucket
	// gen counts rate decreases; a call whose slot was taken before the latest decrease
	// takes a new one.
	gen int
	// base is the rate right after the latest decrease at decreasedAt (zero: none yet);
	// from there the rate grows linearly back to opts.QPS.
	base        float64
	decreasedAt time.Time
}

var (
	_ cloudapi.Client            = (*Client)(nil)
	_ cloudapi.InstanceAPI       = instanceAPI{}
	_ cloudapi.LoadBalancerAPI   = (*loadBalancerAPI)(nil)
	_ cloudapi.TaglessRouteAPI   = (*routeAPI)(nil)
	_ cloudapi.TargetGroupClient = (*Client)(nil)
	_ cloudapi.TargetGroupAPI    = (*targetGroupAPI)(nil)
)

// New returns a Client around inner. It asks inner for its APIs once, here: inner's
// Instances must not be nil, and an API whose capability is reported must not be nil.
// It validates opts (every problem at once, joined with errors.Join) and registers the
// metrics with opts.Registry. It makes no cloud call and starts no goroutine.
func New(inner cloudapi.Client, opts Options) (*Client, error) {
	if inner == nil {
		return nil, errors.New("cloud client: inner client is nil")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("cloud client options: %w", err)
	}
	opts = opts.withDefaults()

	c := &Client{opts: opts}
	var errs []error
	if api := inner.Instances(); api != nil {
		c.instances = instanceAPI{c: c, inner: api}
	} else {
		errs = append(errs, errors.New("inner client returned a nil InstanceAPI"))
	}
	if api, ok := inner.LoadBalancers(); ok {
		if api == nil {
			errs = append(errs, errors.New("inner client reported load balancers but returned a nil LoadBalancerAPI"))
		}
		c.lbs = &loadBalancerAPI{c: c, inner: api}
	}
	if api, ok := inner.Routes(); ok {
		if api == nil {
			errs = append(errs, errors.New("inner client reported routes but returned a nil RouteAPI"))
		}
		c.routes = &routeAPI{c: c, inner: api}
	}
	if api, ok := cloudapi.TargetGroups(inner); ok {
		c.groups = &targetGroupAPI{c: c, inner: api}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cloud client: %w", errors.Join(errs...))
	}

	reg := opts.Registry
	if reg == nil {
		reg = RegistererFunc(legacyregistry.Register)
	}
	m, err := newClientMetrics(reg, metricName(opts.ProviderName))
	if err != nil {
		return nil, fmt.Errorf("cloud client: %w", err)
	}
	c.metrics = m

	if opts.limited() {
		c.bucket.Set(opts.QPS, opts.Burst)
	}
	return c, nil
}

// Instances returns the instance API of the inner client, wrapped.
func (c *Client) Instances() cloudapi.InstanceAPI { return c.instances }

// LoadBalancers returns the load balancer API of the inner client, wrapped, and true, or
// (nil, false) when the inner client has none.
func (c *Client) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	if c.lbs == nil {
		return nil, false
	}
	return c.lbs, true
}

// Routes returns the route API of the inner client, wrapped, and true, or (nil, false)
// when the inner client has none.
func (c *Client) Routes() (cloudapi.RouteAPI, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// TargetGroups returns the target group API of the inner client, wrapped, and true, or
// (nil, false) when the inner client has none (cloudapi.TargetGroups). It makes the Client
// a cloudapi.TargetGroupClient.
func (c *Client) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	if c.groups == nil {
		return nil, false
	}
	return c.groups, true
}

// instanceAPI wraps an InstanceAPI.
type instanceAPI struct {
	c     *Client
	inner cloudapi.InstanceAPI
}

func (a instanceAPI) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return call(ctx, a.c, cloudapi.OpGetInstance, "id", id, func(ctx context.Context) (*cloudapi.Instance, error) {
		return a.inner.GetInstance(ctx, id)
	})
}

func (a instanceAPI) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return call(ctx, a.c, cloudapi.OpListInstances, "", "", func(ctx context.Context) (*cloudapi.InstancePage, error) {
		return a.inner.ListInstances(ctx, opts)
	})
}

// loadBalancerAPI wraps a LoadBalancerAPI.
type loadBalancerAPI struct {
	c     *Client
	inner cloudapi.LoadBalancerAPI
}

func (a *loadBalancerAPI) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	return call(ctx, a.c, cloudapi.OpGetLoadBalancer, "id", id, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.GetLoadBalancer(ctx, id)
	})
}

func (a *loadBalancerAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return call(ctx, a.c, cloudapi.OpListLoadBalancers, "", "", func(ctx context.Context) (*cloudapi.LoadBalancerPage, error) {
		return a.inner.ListLoadBalancers(ctx, opts)
	})
}

// CreateLoadBalancer is retried only on ErrThrottled. Its log and error name spec.Name.
func (a *loadBalancerAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	return call(ctx, a.c, cloudapi.OpCreateLoadBalancer, "name", spec.Name, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		return a.inner.CreateLoadBalancer(ctx, spec)
	})
}

// UpdateLoadBalancer is retried on transient failures. An attempt whose outcome is
// unknown (a transient error or a timeout: it may have been applied) is not simply
// repeated: update.Changes described the difference from the caller's last read, and after
// an applied attempt that difference is gone, so an adapter with fine-grained calls would
// repeat changes that are already made. Before the retry, outside the attempt and its
// rate-limit slot, the load balancer is read again (a GetLoadBalancer call of its own,
// rate limited, retried and counted as such) and the retry sends the changes from that
// read, with the read as update.Current; when none are left, the read is the result. A
// failed re-read ends the update with the read's error.
func (a *loadBalancerAPI) UpdateLoadBalancer(ctx context.Context, id string, update cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	unknown := false // an earlier attempt may have been applied
	reread := func(ctx context.Context) (*cloudapi.LoadBalancer, bool, error) {
		if !unknown {
			return nil, false, nil
		}
		current, err := a.GetLoadBalancer(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("UpdateLoadBalancer %s: reading it again after an attempt of unknown outcome: %w", id, err)
		}
		update.Changes = cloudapi.DiffLoadBalancer(a.c.opts.LoadBalancerShape.Comparable(current.Spec, update.Spec), update.Spec)
		update.Current = current
		unknown = false
		return current, update.Changes.Empty(), nil
	}
	return callWith(ctx, a.c, cloudapi.OpUpdateLoadBalancer, "id", id, func(ctx context.Context) (*cloudapi.LoadBalancer, error) {
		lb, err := a.inner.UpdateLoadBalancer(ctx, id, update)
		if err != nil && (errors.Is(err, cloudapi.ErrTransient) || cloudapi.ClassOf(err) == nil) {
			unknown = true
		}
		return lb, err
	}, reread)
}

// DeleteLoadBalancer is retried on transient failures; an ErrNotFound after an earlier
// attempt with an unknown outcome is returned as ErrNotFound ("already gone").
func (a *loadBalancerAPI) DeleteLoadBalancer(ctx context.Context, id string) error {
	_, err := call(ctx, a.c, cloudapi.OpDeleteLoadBalancer, "id", id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteLoadBalancer(ctx, id)
	})
	return err
}

// routeAPI wraps a RouteAPI.
type routeAPI struct {
	c     *Client
	inner cloudapi.RouteAPI
}

func (a *routeAPI) ListRoutes(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return call(ctx, a.c, cloudapi.OpListRoutes, "", "", func(ctx context.Context) (*cloudapi.RoutePage, error) {
		return a.inner.ListRoutes(ctx, opts)
	})
}

// CreateRoute is retried only on ErrThrottled. Its log and error name spec's destination.
func (a *routeAPI) CreateRoute(ctx context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	return call(ctx, a.c, cloudapi.OpCreateRoute, "destination", spec.DestinationCIDR, func(ctx context.Context) (*cloudapi.Route, error) {
		return a.inner.CreateRoute(ctx, spec)
	})
}

// RoutesCarryNoTags answers for the wrapped RouteAPI (cloudapi.RoutesCarryNoTags).
func (a *routeAPI) RoutesCarryNoTags() bool { return cloudapi.RoutesCarryNoTags(a.inner) }

// DeleteRoute is retried on transient failures, like DeleteLoadBalancer.
func (a *routeAPI) DeleteRoute(ctx context.Context, id string) error {
	_, err := call(ctx, a.c, cloudapi.OpDeleteRoute, "id", id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteRoute(ctx, id)
	})
	return err
}

// targetGroupAPI wraps a TargetGroupAPI.
type targetGroupAPI struct {
	c     *Client
	inner cloudapi.TargetGroupAPI
}

func (a *targetGroupAPI) ListTargetGroups(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return call(ctx, a.c, cloudapi.OpListTargetGroups, "", "", func(ctx context.Context) (*cloudapi.TargetGroupPage, error) {
		return a.inner.ListTargetGroups(ctx, opts)
	})
}

// CreateTargetGroup is retried only on ErrThrottled, like CreateLoadBalancer.
func (a *targetGroupAPI) CreateTargetGroup(ctx context.Context, spec cloudapi.TargetGroupSpec) (*cloudapi.TargetGroup, error) {
	return call(ctx, a.c, cloudapi.OpCreateTargetGroup, "name", spec.Name, func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.CreateTargetGroup(ctx, spec)
	})
}

// UpdateTargetGroup is retried only on ErrThrottled: after an attempt of unknown outcome
// its AddTargets and RemoveTargets may be applied already, and there is no get by ID to
// re-base them on.
func (a *targetGroupAPI) UpdateTargetGroup(ctx context.Context, id string, update cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	return call(ctx, a.c, cloudapi.OpUpdateTargetGroup, "id", id, func(ctx context.Context) (*cloudapi.TargetGroup, error) {
		return a.inner.UpdateTargetGroup(ctx, id, update)
	})
}

// DeleteTargetGroup is retried on transient failures, like DeleteLoadBalancer.
func (a *targetGroupAPI) DeleteTargetGroup(ctx context.Context, id string) error {
	_, err := call(ctx, a.c, cloudapi.OpDeleteTargetGroup, "id", id, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.inner.DeleteTargetGroup(ctx, id)
	})
	return err
}
