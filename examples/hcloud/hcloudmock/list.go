package hcloudmock

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// sortKeys are the fields a list sorts by (its sort parameter: "id", "name:desc", ...).
type sortKeys[T any] map[string]func(a, b T) int

// list answers a list request over items (filtered, in ID order) as the API does: sorted
// by every sort parameter in turn, then cut into the page that page and per_page ask for,
// under key beside meta.pagination.
func list[T any](r *http.Request, key string, items []T, keys sortKeys[T]) (int, any, *apiError) {
	q := r.URL.Query()
	var cmps []func(a, b T) int
	for _, sort := range q["sort"] {
		field, dir, _ := strings.Cut(sort, ":")
		f, ok := keys[field]
		if !ok || (dir != "" && dir != "asc" && dir != "desc") {
			return 0, nil, invalidField("sort", "cannot sort by %q", sort)
		}
		if dir == "desc" {
			f = func(a, b T) int { return keys[field](b, a) }
		}
		cmps = append(cmps, f)
	}
	slices.SortStableFunc(items, func(a, b T) int {
		for _, f := range cmps {
			if c := f(a, b); c != 0 {
				return c
			}
		}
		return 0
	})
	page, perPage := 1, DefaultPerPage
	for name, v := range map[string]*int{"page": &page, "per_page": &perPage} {
		if s := q.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return 0, nil, invalidField(name, "must be a positive integer, not %q", s)
			}
			*v = n
		}
	}
	perPage = min(perPage, MaxPerPage)
	last := max(1, (len(items)+perPage-1)/perPage)
	p := schema.MetaPagination{Page: page, PerPage: perPage, LastPage: last, TotalEntries: len(items)}
	if page > 1 {
		p.PreviousPage = min(page-1, last)
	}
	if page < last {
		p.NextPage = page + 1
	}
	from := min((page-1)*perPage, len(items))
	to := min(from+perPage, len(items))
	out := make([]T, 0, to-from)
	for _, v := range items[from:to] {
		out = append(out, clone(v)) // the page shares nothing with the project
	}
	return http.StatusOK, map[string]any{key: out, "meta": schema.Meta{Pagination: &p}}, nil
}

// byID and byName are the sort keys most lists have.
func byID[T any](id func(T) int64) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(id(a), id(b)) }
}

func byName[T any](name func(T) string) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(name(a), name(b)) }
}

// filter keeps the items whose labels match the request's label_selector and whose name
// is its name parameter, when given.
func filter[T any](r *http.Request, items []T, name func(T) string, labels func(T) map[string]string) ([]T, *apiError) {
	q := r.URL.Query()
	sel, err := parseSelector(q.Get("label_selector"))
	if err != nil {
		return nil, invalidField("label_selector", "%v", err)
	}
	want, byName := q.Get("name"), q.Has("name")
	return slices.DeleteFunc(items, func(t T) bool {
		return (byName && name(t) != want) || !sel.matches(labels(t))
	}), nil
}

// pathID is the {id} of the request's path.
func pathID(r *http.Request, kind string) (int64, *apiError) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, notFound(kind, r.PathValue("id"))
	}
	return id, nil
}

// sortedKeys returns m's IDs in ascending order.
func sortedKeys[V any](m map[int64]V) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// values returns m's values in ID order, sharing their maps and slices with m: a list
// clones the page it answers (list), nothing else.
func values[V any](m map[int64]*V) []V {
	out := make([]V, 0, len(m))
	for _, id := range sortedKeys(m) {
		out = append(out, *m[id])
	}
	return out
}
