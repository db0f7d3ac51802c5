package paging_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// hostile answers every list from pages it holds, ignoring the tag filter, or with
// neither a page nor an error when it holds none.
type hostile struct {
	cloudapi.InstanceAPI
	cloudapi.LoadBalancerAPI
	cloudapi.RouteAPI
	cloudapi.TargetGroupAPI
	instances []cloudapi.InstancePage
	lbs       []cloudapi.LoadBalancerPage
	routes    []cloudapi.RoutePage
	groups    []cloudapi.TargetGroupPage
	asked     []cloudapi.ListOptions
}

// pageAt returns the page a token names ("" the first, "1" the second ...), nil when
// there are none, and records what was asked.
func pageAt[P any](h *hostile, pages []P, o cloudapi.ListOptions) *P {
	h.asked = append(h.asked, o)
	if len(pages) == 0 {
		return nil
	}
	i := 0
	if o.PageToken != "" {
		i = int(o.PageToken[0] - '0')
	}
	return &pages[i]
}

func (h *hostile) ListInstances(_ context.Context, o cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	return pageAt(h, h.instances, o), nil
}

func (h *hostile) ListLoadBalancers(_ context.Context, o cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	return pageAt(h, h.lbs, o), nil
}

func (h *hostile) ListRoutes(_ context.Context, o cloudapi.ListOptions) (*cloudapi.RoutePage, error) {
	return pageAt(h, h.routes, o), nil
}

func (h *hostile) ListTargetGroups(_ context.Context, o cloudapi.ListOptions) (*cloudapi.TargetGroupPage, error) {
	return pageAt(h, h.groups, o), nil
}

var mine = map[string]string{cloudapi.TagCluster: "c1"}

// TestListsWithoutAPageAreErrors: a list answered with neither a page nor an error fails
// with ErrTransient, for every kind: never a panic, never an empty list.
func TestListsWithoutAPageAreErrors(t *testing.T) {
	h := &hostile{}
	ctx := t.Context()
	each := func(string) bool { t.Error("an item handed over"); return true }
	lists := map[string]func() (int, error){
		"instances": func() (int, error) {
			return paging.Instances(ctx, h, 0, func(i *cloudapi.Instance) bool { return each(i.ID) })
		},
		"load balancers": func() (int, error) {
			return paging.LoadBalancers(ctx, h, mine, 0, func(lb *cloudapi.LoadBalancer) bool { return each(lb.ID) })
		},
		"routes": func() (int, error) {
			return paging.Routes(ctx, h, mine, 0, func(rt *cloudapi.Route) bool { return each(rt.ID) })
		},
		"target groups": func() (int, error) {
			return paging.TargetGroups(ctx, h, mine, 0, func(g *cloudapi.TargetGroup) bool { return each(g.ID) })
		},
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			_, err := list()
			require.ErrorIs(t, err, cloudapi.ErrTransient)
			assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
		})
	}
}

// TestListsCheckTheFilterThemselves: a backend that ignored the tag filter (answering
// another cluster's and untagged items) hands over only the items that carry every tag,
// each ID once, across pages, with the filter and page size asked of the backend.
func TestListsCheckTheFilterThemselves(t *testing.T) {
	other := map[string]string{cloudapi.TagCluster: "c2"}
	both := map[string]string{cloudapi.TagCluster: "c1", "extra": "x"}
	h := &hostile{
		lbs: []cloudapi.LoadBalancerPage{
			{Items: []cloudapi.LoadBalancer{{ID: "a", Spec: cloudapi.LoadBalancerSpec{Tags: mine}}, {ID: "b", Spec: cloudapi.LoadBalancerSpec{Tags: other}}}, NextPageToken: "1"},
			{Items: []cloudapi.LoadBalancer{{ID: "a", Spec: cloudapi.LoadBalancerSpec{Tags: mine}}, {ID: "c"}, {ID: "d", Spec: cloudapi.LoadBalancerSpec{Tags: both}}}},
		},
		routes: []cloudapi.RoutePage{{Items: []cloudapi.Route{{ID: "r1", RouteSpec: cloudapi.RouteSpec{Tags: other}}, {ID: "r2", RouteSpec: cloudapi.RouteSpec{Tags: mine}}}}},
		groups: []cloudapi.TargetGroupPage{{Items: []cloudapi.TargetGroup{{ID: "g1"}, {ID: "g2", Spec: cloudapi.TargetGroupSpec{Tags: mine}}}}},
		instances: []cloudapi.InstancePage{
			{Items: []cloudapi.Instance{{ID: "i1"}, {ID: "i2"}}, NextPageToken: "1"},
			{Items: []cloudapi.Instance{{ID: "i2"}, {ID: "i3"}}},
		},
	}
	ctx := t.Context()
	var got []string
	collect := func(id string) bool { got = append(got, id); return true }

	pages, err := paging.LoadBalancers(ctx, h, mine, 7, func(lb *cloudapi.LoadBalancer) bool { return collect(lb.ID) })
	require.NoError(t, err)
	assert.Equal(t, 2, pages)
	assert.Equal(t, []string{"a", "d"}, got)
	assert.Equal(t, []cloudapi.ListOptions{{Tags: mine, PageSize: 7}, {Tags: mine, PageSize: 7, PageToken: "1"}}, h.asked)

	got = nil
	_, err = paging.Routes(ctx, h, mine, 0, func(rt *cloudapi.Route) bool { return collect(rt.ID) })
	require.NoError(t, err)
	assert.Equal(t, []string{"r2"}, got)

	got = nil
	_, err = paging.TargetGroups(ctx, h, mine, 0, func(g *cloudapi.TargetGroup) bool { return collect(g.ID) })
	require.NoError(t, err)
	assert.Equal(t, []string{"g2"}, got)

	got = nil
	_, err = paging.Routes(ctx, h, nil, 0, func(rt *cloudapi.Route) bool { return collect(rt.ID) })
	require.NoError(t, err)
	assert.Equal(t, []string{"r1", "r2"}, got, "no filter: every route")

	got = nil
	_, err = paging.Instances(ctx, h, 0, func(i *cloudapi.Instance) bool { return collect(i.ID) })
	require.NoError(t, err)
	assert.Equal(t, []string{"i1", "i2", "i3"}, got, "each instance once")
}
