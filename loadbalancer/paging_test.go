package loadbalancer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/paging"
)

// A cloud whose page tokens cycle (a→b→a) ends every list of the load balancer with a
// clear error after three pages: the snapshot's list by the cluster tag and the fresh
// read by owner tags alike. Before, only a token repeated at once was caught, and a cycle
// spun without end.
func TestPageTokenCycleEndsEveryList(t *testing.T) {
	lb, m := newMockLoadBalancer(t)
	pages := 0
	m.EXPECT().ListLoadBalancers(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
			pages++
			return mockPage(map[string]string{"": "a", "a": "b", "b": "a"}[opts.PageToken]), nil
		}).AnyTimes()

	_, err := lb.EnsureLoadBalancer(t.Context(), "c", mockService(), mockNodes())
	require.ErrorIs(t, err, paging.ErrBadPaging)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Equal(t, 6, pages, "the snapshot's list, then the read by owner tags it falls back to: the first page, a, b, then a again ends each")

	pages = 0
	_, _, err = lb.GetLoadBalancer(t.Context(), "c", mockService())
	require.ErrorIs(t, err, paging.ErrBadPaging, "the read by owner tags")
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound, "never \"the Service has no load balancer\"")
	assert.Equal(t, 3, pages)
}
