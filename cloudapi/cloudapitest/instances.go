package cloudapitest

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// pageSizes are the page sizes every listing is checked with; 1000 is larger than any
// set the suite creates, 0 is the backend's default.
var pageSizes = []int{1, 2, 7, 0, 1000}

func (s *suite) testInstances(t *testing.T) {
	t.Run("get returns the stored instance", func(t *testing.T) {
		fixture := s.makeInstances(14)
		api := s.backend(t, fixture).Instances()
		require.NotNil(t, api, "Client.Instances: broke \"It never returns nil\"")
		for _, want := range fixture {
			got, err := api.GetInstance(t.Context(), want.ID)
			require.NoErrorf(t, err, "GetInstance(%q) of a fixture instance", want.ID)
			require.NotNilf(t, got, "GetInstance(%q) returned nil and no error", want.ID)
			assert.Equalf(t, want, *got,
				"GetInstance(%q): broke \"returns the instance with the given cloud ID\": fields differ from the fixture", want.ID)
		}
	})

	t.Run("get and list return copies", func(t *testing.T) {
		fixture := s.makeInstances(3)
		api := s.backend(t, fixture).Instances()
		want := fixture[0]
		got, err := api.GetInstance(t.Context(), want.ID)
		require.NoError(t, err)
		scribble(got)
		page, err := api.ListInstances(t.Context(), cloudapi.ListOptions{})
		require.NoError(t, err)
		for i := range page.Items {
			scribble(&page.Items[i])
		}
		again, err := api.GetInstance(t.Context(), want.ID)
		require.NoError(t, err)
		assert.Equal(t, want, *again,
			"GetInstance: the backend's instance changed when a caller changed an instance it got: answers must be copies")
	})

	t.Run("get unknown is not found", func(t *testing.T) {
		api := s.backend(t, s.makeInstances(3)).Instances()
		got, err := api.GetInstance(t.Context(), s.unknownInstanceID())
		requireClass(t, err, cloudapi.ErrNotFound,
			"GetInstance of an unknown ID: broke \"returns an error matching ErrNotFound ... when the cloud is certain that no such instance exists\"")
		assert.Nil(t, got, "GetInstance returned an instance along with its error")
	})

	t.Run("get with canceled context is not not-found", func(t *testing.T) {
		api := s.backend(t, s.makeInstances(3)).Instances()
		_, err := api.GetInstance(canceledContext(t), s.unknownInstanceID())
		requireNotNotFound(t, err, "GetInstance of an unknown ID")
		_, err = api.ListInstances(canceledContext(t), cloudapi.ListOptions{})
		requireNotNotFound(t, err, "ListInstances")
	})

	t.Run("list pagination", func(t *testing.T) {
		fixture := s.makeInstances(53)
		api := s.backend(t, fixture).Instances()
		want := byID(fixture, instID)
		wantIDs := slices.SortedFunc(maps.Keys(want), s.opts.order)
		for _, size := range pageSizes {
			t.Run(fmt.Sprintf("page size %d", size), func(t *testing.T) {
				got := listAll(t, cloudapi.OpListInstances, listInstances(api), instID, s.opts.order,
					cloudapi.ListOptions{PageSize: size}, len(fixture))
				require.Equalf(t, wantIDs, ids(got, instID),
					"ListInstances: broke \"returns one page of the instances\" paged to the end: not every instance exactly once, in ID order")
				for _, inst := range got {
					assert.Equalf(t, want[inst.ID], inst, "ListInstances: instance %q differs from the fixture", inst.ID)
				}
			})
		}
	})

	t.Run("list tag filter", func(t *testing.T) {
		fixture := s.makeInstances(30)
		api := s.backend(t, fixture).Instances()
		filters := []map[string]string{
			{"role": "worker"},
			{"role": "control-plane", "pool": "a"},
			{cloudapi.TagCluster: "contract", "pool": "b"},
			{"pool": "c", "role": "worker", cloudapi.TagCluster: "contract"},
			{"role": "nobody"},
			{"no-such-key": ""},
			{},
		}
		for _, filter := range filters {
			var wantIDs []string
			for _, inst := range fixture {
				if cloudapi.MatchTags(inst.Tags, filter) {
					wantIDs = append(wantIDs, inst.ID)
				}
			}
			slices.SortFunc(wantIDs, s.opts.order)
			for _, size := range []int{2, 0} {
				got := listAll(t, cloudapi.OpListInstances, listInstances(api), instID, s.opts.order,
					cloudapi.ListOptions{Tags: filter, PageSize: size}, len(fixture))
				assert.Equalf(t, wantIDs, ids(got, instID),
					"ListInstances with Tags %v, page size %d: broke \"returns one page of the instances that carry every tag in opts.Tags\"", filter, size)
			}
		}
	})

	t.Run("list empty", func(t *testing.T) {
		api := s.backend(t, nil).Instances()
		for _, filter := range []map[string]string{nil, {"role": "worker"}} {
			page, err := api.ListInstances(t.Context(), cloudapi.ListOptions{Tags: filter})
			require.NoError(t, err, "ListInstances of an empty set")
			require.NotNil(t, page, "ListInstances returned a nil page and no error")
			assert.Empty(t, page.Items, "ListInstances of a backend without instances returned instances")
			assert.Emptyf(t, page.NextPageToken,
				"ListInstances of an empty set, Tags %v: broke \"An empty NextPageToken means the last page\": the only page has a token", filter)
		}
	})
}

// scribble changes every field of inst that a backend could share with its own state.
func scribble(inst *cloudapi.Instance) {
	inst.Name = "scribbled"
	if len(inst.Addresses) > 0 {
		inst.Addresses[0].Address = "192.0.2.255"
	}
	if inst.Tags != nil {
		for k := range inst.Tags {
			inst.Tags[k] = "scribbled"
		}
		inst.Tags["scribbled"] = "yes"
	}
}
