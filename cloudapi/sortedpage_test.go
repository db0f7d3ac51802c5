package cloudapi_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// item is an item of a cloud's list: an ID and tags.
type item struct {
	id   string
	tags map[string]string
}

// unsortedCloud answers its pages in the order given, each page's token its index; every
// request passes ccmkit's gate (Request).
func unsortedCloud(pages ...[]item) func(ctx context.Context, token string) ([]item, string, error) {
	return func(ctx context.Context, token string) ([]item, string, error) {
		if err := cloudapi.Request(ctx); err != nil {
			return nil, "", err
		}
		i := 0
		if token != "" {
			i, _ = strconv.Atoi(token)
		}
		next := ""
		if i+1 < len(pages) {
			next = strconv.Itoa(i + 1)
		}
		return pages[i], next, nil
	}
}

// TestSortedPage: a cloud's pages in any order, with items repeated (a stale copy
// without the tags read before and after the current one) and one of another cluster, are ccmkit's pages: the cluster's items
// once each in ID order, a token after each page's last, every cloud page after the
// first through the gate.
func TestSortedPage(t *testing.T) {
	ours, theirs := map[string]string{"c": "a"}, map[string]string{"c": "b"}
	read := unsortedCloud(
		[]item{{"d", ours}, {"b", nil}, {"x", theirs}},
		[]item{{"a", ours}, {"", ours}, {"b", ours}},
		[]item{{"c", ours}, {"d", ours}, {"a", nil}},
	)
	id := func(i item) string { return i.id }
	tags := func(i item) map[string]string { return i.tags }
	gated := 0
	ctx := cloudapi.WithRequestGate(t.Context(), func(context.Context) error { gated++; return nil })

	var got []string
	opts := cloudapi.ListOptions{Tags: ours, PageSize: 3}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		items, next, err := cloudapi.SortedPage(ctx, cloudapi.OpListLoadBalancers, opts, read, id, tags)
		require.NoError(t, err)
		for _, it := range items {
			got = append(got, it.id)
		}
		if next == "" {
			break
		}
		opts.PageToken = next
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, got)
	assert.Equal(t, 6, gated, "three cloud pages for each of two pages: each request through the gate")

	all, next, err := cloudapi.SortedPage(ctx, cloudapi.OpListLoadBalancers, cloudapi.ListOptions{}, read, id, tags)
	require.NoError(t, err)
	assert.Empty(t, next, "page size zero: one page")
	assert.Len(t, all, 5)

	after, _, err := cloudapi.SortedPage(ctx, cloudapi.OpListLoadBalancers, cloudapi.ListOptions{Tags: ours, PageToken: "b"}, read, id, tags)
	require.NoError(t, err)
	assert.Equal(t, []item{{"c", ours}, {"d", ours}}, after, "after the token's ID: an item gone before it moves nothing")
}

// TestSortedPageFails: a cloud token answered twice, an error of a page, and a context
// that ended fail the list, never a part of it.
func TestSortedPageFails(t *testing.T) {
	id := func(i item) string { return i.id }
	tags := func(i item) map[string]string { return i.tags }
	loop := func(context.Context, string) ([]item, string, error) { return []item{{"a", nil}}, "same", nil }
	_, _, err := cloudapi.SortedPage(t.Context(), cloudapi.OpListInstances, cloudapi.ListOptions{}, loop, id, tags)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.ErrorContains(t, err, `answered the token "same", which an earlier page answered`)

	cause := cloudapi.NewError(cloudapi.ErrThrottled, cloudapi.OpListInstances, "", errors.New("slow down"))
	pages := 0
	failing := func(context.Context, string) ([]item, string, error) {
		if pages++; pages == 2 {
			return nil, "", cause
		}
		return []item{{"a", nil}}, "p" + strconv.Itoa(pages), nil
	}
	_, _, err = cloudapi.SortedPage(t.Context(), cloudapi.OpListInstances, cloudapi.ListOptions{}, failing, id, tags)
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	assert.ErrorContains(t, err, "page 2 of the cloud's list")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = cloudapi.SortedPage(ctx, cloudapi.OpListInstances, cloudapi.ListOptions{}, unsortedCloud([]item{{"a", nil}}), id, tags)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
}
