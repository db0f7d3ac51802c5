package cloudapitest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// routeBackend builds a backend with a few instances to route to and returns its route
// API, or skips t when the backend has none.
func (s *suite) routeBackend(t *testing.T) cloudapi.RouteAPI {
	t.Helper()
	api, ok := s.backend(t, s.makeInstances(4)).Routes()
	if !ok {
		t.Skip("Client.Routes reports that the cloud has no programmable routes")
	}
	require.NotNil(t, api, "Client.Routes returned true and a nil API")
	return api
}

// ipv6Route returns an IPv6 destination for i, or, for a backend whose routes are IPv4
// only (WithIPv4RoutesOnly), an IPv4 one of a range the suite uses nowhere else.
func (s *suite) ipv6Route(prefix string, i int) string {
	if s.opts.ipv4RoutesOnly {
		return fmt.Sprintf("10.247.%d.0/24", i)
	}
	return fmt.Sprintf("%s:%x::/64", prefix, i)
}

// routeSpec returns a route of cidr to one of the fixture's instances, owned by the
// contract cluster.
func (s *suite) routeSpec(cidr string, target int) cloudapi.RouteSpec {
	node := fmt.Sprintf("node-%04d", target)
	return cloudapi.RouteSpec{
		Name:             "ct-" + node,
		DestinationCIDR:  cidr,
		TargetInstanceID: s.instanceID(target),
		Tags:             map[string]string{cloudapi.TagCluster: contractCluster, cloudapi.TagNode: node},
	}
}

// checkRoute checks a route as the cloud stored it against the spec it was created from.
// The name is not compared: "A cloud may ignore it or make it unique". A route API whose
// routes carry no tags (cloudapi.RoutesCarryNoTags) returns it without tags.
func checkRoute(api cloudapi.RouteAPI, spec cloudapi.RouteSpec, got *cloudapi.Route) error {
	wantTags := spec.Tags
	if cloudapi.RoutesCarryNoTags(api) {
		wantTags = nil
	}
	switch {
	case got == nil:
		return fmt.Errorf("CreateRoute(%s) returned nil and no error", spec.DestinationCIDR)
	case got.ID == "":
		return fmt.Errorf("CreateRoute(%s): the route has no ID", spec.DestinationCIDR)
	case got.DestinationCIDR != spec.DestinationCIDR || got.TargetInstanceID != spec.TargetInstanceID:
		return fmt.Errorf("CreateRoute: broke \"returns it as the cloud stored it\": sent %+v, stored %+v", spec, got.RouteSpec)
	case !maps.Equal(got.Tags, wantTags) && wantTags == nil:
		return fmt.Errorf("CreateRoute: broke \"CreateRoute drops RouteSpec.Tags; every route it returns or lists has no tags\" (cloudapi.TaglessRouteAPI): stored %v", got.Tags)
	case !maps.Equal(got.Tags, wantTags):
		return fmt.Errorf("CreateRoute: broke \"returns it as the cloud stored it\": sent %+v, stored %+v", spec, got.RouteSpec)
	}
	return nil
}

func createRoute(t testing.TB, api cloudapi.RouteAPI, spec cloudapi.RouteSpec) *cloudapi.Route {
	t.Helper()
	r, err := api.CreateRoute(t.Context(), spec)
	require.NoErrorf(t, err, "CreateRoute(%s) of a valid route", spec.DestinationCIDR)
	require.NoError(t, checkRoute(api, spec, r))
	return r
}

func (s *suite) testRoutes(t *testing.T) {
	t.Run("create list delete round trip", func(t *testing.T) {
		api := s.routeBackend(t)
		for _, tc := range []struct{ name, cidr string }{
			{"IPv4", "10.244.3.0/24"},
			{"IPv6", "fd00:10:244:3::/64"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				spec := s.routeSpec(tc.cidr, 1)
				if tc.name == "IPv6" && s.opts.ipv4RoutesOnly {
					_, err := api.CreateRoute(t.Context(), spec)
					requireClass(t, err, cloudapi.ErrInvalidRequest, "CreateRoute of an IPv6 route on a backend whose routes are IPv4 only (WithIPv4RoutesOnly)")
					return
				}
				created := createRoute(t, api, spec)
				spec.Tags[cloudapi.TagNode] = "scribbled" // the backend must have copied the spec

				all := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 1)
				require.Len(t, all, 1, "ListRoutes after CreateRoute")
				assert.Equal(t, *created, all[0], "ListRoutes: the route differs from the one CreateRoute returned")
				all[0].DestinationCIDR = "192.0.2.0/24"
				if all[0].Tags != nil {
					all[0].Tags[cloudapi.TagNode] = "scribbled"
				}
				again := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 1)
				assert.Equal(t, *created, again[0],
					"ListRoutes: the backend's route changed when a caller changed one it got: answers must be copies")

				require.NoError(t, api.DeleteRoute(t.Context(), created.ID), "DeleteRoute of an existing route")
				assert.Empty(t, listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 1),
					"ListRoutes after DeleteRoute: broke \"DeleteRoute deletes the route\"")
				requireClass(t, api.DeleteRoute(t.Context(), created.ID), cloudapi.ErrNotFound,
					"DeleteRoute twice: broke \"returns an error matching ErrNotFound when there was nothing to delete\"")
			})
		}
	})

	t.Run("duplicate destination is a conflict", func(t *testing.T) {
		api := s.routeBackend(t)
		first := createRoute(t, api, s.routeSpec("10.244.1.0/24", 1))
		_, err := api.CreateRoute(t.Context(), s.routeSpec("10.244.1.0/24", 2))
		requireClass(t, err, cloudapi.ErrConflict,
			"CreateRoute of an existing destination CIDR: broke \"returns an error matching ErrConflict when a route for the same destination CIDR exists\"")
		all := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 2)
		assert.Equal(t, []string{first.ID}, ids(all, routeID), "CreateRoute refused with ErrConflict: broke \"The request was not applied\"")
	})

	t.Run("malformed CIDR or unknown target is an invalid request", func(t *testing.T) {
		api := s.routeBackend(t)
		for _, tc := range []struct {
			name string
			spec cloudapi.RouteSpec
		}{
			{"empty CIDR", s.routeSpec("", 1)},
			{"not a CIDR", s.routeSpec("not-a-cidr", 1)},
			{"IPv4 prefix length 33", s.routeSpec("10.244.0.0/33", 1)},
			{"prefix length 129", s.routeSpec(map[bool]string{false: "fd00::/129", true: "10.244.0.0/129"}[s.opts.ipv4RoutesOnly], 1)},
			{"address without prefix length", s.routeSpec("10.244.0.0", 1)},
			{"unknown target instance", func() cloudapi.RouteSpec {
				spec := s.routeSpec("10.244.9.0/24", 1)
				spec.TargetInstanceID = s.unknownInstanceID()
				return spec
			}()},
		} {
			_, err := api.CreateRoute(t.Context(), tc.spec)
			requireClass(t, err, cloudapi.ErrInvalidRequest,
				"CreateRoute with %s (%q): broke \"ErrInvalidRequest for a malformed CIDR or unknown target\"", tc.name, tc.spec.DestinationCIDR)
		}
		assert.Empty(t, listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 6),
			"CreateRoute refused with ErrInvalidRequest created a route anyway")
	})

	t.Run("unknown ID is not found", func(t *testing.T) {
		api := s.routeBackend(t)
		requireClass(t, api.DeleteRoute(t.Context(), "route-contract-does-not-exist"), cloudapi.ErrNotFound,
			"DeleteRoute of an unknown ID: broke \"returns an error matching ErrNotFound when there was nothing to delete\"")
	})

	t.Run("canceled context is not not-found", func(t *testing.T) {
		api := s.routeBackend(t)
		requireNotNotFound(t, api.DeleteRoute(canceledContext(t), "route-contract-does-not-exist"), "DeleteRoute of an unknown ID")
		_, err := api.ListRoutes(canceledContext(t), cloudapi.ListOptions{})
		requireNotNotFound(t, err, "ListRoutes")
	})

	t.Run("tag filter", func(t *testing.T) {
		api := s.routeBackend(t)
		var all []cloudapi.Route
		for i := range 12 {
			spec := s.routeSpec(fmt.Sprintf("10.244.%d.0/24", i), i%4)
			if i%3 == 0 {
				spec.Tags[cloudapi.TagCluster] = "other"
			}
			all = append(all, *createRoute(t, api, spec))
		}
		for _, filter := range []map[string]string{
			{cloudapi.TagCluster: contractCluster},
			{cloudapi.TagCluster: contractCluster, cloudapi.TagNode: "node-0001"},
			{cloudapi.TagCluster: "other", cloudapi.TagNode: "node-0000"},
			{cloudapi.TagCluster: "nobody"},
			{},
		} {
			var want []string
			for _, r := range all {
				if cloudapi.MatchTags(r.Tags, filter) {
					want = append(want, r.ID)
				}
			}
			slices.SortFunc(want, s.opts.order)
			for _, size := range []int{2, 0} {
				got := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{Tags: filter, PageSize: size}, len(all))
				assert.Equalf(t, want, ids(got, routeID),
					"ListRoutes with Tags %v, page size %d: broke \"returns one page of the routes that carry every tag in opts.Tags\"", filter, size)
			}
		}
	})

	t.Run("list pagination", func(t *testing.T) {
		api := s.routeBackend(t)
		const n = 120
		want := map[string]cloudapi.Route{}
		for i := range n {
			r := createRoute(t, api, s.routeSpec(fmt.Sprintf("10.%d.%d.0/24", 100+i/200, i%200), i%4))
			want[r.ID] = *r
		}
		wantIDs := slices.SortedFunc(maps.Keys(want), s.opts.order)
		require.Len(t, wantIDs, n, "CreateRoute: route IDs repeat")
		for _, size := range []int{7, 1, 0, 1000} {
			got := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{PageSize: size}, n)
			require.Equalf(t, wantIDs, ids(got, routeID),
				"ListRoutes, page size %d, paged to the end: not every route exactly once, in ID order", size)
			for _, r := range got {
				assert.Equal(t, want[r.ID], r, "ListRoutes: the route differs from the one CreateRoute returned")
			}
		}
	})

	t.Run("list pagination over a changing set", func(t *testing.T) {
		api := s.routeBackend(t)
		var created []string
		for i := range 12 {
			created = append(created, createRoute(t, api, s.routeSpec(fmt.Sprintf("10.244.%d.0/24", i), i%4)).ID)
		}
		checkChangingSet(t, s.opts, cloudapi.OpListRoutes, listRoutes(api), routeID, created,
			func(id string) error { return api.DeleteRoute(t.Context(), id) },
			func(i int) (string, error) {
				spec := s.routeSpec(fmt.Sprintf("10.245.%d.0/24", i), i%4)
				r, err := api.CreateRoute(t.Context(), spec)
				if err != nil {
					return "", err
				}
				return r.ID, checkRoute(api, spec, r)
			})
	})

	t.Run("routes without tags", func(t *testing.T) {
		api := s.routeBackend(t)
		if !cloudapi.RoutesCarryNoTags(api) {
			t.Skip("the backend's routes carry tags (cloudapi.RoutesCarryNoTags is false)")
		}
		ours := createRoute(t, api, s.routeSpec("10.244.1.0/24", 1))
		theirs := s.routeSpec("10.250.0.0/24", 2)
		theirs.Tags = map[string]string{cloudapi.TagCluster: "other"}
		other := createRoute(t, api, theirs)
		for range 2 {
			got := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 2)
			assert.Equal(t, []cloudapi.Route{*ours, *other}, sortedRoutes(got),
				"ListRoutes without Tags: broke \"ListRoutes returns every route of the table, whoever made it\" or \"the same route has the same ID in every answer\" (cloudapi.TaglessRouteAPI)")
		}
		for _, filter := range []map[string]string{{cloudapi.TagCluster: contractCluster}, {cloudapi.TagCluster: "other"}} {
			assert.Emptyf(t, listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{Tags: filter}, 2),
				"ListRoutes with Tags %v: broke \"a non-empty ListOptions.Tags selects none, as no route carries a tag\" (cloudapi.TaglessRouteAPI)", filter)
		}
		require.NoError(t, api.DeleteRoute(t.Context(), other.ID), "DeleteRoute by the ID the adapter synthesized")
		got := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{}, 1)
		assert.Equal(t, []cloudapi.Route{*ours}, got, "DeleteRoute deleted another route, or none")
	})

	t.Run("concurrent creates", func(t *testing.T) {
		api := s.routeBackend(t)
		const n = 32
		specs := make([]cloudapi.RouteSpec, n)
		for i := range n {
			specs[i] = s.routeSpec(fmt.Sprintf("10.246.%d.0/24", i), i%4)
			if i%2 == 1 {
				specs[i] = s.routeSpec(s.ipv6Route("fd00:10:246", i), i%4)
			}
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, err := api.CreateRoute(t.Context(), specs[i])
				if err == nil {
					err = checkRoute(api, specs[i], r)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoErrorf(t, err, "concurrent CreateRoute(%s) of distinct destinations", specs[i].DestinationCIDR)
		}
		got := listAll(t, cloudapi.OpListRoutes, listRoutes(api), routeID, s.opts.order, cloudapi.ListOptions{PageSize: 5}, n)
		var gotCIDRs, wantCIDRs []string
		for _, r := range got {
			gotCIDRs = append(gotCIDRs, r.DestinationCIDR)
		}
		for _, spec := range specs {
			wantCIDRs = append(wantCIDRs, spec.DestinationCIDR)
		}
		assert.ElementsMatch(t, wantCIDRs, gotCIDRs,
			"ListRoutes after concurrent CreateRoute: broke \"Implementations must be safe for concurrent use by many goroutines\"")
	})
}

// sortedRoutes returns rts ordered by ID.
func sortedRoutes(rts []cloudapi.Route) []cloudapi.Route {
	return slices.SortedFunc(slices.Values(rts), func(a, b cloudapi.Route) int { return strings.Compare(a.ID, b.ID) })
}
