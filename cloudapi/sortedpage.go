package cloudapi

import (
	"context"
	"fmt"
	"slices"
)

// MaxCloudPages bounds the pages SortedPage reads of a cloud's list: a cloud whose page
// tokens never end fails the list instead of spinning.
const MaxCloudPages = 10_000

// SortedPage is a page of ccmkit's list (ListOptions: items ordered by ID, a token that
// continues after the page's last item) over a cloud whose list can neither sort by ID
// nor filter by tag: it reads every page of the cloud's list with read (given the
// cloud's token, "" for the first; answering its items and the next token, "" after the
// last), keeps the items whose tags (tags) carry opts.Tags, and returns those after
// opts.PageToken in ID order (byte-wise, as strings compare), at most opts.PageSize of them (zero: all), with the token of
// the next page ("" for the last).
//
// The cloud's pages may come in any order and repeat an item (an offset shifted by a
// create between two page reads): each ID is returned once, as the last copy read that
// carries the tags (a stale copy without them does not hide it); an item without an ID
// is left out. The token is the ID of the page's last item, so a page after a change
// neither repeats nor skips an item that stayed. Each page of ccmkit's list reads the
// cloud's whole list: every request after a call's first is an extra request, so read
// passes each request through ccmkit's gate (Transport, or Request before it), which
// waits for the rate limiter and counts it. A cloud token answered twice, more than
// MaxCloudPages pages or a ctx that ends between two pages fails with ErrTransient for op;
// an error of read is returned wrapped.
func SortedPage[T any](ctx context.Context, op Operation, opts ListOptions, read func(ctx context.Context, token string) ([]T, string, error), id func(T) string, tags func(T) map[string]string) ([]T, string, error) {
	latest := map[string]T{}
	seen := map[string]bool{}
	for token, page := "", 1; ; page++ {
		if page > MaxCloudPages {
			return nil, "", NewError(ErrTransient, op, "", fmt.Errorf("the cloud's list is not done after %d pages", MaxCloudPages))
		}
		if err := ctx.Err(); err != nil {
			return nil, "", NewError(ErrTransient, op, "", err)
		}
		items, next, err := read(ctx, token)
		if err != nil {
			return nil, "", fmt.Errorf("page %d of the cloud's list: %w", page, err)
		}
		for _, it := range items {
			if k := id(it); k != "" && MatchTags(tags(it), opts.Tags) {
				latest[k] = it
			}
		}
		if next == "" {
			break
		}
		if seen[next] {
			return nil, "", NewError(ErrTransient, op, "", fmt.Errorf("page %d of the cloud's list answered the token %.64q, which an earlier page answered", page, next))
		}
		seen[next] = true
		token = next
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for k := range latest {
			if k > opts.PageToken && !yield(k) {
				return
			}
		}
	})
	next := ""
	if opts.PageSize > 0 && len(ids) > opts.PageSize {
		ids = ids[:opts.PageSize]
		next = ids[len(ids)-1]
	}
	out := make([]T, len(ids))
	for i, k := range ids {
		out[i] = latest[k]
	}
	return out, next, nil
}
