package cloudapitest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// groupBackend builds a backend with a few instances and returns its target group and
// load balancer APIs, or skips t when the backend has no target groups (see
// cloudapi.TargetGroups). lbs is nil when the backend has no load balancers.
func (s *suite) groupBackend(t *testing.T) (cloudapi.TargetGroupAPI, cloudapi.LoadBalancerAPI) {
	t.Helper()
	c := s.backend(t, s.makeInstances(6))
	groups, ok := cloudapi.TargetGroups(c)
	if !ok {
		t.Skip("the client is no cloudapi.TargetGroupClient, or reports that the cloud has no target groups")
	}
	lbs, ok := c.LoadBalancers()
	if !ok {
		lbs = nil
	}
	return groups, lbs
}

// groupSpec returns a group of the contract cluster holding the fixture's instances with
// the given indexes.
func (s *suite) groupSpec(name string, targets ...int) cloudapi.TargetGroupSpec {
	spec := cloudapi.TargetGroupSpec{Name: name, Tags: map[string]string{cloudapi.TagCluster: contractCluster, "contract/group": name}}
	for _, i := range targets {
		spec.Targets = append(spec.Targets, s.instanceID(i))
	}
	return spec
}

// checkGroup checks a group as the cloud answered it against the spec it should hold:
// targets as a set, tags exactly.
func checkGroup(what string, want cloudapi.TargetGroupSpec, got *cloudapi.TargetGroup) error {
	switch {
	case got == nil:
		return fmt.Errorf("%s returned nil and no error", what)
	case got.ID == "":
		return fmt.Errorf("%s: the group has no ID", what)
	}
	if u := cloudapi.DiffTargetGroup(want, got.Spec); !u.Empty() || !maps.Equal(want.Tags, got.Spec.Tags) {
		return fmt.Errorf("%s: broke \"returns it as the cloud stored it\": sent %+v, stored %+v", what, want, got.Spec)
	}
	return nil
}

func createGroup(t testing.TB, api cloudapi.TargetGroupAPI, spec cloudapi.TargetGroupSpec) *cloudapi.TargetGroup {
	t.Helper()
	given := spec.Clone()
	g, err := api.CreateTargetGroup(t.Context(), given)
	require.NoErrorf(t, err, "CreateTargetGroup(%q) of a valid spec", spec.Name)
	require.Equal(t, spec, given, "CreateTargetGroup: broke \"the spec a write is given is the caller's, read only\"")
	require.NoError(t, checkGroup("CreateTargetGroup", spec, g))
	return g
}

func listGroups(api cloudapi.TargetGroupAPI) lister[cloudapi.TargetGroup] {
	return func(ctx context.Context, opts cloudapi.ListOptions) ([]cloudapi.TargetGroup, string, error) {
		p, err := api.ListTargetGroups(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			return nil, "", errors.New("ListTargetGroups returned a nil page and no error")
		}
		return p.Items, p.NextPageToken, nil
	}
}

func groupID(g cloudapi.TargetGroup) string { return g.ID }

// allGroups lists every group that carries tags, page by page.
func (s *suite) allGroups(t testing.TB, api cloudapi.TargetGroupAPI, tags map[string]string, pageSize int) []cloudapi.TargetGroup {
	t.Helper()
	p := newPager(cloudapi.OpListTargetGroups, listGroups(api), groupID, s.opts.order, cloudapi.ListOptions{Tags: tags, PageSize: pageSize})
	got, err := p.all(t.Context(), 100)
	require.NoError(t, err)
	return got
}

// testTargetGroups checks cloudapi.TargetGroupAPI, when the backend offers it.
func (s *suite) testTargetGroups(t *testing.T) {
	t.Run("create list update delete round trip", func(t *testing.T) {
		api, _ := s.groupBackend(t)
		spec := s.groupSpec("ct-group", 0, 2)
		g := createGroup(t, api, spec)

		listed := s.allGroups(t, api, map[string]string{cloudapi.TagCluster: contractCluster}, 0)
		require.Equal(t, []string{g.ID}, ids(listed, groupID), "ListTargetGroups by the cluster tag")
		require.NoError(t, checkGroup("ListTargetGroups", spec, &listed[0]))

		want := spec.Clone()
		want.Targets = []string{s.instanceID(2), s.instanceID(3), s.instanceID(4)}
		u := cloudapi.DiffTargetGroup(spec, want)
		assert.Equal(t, []string{s.instanceID(3), s.instanceID(4)}, u.AddTargets)
		assert.Equal(t, []string{s.instanceID(0)}, u.RemoveTargets)
		given := cloudapi.DiffTargetGroup(spec, want.Clone()) // slices of its own, so that a write into them shows
		got, err := api.UpdateTargetGroup(t.Context(), g.ID, given)
		require.NoError(t, err, "UpdateTargetGroup of a valid update")
		require.Equal(t, u, given, "UpdateTargetGroup: broke \"the update a write is given is the caller's, read only\"")
		require.NoError(t, checkGroup("UpdateTargetGroup", want, got))
		assert.Equal(t, g.ID, got.ID, "UpdateTargetGroup: the same group")
		listed = s.allGroups(t, api, map[string]string{cloudapi.TagCluster: contractCluster}, 0)
		require.Len(t, listed, 1)
		require.NoError(t, checkGroup("ListTargetGroups after UpdateTargetGroup", want, &listed[0]))

		empty := want.Clone()
		empty.Targets = nil
		got, err = api.UpdateTargetGroup(t.Context(), g.ID, cloudapi.DiffTargetGroup(want, empty))
		require.NoError(t, err, "a group without members is valid")
		assert.Empty(t, got.Spec.Targets)

		require.NoError(t, api.DeleteTargetGroup(t.Context(), g.ID))
		assert.Empty(t, s.allGroups(t, api, map[string]string{cloudapi.TagCluster: contractCluster}, 0), "deleted")
		err = api.DeleteTargetGroup(t.Context(), g.ID)
		assert.Truef(t, cloudapi.IsNotFound(err), "DeleteTargetGroup of a deleted group: broke \"ErrNotFound when the group does not exist\": %v", err)
		_, err = api.UpdateTargetGroup(t.Context(), g.ID, cloudapi.DiffTargetGroup(want, want))
		assert.Truef(t, cloudapi.IsNotFound(err), "UpdateTargetGroup of a deleted group: %v", err)
	})

	t.Run("duplicate name is a conflict", func(t *testing.T) {
		api, _ := s.groupBackend(t)
		createGroup(t, api, s.groupSpec("ct-dup", 0))
		_, err := api.CreateTargetGroup(t.Context(), s.groupSpec("ct-dup", 1))
		assert.Truef(t, errors.Is(err, cloudapi.ErrConflict), "CreateTargetGroup of a taken name: broke \"ErrConflict when a group with the same name exists\": %v", err)
	})

	t.Run("unknown instance is an invalid request", func(t *testing.T) {
		api, _ := s.groupBackend(t)
		spec := s.groupSpec("ct-bad")
		spec.Targets = []string{"i-contract-no-such"}
		_, err := api.CreateTargetGroup(t.Context(), spec)
		assert.Truef(t, errors.Is(err, cloudapi.ErrInvalidRequest), "CreateTargetGroup with an unknown instance: %v", err)
	})

	t.Run("tag filter and pagination", func(t *testing.T) {
		api, _ := s.groupBackend(t)
		var mine []string
		for i := range 9 {
			spec := s.groupSpec(fmt.Sprintf("ct-page-%d", i), i%6)
			if i%3 == 0 {
				spec.Tags[cloudapi.TagCluster] = "another"
			} else {
				mine = append(mine, createGroup(t, api, spec).ID)
				continue
			}
			createGroup(t, api, spec)
		}
		got := ids(s.allGroups(t, api, map[string]string{cloudapi.TagCluster: contractCluster}, 2), groupID)
		assert.Equal(t, slices.SortedFunc(slices.Values(mine), s.opts.order), got, "ListTargetGroups by the cluster tag, 2 a page: every group of the cluster once, by ID")
	})

	t.Run("a group a load balancer uses is not deleted", func(t *testing.T) {
		api, lbs := s.groupBackend(t)
		if lbs == nil {
			t.Skip("the cloud has no load balancers")
		}
		g := createGroup(t, api, s.groupSpec("ct-used", 0, 1))
		spec := s.lbSpec("ct-grouped", func(s *cloudapi.LoadBalancerSpec) { s.Targets, s.TargetGroup = nil, g.ID })
		lb := s.createLB(t, lbs, spec)
		assert.Equal(t, g.ID, lb.Spec.TargetGroup)

		err := api.DeleteTargetGroup(t.Context(), g.ID)
		assert.Truef(t, errors.Is(err, cloudapi.ErrConflict), "DeleteTargetGroup of a group a load balancer names: broke \"ErrConflict while a load balancer names it\": %v", err)
		require.Len(t, s.allGroups(t, api, map[string]string{cloudapi.TagCluster: contractCluster}, 0), 1, "the group is still there")

		both := spec.Clone()
		both.Targets = []string{s.instanceID(2)}
		_, err = lbs.CreateLoadBalancer(t.Context(), func() cloudapi.LoadBalancerSpec { both.Name = "ct-both"; return both }())
		assert.Truef(t, errors.Is(err, cloudapi.ErrInvalidRequest), "CreateLoadBalancer with a target group and targets of its own: %v", err)
		missing := s.lbSpec("ct-missing", func(s *cloudapi.LoadBalancerSpec) { s.Targets, s.TargetGroup = nil, "tg-contract-no-such" })
		_, err = lbs.CreateLoadBalancer(t.Context(), missing)
		assert.Truef(t, errors.Is(err, cloudapi.ErrInvalidRequest), "CreateLoadBalancer naming a group that does not exist: %v", err)

		require.NoError(t, lbs.DeleteLoadBalancer(t.Context(), lb.ID))
		require.NoError(t, api.DeleteTargetGroup(t.Context(), g.ID), "a group no load balancer names any more")
	})

	t.Run("canceled context is not not-found", func(t *testing.T) {
		api, _ := s.groupBackend(t)
		g := createGroup(t, api, s.groupSpec("ct-cancel", 0))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := api.ListTargetGroups(ctx, cloudapi.ListOptions{})
		assert.Error(t, err)
		assert.False(t, cloudapi.IsNotFound(err), "ListTargetGroups with a canceled context: %v", err)
		err = api.DeleteTargetGroup(ctx, g.ID)
		assert.Error(t, err)
		assert.False(t, cloudapi.IsNotFound(err), "DeleteTargetGroup with a canceled context: %v", err)
	})
}
