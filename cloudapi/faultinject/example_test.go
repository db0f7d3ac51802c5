package faultinject_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

// memCloud is a minimal in-memory cloud for the examples: one instance and routes.
type memCloud struct {
	mu     sync.Mutex
	routes []cloudapi.Route
}

func (c *memCloud) Instances() cloudapi.InstanceAPI                 { return c }
func (c *memCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return nil, false }
func (c *memCloud) Routes() (cloudapi.RouteAPI, bool)               { return c, true }

func (c *memCloud) GetInstance(_ context.Context, id string) (*cloudapi.Instance, error) {
	if id != "i-1" {
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, nil)
	}
	return &cloudapi.Instance{ID: "i-1", Name: "node-1", State: cloudapi.InstanceRunning}, nil
}

func (c *memCloud) ListInstances(context.Context, cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	inst, _ := c.GetInstance(context.Background(), "i-1")
	return &cloudapi.InstancePage{Items: []cloudapi.Instance{*inst}}, nil
}

func (c *memCloud) ListRoutes(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	page := &cloudapi.RoutePage{}
	for _, r := range c.routes {
		if cloudapi.MatchTags(r.Tags, opts.Tags) {
			page.Items = append(page.Items, r.Clone())
		}
	}
	return page, nil
}

func (c *memCloud) CreateRoute(_ context.Context, spec cloudapi.RouteSpec) (*cloudapi.Route, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := cloudapi.Route{ID: "rt-" + strconv.Itoa(len(c.routes)+1), RouteSpec: spec}
	c.routes = append(c.routes, r)
	r = r.Clone()
	return &r, nil
}

func (c *memCloud) DeleteRoute(context.Context, string) error { return nil }

// A create whose answer is lost, on a cloud whose list calls fail half the time: the
// caller must find the route it created instead of creating a second one.
func Example() {
	ctx := context.Background()
	chaos := faultinject.Wrap(&memCloud{}, faultinject.Config{
		Seed: 7,
		Rules: []faultinject.Rule{
			{Ops: []cloudapi.Operation{cloudapi.OpListRoutes}, Probability: 0.5, Kind: faultinject.Transient},
		},
	})
	// The next CreateRoute is applied, but its caller gets a timeout.
	chaos.Script(cloudapi.OpCreateRoute, faultinject.Fault{Kind: faultinject.Ambiguous})

	routes, _ := chaos.Routes()
	owner := map[string]string{cloudapi.TagNode: "node-1"}
	_, err := routes.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-1", Tags: owner})
	fmt.Println("create:", cloudapi.ClassOf(err))

	// The outcome is unknown: look the route up by its tags (retrying the read) before
	// creating it again.
	var page *cloudapi.RoutePage
	for {
		if page, err = routes.ListRoutes(ctx, cloudapi.ListOptions{Tags: owner}); err == nil {
			break
		}
	}
	fmt.Println("routes found:", len(page.Items))

	counts := chaos.Injected().Ops[cloudapi.OpCreateRoute]
	fmt.Printf("CreateRoute: %d call, %d passed to the cloud, %d ambiguous\n",
		counts.Calls, counts.Passed, counts.Faults[faultinject.Ambiguous])
	// Output:
	// create: transient failure
	// routes found: 1
	// CreateRoute: 1 call, 1 passed to the cloud, 1 ambiguous
}

// Scripted faults answer the next calls of an operation in order, before any rule.
func ExampleClient_Script() {
	ctx := context.Background()
	chaos := faultinject.Wrap(&memCloud{}, faultinject.Config{ThrottleRetryAfter: 2 * time.Second})
	chaos.Script(cloudapi.OpGetInstance,
		faultinject.Fault{Kind: faultinject.Throttle},
		faultinject.Fault{}, // passes untouched
		faultinject.Fault{Err: cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, "i-1", nil)},
	)
	for range 4 {
		inst, err := chaos.Instances().GetInstance(ctx, "i-1")
		if err != nil {
			retryAfter, _ := cloudapi.RetryAfter(err)
			fmt.Println("error:", cloudapi.ClassOf(err), "retry after:", retryAfter)
			continue
		}
		fmt.Println("instance:", inst.Name)
	}
	// Output:
	// error: throttled retry after: 2s
	// instance: node-1
	// error: not found retry after: 0s
	// instance: node-1
}
