package loadbalancer_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// shiftingCloud is a cloud whose lists are paged by page number: while the project
// changes, a list of the cluster's load balancers (by the cluster tag alone) misses one,
// as a page shifted by a delete does. A list by a Service's owner tags is one short page
// and misses nothing.
type shiftingCloud struct {
	cloudapi.Client
	missing atomic.Value // the ID a cluster-wide list leaves out; "" for none
}

func (c *shiftingCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return shiftingLBs{api, c}, ok
}

type shiftingLBs struct {
	cloudapi.LoadBalancerAPI
	c *shiftingCloud
}

func (a shiftingLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	page, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
	if _, byService := opts.Tags[cloudapi.TagService]; page != nil && !byService {
		missing, _ := a.c.missing.Load().(string)
		page.Items = slices.DeleteFunc(page.Items, func(lb cloudapi.LoadBalancer) bool { return lb.ID == missing })
	}
	return page, err
}

// TestPageShiftMakesNoSecondLoadBalancer: a list of the cluster's load balancers that
// misses one (page-number paging while the project changes) never makes ccmkit create a
// second load balancer for its Service or lose the first: a Service's load balancer is
// read by its owner tags before anything is created or updated.
func TestPageShiftMakesNoSecondLoadBalancer(t *testing.T) {
	sc := &shiftingCloud{}
	sc.missing.Store("")
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client { sc.Client = c; return sc })
	var svcs []*corev1.Service
	for i := range 3 {
		svc := newService(fmt.Sprintf("web-%d", i))
		e.ensure(t, svc, e.nodes)
		svcs = append(svcs, svc)
	}
	lbs := e.cloud.Inventory().LoadBalancers
	require.Len(t, lbs, 3)
	sc.missing.Store(lbs[1].ID)

	for round := range 3 {
		e.expire()
		nodes := e.nodes[:len(e.nodes)-round] // a Node goes each round: a node sync for every Service
		for _, svc := range svcs {
			require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes))
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
			require.NoError(t, err)
			st, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
			require.NoError(t, err)
			assert.True(t, exists)
			assert.NotEmpty(t, st.Ingress)
		}
		after := e.cloud.Inventory().LoadBalancers
		require.Len(t, after, 3, "round %d: no second load balancer, none lost", round)
		for _, lb := range after {
			assert.Len(t, lb.Spec.Targets, len(nodes), "round %d: load balancer %s follows the nodes", round, lb.ID)
		}
	}
	assert.Zero(t, e.cloud.Calls()[cloudapi.OpDeleteLoadBalancer])
	assert.Equal(t, int64(3), e.cloud.Calls()[cloudapi.OpCreateLoadBalancer])
}
