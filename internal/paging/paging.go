package paging

import (
	"context"
	"errors"
	"fmt"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// MaxPages is the most pages one list may take. It is far past any sane list: 10,000
// pages are 5 million items at a page size of 500, or 10,000 at a cloud that answers one
// item a page. A list that needs more is a cloud handing out page tokens without end.
const MaxPages = 10_000

// ErrBadPaging is matched (errors.Is) by the error of a list the cloud paged wrongly: a
// page token answered twice, or more than MaxPages pages.
var ErrBadPaging = errors.New("the cloud's page tokens do not end")

// NoPage is the error of a list whose cloud answered neither a page nor an error: an
// unknown answer (cloudapi.ErrTransient), never an empty list, so that nothing is taken
// for gone and the caller does not dereference a nil page.
func NoPage(op cloudapi.Operation) error {
	return cloudapi.NewError(cloudapi.ErrTransient, op, "", errors.New("the cloud answered neither a page nor an error"))
}

// Page fetches the page that token starts (the empty token is the first page) and returns
// its items and the token of the next page, empty on the last page.
type Page[T any] func(ctx context.Context, token string) (items []T, next string, err error)

// All fetches the pages of a list of op from the first until one has an empty next token
// and hands every item to each, in order; when each returns false, All stops there,
// without fetching further pages. It returns the number of pages fetched. The error of a
// fetch is returned wrapped with the page number, and never matches cloudapi.ErrNotFound:
// a list has no resource to not find, so a backend's not-found there (a 404 of the list
// endpoint, say) says nothing about any instance, load balancer or route; it becomes
// cloudapi.ErrTransient with its text kept. A token answered twice or a list past
// MaxPages pages ends with an error matching ErrBadPaging; ctx ending between pages ends
// it with an error matching ctx.Err().
func All[T any](ctx context.Context, op cloudapi.Operation, fetch Page[T], each func(*T) bool) (int, error) {
	seen := map[string]bool{"": true}
	token := ""
	for pages := 1; ; pages++ {
		if pages > MaxPages {
			return pages - 1, fmt.Errorf("%w: the list is still not done after %d pages", ErrBadPaging, MaxPages)
		}
		if err := ctx.Err(); err != nil {
			return pages - 1, fmt.Errorf("before page %d: %w", pages, err)
		}
		items, next, err := fetch(ctx, token)
		if err != nil {
			return pages - 1, fmt.Errorf("page %d: %w", pages, neverNotFound(op, err))
		}
		for i := range items {
			if !each(&items[i]) {
				return pages, nil
			}
		}
		if next == "" {
			return pages, nil
		}
		if seen[next] {
			return pages, fmt.Errorf("%w: page %d answered the next page token %.64q, which an earlier page of the same list answered", ErrBadPaging, pages, next)
		}
		seen[next] = true
		token = next
	}
}

// neverNotFound returns err, the failure of a list call of op, so that it never matches
// cloudapi.ErrNotFound (see All); any other error is returned as it is.
func neverNotFound(op cloudapi.Operation, err error) error {
	if !errors.Is(err, cloudapi.ErrNotFound) {
		return err
	}
	return cloudapi.NewError(cloudapi.ErrTransient, op, "", fmt.Errorf("the list answered not found: %s", err.Error()))
}
