package paging

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"

	"k8s.io/klog/v2"

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

// NoAnswer is the error of a call about id (empty for a create) whose cloud client
// answered neither a result nor an error (an adapter's bug): an unknown answer
// (cloudapi.ErrTransient, as a lost one: a create may have been made), never a nil that a
// caller would dereference.
func NoAnswer(op cloudapi.Operation, id string) error {
	return cloudapi.NewError(cloudapi.ErrTransient, op, id, errNoAnswer)
}

// errNoAnswer is NoAnswer's cause.
var errNoAnswer = errors.New("the cloud client answered neither a result nor an error")

// Page fetches the page that token starts (the empty token is the first page) and returns
// its items and the token of the next page, empty on the last page.
type Page[T any] func(ctx context.Context, token string) (items []T, next string, err error)

// ID returns the cloud's ID of a listed item, the key All tells items apart by.
type ID[T any] func(*T) string

// The ID functions of the kinds of item ccmkit lists.
var (
	instanceID     ID[cloudapi.Instance]     = func(i *cloudapi.Instance) string { return i.ID }
	loadBalancerID ID[cloudapi.LoadBalancer] = func(lb *cloudapi.LoadBalancer) string { return lb.ID }
	routeID        ID[cloudapi.Route]        = func(rt *cloudapi.Route) string { return rt.ID }
	targetGroupID  ID[cloudapi.TargetGroup]  = func(g *cloudapi.TargetGroup) string { return g.ID }
)

// All fetches the pages of a list of op from the first until one has an empty next token
// and hands every item to each, in order, once: an item whose ID (id) an earlier page of
// the same list answered is skipped, so that no caller sees one resource twice (a cloud
// that pages by offset repeats an item when one is created between two page reads). An
// item without an ID is left out (and logged): it cannot be told apart from the one a
// caller keeps, nor updated or deleted by its ID. When each returns false, All stops there,
// without fetching further pages. It returns the number of pages fetched. The error of a
// fetch is returned wrapped with the page number, and never matches cloudapi.ErrNotFound:
// a list has no resource to not find, so a backend's not-found there (a 404 of the list
// endpoint, say) says nothing about any instance, load balancer or route; it becomes
// cloudapi.ErrTransient with its text kept. A token answered twice or a list past
// MaxPages pages ends with an error matching ErrBadPaging; ctx ending between pages ends
// it with an error matching ctx.Err().
func All[T any](ctx context.Context, op cloudapi.Operation, fetch Page[T], id ID[T], each func(*T) bool) (int, error) {
	tokens := newTokenSet()
	items := map[string]struct{}{}
	repeated, unnamed := 0, 0
	defer func() {
		if repeated > 0 {
			klog.FromContext(ctx).V(2).Info("The cloud answered items of a list more than once: each was handed over once", "operation", op, "repeated", repeated)
		}
		if unnamed > 0 {
			klog.FromContext(ctx).Info("The cloud answered items of a list without an ID: left out", "operation", op, "items", unnamed)
		}
	}()
	token := ""
	for pages := 1; ; pages++ {
		if pages > MaxPages {
			return pages - 1, fmt.Errorf("%w: the list is still not done after %d pages", ErrBadPaging, MaxPages)
		}
		if err := ctx.Err(); err != nil {
			return pages - 1, fmt.Errorf("before page %d: %w", pages, err)
		}
		page, next, err := fetch(ctx, token)
		if err != nil {
			return pages - 1, fmt.Errorf("page %d: %w", pages, neverNotFound(op, err))
		}
		for i := range page {
			key := id(&page[i])
			if key == "" {
				unnamed++
				continue
			}
			if _, dup := items[key]; dup {
				repeated++
				continue
			}
			items[key] = struct{}{}
			if !each(&page[i]) {
				return pages, nil
			}
		}
		if next == "" {
			return pages, nil
		}
		if !tokens.add(next) {
			return pages, fmt.Errorf("%w: page %d answered the next page token %.64q, which an earlier page of the same list answered", ErrBadPaging, pages, next)
		}
		token = next
	}
}

// tokenSet is the set of the page tokens one list has answered, kept as a 64-bit hash
// each (maphash, seeded afresh for every list), so that it holds at most MaxPages * 8
// bytes of keys however long the cloud's tokens are. A token answered twice is always
// found; two different tokens are taken for one only when their hashes collide, less
// than once in 10^11 lists of MaxPages pages, and a cloud cannot aim at it, since the
// seed is not its to know. The first page's token, the empty one, is never answered
// (it ends the list).
type tokenSet struct {
	seed maphash.Seed
	seen map[uint64]struct{}
}

func newTokenSet() tokenSet {
	return tokenSet{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
}

// add adds token and reports whether it was new.
func (s tokenSet) add(token string) bool {
	h := maphash.String(s.seed, token)
	if _, ok := s.seen[h]; ok {
		return false
	}
	s.seen[h] = struct{}{}
	return true
}

// neverNotFound returns err, the failure of a list call of op, so that it never matches
// cloudapi.ErrNotFound (see All); any other error is returned as it is.
func neverNotFound(op cloudapi.Operation, err error) error {
	if !errors.Is(err, cloudapi.ErrNotFound) {
		return err
	}
	return cloudapi.NewError(cloudapi.ErrTransient, op, "", fmt.Errorf("the list answered not found: %s", err.Error()))
}
