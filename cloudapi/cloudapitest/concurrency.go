package cloudapitest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Shape of the concurrency check: workers goroutines, half readers and half writers, each
// making iterations rounds of calls.
const (
	workers    = 16
	iterations = 8
)

func (s *suite) testConcurrency(t *testing.T) {
	t.Run("mixed reads and writes stay consistent", func(t *testing.T) {
		fixture := s.makeInstances(20)
		client := s.backend(t, fixture)
		instances := client.Instances()
		lbs, hasLBs := client.LoadBalancers()
		routes, hasRoutes := client.Routes()

		var shared *cloudapi.LoadBalancer
		if hasLBs {
			shared = s.waitActive(t, lbs, s.createLB(t, lbs, s.lbSpec("ct-conc-shared")))
		}
		c := &concurrent{suite: s, fixture: byID(fixture, instID), instances: instances, lbs: lbs, routes: routes, shared: shared}

		errs := make([][]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				ctx := t.Context()
				for i := range iterations {
					var err error
					if w%2 == 0 {
						err = c.read(ctx, i)
					} else {
						err = c.write(ctx, w, i)
					}
					if err != nil {
						errs[w] = append(errs[w], fmt.Errorf("worker %d, round %d: %w", w, i, err))
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(slices.Concat(errs...)...),
			"concurrent calls: broke \"Implementations must be safe for concurrent use by many goroutines ... also for the same resource\"")

		// Consistency: every instance as it was, every writer's last load balancer and
		// route present with its last update, nothing deleted left over, and the shared
		// load balancer as one writer left it.
		got := listAll(t, cloudapi.OpListInstances, listInstances(instances), instID, c.suite.opts.order, cloudapi.ListOptions{}, len(fixture))
		require.Len(t, got, len(fixture), "ListInstances after concurrent calls")
		for _, inst := range got {
			assert.Equal(t, c.fixture[inst.ID], inst, "ListInstances after concurrent calls: an instance changed")
		}
		if hasLBs {
			all := s.listAllLBs(t, lbs, cloudapi.ListOptions{}, workers*iterations+1)
			want := map[string]cloudapi.LoadBalancerSpec{shared.ID: shared.Spec}
			c.mu.Lock()
			maps.Copy(want, c.kept)
			c.mu.Unlock()
			require.ElementsMatch(t, slices.Collect(maps.Keys(want)), ids(all, lbID),
				"ListLoadBalancers after concurrent creates, updates and deletes: not exactly the load balancers that were created and not deleted")
			for _, lb := range all {
				if lb.ID == shared.ID {
					continue
				}
				s.requireSpec(t, want[lb.ID], lb.Spec, "load balancer %q after concurrent writes: the last update is lost", lb.ID)
			}
			final, err := lbs.GetLoadBalancer(t.Context(), shared.ID)
			require.NoError(t, err)
			writer := final.Spec.Tags["last-writer"]
			require.NotEmpty(t, writer, "shared load balancer after concurrent updates: no update was stored")
			expect := shared.Spec.Clone()
			expect.Tags["last-writer"] = writer
			s.requireSpec(t, expect, final.Spec,
				"shared load balancer after concurrent updates: broke \"Methods ... may be called concurrently, also for the same resource\": the result is not any one caller's update")
		}
		if hasRoutes {
			all := listAll(t, cloudapi.OpListRoutes, listRoutes(routes), routeID, c.suite.opts.order, cloudapi.ListOptions{}, workers*iterations)
			var cidrs []string
			for _, r := range all {
				cidrs = append(cidrs, r.DestinationCIDR)
			}
			c.mu.Lock()
			wantCIDRs := slices.Clone(c.keptRoutes)
			c.mu.Unlock()
			assert.ElementsMatch(t, wantCIDRs, cidrs,
				"ListRoutes after concurrent creates and deletes: not exactly the routes that were created and not deleted")
		}
	})
}

// concurrent is the state shared by the goroutines of the concurrency check.
type concurrent struct {
	suite     *suite
	fixture   map[string]cloudapi.Instance
	instances cloudapi.InstanceAPI
	lbs       cloudapi.LoadBalancerAPI
	routes    cloudapi.RouteAPI
	shared    *cloudapi.LoadBalancer

	mu         sync.Mutex
	kept       map[string]cloudapi.LoadBalancerSpec // the last spec of every load balancer not deleted
	keptRoutes []string                             // destination CIDRs of routes not deleted
}

// read makes one round of reads and checks what it gets. It never fails the test itself.
func (c *concurrent) read(ctx context.Context, round int) error {
	id := c.suite.instanceID(round % len(c.fixture))
	inst, err := c.instances.GetInstance(ctx, id)
	if err != nil {
		return fmt.Errorf("GetInstance(%q): %w", id, err)
	}
	if !reflect.DeepEqual(c.fixture[id], *inst) {
		return fmt.Errorf("GetInstance(%q) under concurrent calls: got %+v, want %+v", id, *inst, c.fixture[id])
	}
	all, err := newPager(cloudapi.OpListInstances, listInstances(c.instances), instID, c.suite.opts.order, cloudapi.ListOptions{PageSize: 3}).
		all(ctx, len(c.fixture))
	if err != nil {
		return err
	}
	if len(all) != len(c.fixture) {
		return fmt.Errorf("ListInstances under concurrent calls: %d instances, want %d", len(all), len(c.fixture))
	}
	if c.lbs != nil {
		lb, err := c.lbs.GetLoadBalancer(ctx, c.shared.ID)
		if err != nil {
			return fmt.Errorf("GetLoadBalancer of the shared load balancer under concurrent updates: %w", err)
		}
		if lb.Status != cloudapi.LoadBalancerActive {
			return fmt.Errorf("GetLoadBalancer of the shared load balancer under concurrent updates: status %q", lb.Status)
		}
		if _, err := newPager(cloudapi.OpListLoadBalancers, listLoadBalancers(c.lbs), lbID, c.suite.opts.order, cloudapi.ListOptions{PageSize: 2}).
			all(ctx, workers*iterations+1); err != nil {
			return err
		}
	}
	if c.routes != nil {
		if _, err := newPager(cloudapi.OpListRoutes, listRoutes(c.routes), routeID, c.suite.opts.order, cloudapi.ListOptions{PageSize: 2}).
			all(ctx, workers*iterations); err != nil {
			return err
		}
	}
	return nil
}

// write creates, updates and (but in the last round) deletes a load balancer and a route
// of its own, and updates the shared load balancer.
func (c *concurrent) write(ctx context.Context, worker, round int) error {
	last := round == iterations-1
	if c.lbs != nil {
		if err := c.writeLB(ctx, worker, round, last); err != nil {
			return err
		}
	}
	if c.routes != nil {
		spec := c.suite.routeSpec(fmt.Sprintf("10.%d.%d.0/24", 200+worker, round), round%4)
		r, err := c.routes.CreateRoute(ctx, spec)
		if err == nil {
			err = checkRoute(c.routes, spec, r)
		}
		if err != nil {
			return fmt.Errorf("CreateRoute(%s): %w", spec.DestinationCIDR, err)
		}
		if last {
			c.mu.Lock()
			c.keptRoutes = append(c.keptRoutes, spec.DestinationCIDR)
			c.mu.Unlock()
		} else if err := c.routes.DeleteRoute(ctx, r.ID); err != nil {
			return fmt.Errorf("DeleteRoute(%q): %w", r.ID, err)
		}
	}
	return nil
}

func (c *concurrent) writeLB(ctx context.Context, worker, round int, last bool) error {
	spec := c.suite.lbSpec(fmt.Sprintf("ct-conc-w%02d-r%02d", worker, round))
	lb, err := c.suite.createLBErr(ctx, c.lbs, spec)
	if err != nil {
		return err
	}
	desired := lb.Spec.Clone()
	desired.Tags["round"] = strconv.Itoa(round)
	desired.Targets = append(desired.Targets, c.suite.instanceID(2))
	updated, err := c.lbs.UpdateLoadBalancer(ctx, lb.ID,
		cloudapi.LoadBalancerUpdate{Spec: desired.Clone(), Changes: cloudapi.DiffLoadBalancer(lb.Spec, desired)})
	if err != nil {
		return fmt.Errorf("UpdateLoadBalancer(%q) under concurrent calls: %w", lb.ID, err)
	}
	if err := c.suite.checkSpec(desired, updated.Spec); err != nil {
		return fmt.Errorf("UpdateLoadBalancer(%q) under concurrent calls: %w", lb.ID, err)
	}
	got, err := c.lbs.GetLoadBalancer(ctx, lb.ID)
	if err != nil {
		return fmt.Errorf("GetLoadBalancer(%q) after update under concurrent calls: %w", lb.ID, err)
	}
	if err := c.suite.checkSpec(desired, got.Spec); err != nil {
		return fmt.Errorf("GetLoadBalancer(%q) after update under concurrent calls: %w", lb.ID, err)
	}
	if last {
		c.mu.Lock()
		if c.kept == nil {
			c.kept = map[string]cloudapi.LoadBalancerSpec{}
		}
		c.kept[lb.ID] = desired
		c.mu.Unlock()
	} else if err := c.lbs.DeleteLoadBalancer(ctx, lb.ID); err != nil {
		return fmt.Errorf("DeleteLoadBalancer(%q) under concurrent calls: %w", lb.ID, err)
	}

	// Update the shared load balancer from what this writer read.
	cur, err := c.lbs.GetLoadBalancer(ctx, c.shared.ID)
	if err != nil {
		return fmt.Errorf("GetLoadBalancer of the shared load balancer: %w", err)
	}
	want := c.shared.Spec.Clone()
	want.Tags["last-writer"] = fmt.Sprintf("w%02d-r%02d", worker, round)
	if _, err := c.lbs.UpdateLoadBalancer(ctx, c.shared.ID,
		cloudapi.LoadBalancerUpdate{Spec: want, Changes: cloudapi.DiffLoadBalancer(cur.Spec, want)}); err != nil {
		return fmt.Errorf("UpdateLoadBalancer of the shared load balancer: %w", err)
	}
	return nil
}
