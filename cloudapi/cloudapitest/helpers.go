package cloudapitest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Fixture instance IDs are zero-padded, so that their order by ID is the numeric order.
func instanceID(i int) string { return fmt.Sprintf("i-contract-%04d", i) }

// makeInstances returns n instances with varied fields, shuffled so that the fixture's
// order is not the order by ID. Every instance has at least one address and one tag, so
// that no comparison depends on nil versus empty.
func makeInstances(n int) []cloudapi.Instance {
	states := []cloudapi.InstanceState{
		cloudapi.InstanceRunning, cloudapi.InstancePending, cloudapi.InstanceStopping,
		cloudapi.InstanceStopped, cloudapi.InstanceTerminating, cloudapi.InstanceTerminated,
		cloudapi.InstanceUnknown,
	}
	zones := []string{"zone-a", "zone-b", "zone-c"}
	pools := []string{"a", "b", "c"}
	out := make([]cloudapi.Instance, 0, n)
	for i := range n {
		inst := cloudapi.Instance{
			ID:     instanceID(i),
			Name:   fmt.Sprintf("node-%04d", i),
			Type:   fmt.Sprintf("type-%d", i%4),
			Zone:   zones[i%len(zones)],
			Region: "region-1",
			Addresses: []cloudapi.Address{
				{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)},
				{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("fd00:10::%x", i+1)},
				{Type: cloudapi.AddressHostname, Address: fmt.Sprintf("node-%04d", i)},
			},
			State: states[i%len(states)],
			Tags:  map[string]string{"pool": pools[i%len(pools)]},
		}
		if i%2 == 0 {
			inst.Addresses = append(inst.Addresses,
				cloudapi.Address{Type: cloudapi.AddressExternalIP, Address: fmt.Sprintf("198.51.100.%d", i%250+1)},
				cloudapi.Address{Type: cloudapi.AddressInternalDNS, Address: fmt.Sprintf("node-%04d.internal", i)})
		}
		if i%5 == 0 {
			inst.Tags["role"] = "control-plane"
		} else {
			inst.Tags["role"] = "worker"
		}
		if i%3 != 2 {
			inst.Tags[cloudapi.TagCluster] = "contract"
		}
		out = append(out, inst)
	}
	r := rand.New(rand.NewPCG(1, 2)) // a fixed shuffle: every run sees the same order
	r.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// byID indexes items by their ID.
func byID[T any](items []T, id func(T) string) map[string]T {
	m := make(map[string]T, len(items))
	for _, it := range items {
		m[id(it)] = it
	}
	return m
}

// ids returns the items' IDs in order, nil for no items.
func ids[T any](items []T, id func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func instID(i cloudapi.Instance) string    { return i.ID }
func lbID(lb cloudapi.LoadBalancer) string { return lb.ID }
func routeID(r cloudapi.Route) string      { return r.ID }

// lister is one List method of the cloud API, reduced to items and next page token.
type lister[T any] func(ctx context.Context, opts cloudapi.ListOptions) ([]T, string, error)

func listInstances(api cloudapi.InstanceAPI) lister[cloudapi.Instance] {
	return func(ctx context.Context, opts cloudapi.ListOptions) ([]cloudapi.Instance, string, error) {
		p, err := api.ListInstances(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			return nil, "", errors.New("ListInstances returned a nil page and no error")
		}
		return p.Items, p.NextPageToken, nil
	}
}

func listLoadBalancers(api cloudapi.LoadBalancerAPI) lister[cloudapi.LoadBalancer] {
	return func(ctx context.Context, opts cloudapi.ListOptions) ([]cloudapi.LoadBalancer, string, error) {
		p, err := api.ListLoadBalancers(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			return nil, "", errors.New("ListLoadBalancers returned a nil page and no error")
		}
		return p.Items, p.NextPageToken, nil
	}
}

func listRoutes(api cloudapi.RouteAPI) lister[cloudapi.Route] {
	return func(ctx context.Context, opts cloudapi.ListOptions) ([]cloudapi.Route, string, error) {
		p, err := api.ListRoutes(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			return nil, "", errors.New("ListRoutes returned a nil page and no error")
		}
		return p.Items, p.NextPageToken, nil
	}
}

// pager pages through one listing, checking the paging promises of ListInstances as it
// goes. It is safe to use from any goroutine: it reports problems as errors.
type pager[T any] struct {
	op    cloudapi.Operation
	list  lister[T]
	id    func(T) string
	order func(a, b string) int // the cloud's order of IDs (WithIDOrder)
	opts  cloudapi.ListOptions
	seen  map[string]bool
	last  string
	pages int
	done  bool
}

func newPager[T any](op cloudapi.Operation, list lister[T], id func(T) string, order func(a, b string) int, opts cloudapi.ListOptions) *pager[T] {
	return &pager[T]{op: op, list: list, id: id, order: order, opts: opts, seen: map[string]bool{}}
}

// next fetches the next page and checks it against every page before.
func (p *pager[T]) next(ctx context.Context) ([]T, error) {
	items, token, err := p.list(ctx, p.opts)
	if err != nil {
		return nil, fmt.Errorf("%s page %d (page size %d): %w", p.op, p.pages+1, p.opts.PageSize, err)
	}
	p.pages++
	if p.opts.PageSize > 0 && len(items) > p.opts.PageSize {
		return nil, fmt.Errorf("%s: broke \"PageSize is the most items the caller wants in one page\": page %d has %d items for page size %d",
			p.op, p.pages, len(items), p.opts.PageSize)
	}
	for _, it := range items {
		k := p.id(it)
		if p.seen[k] {
			return nil, fmt.Errorf("%s: broke \"paging through a changing set never returns an item twice\": %q returned again on page %d (page size %d)",
				p.op, k, p.pages, p.opts.PageSize)
		}
		if len(p.seen) > 0 && p.order(k, p.last) <= 0 {
			return nil, fmt.Errorf("%s: broke \"pages are ordered by ID\": %q after %q on page %d (page size %d), in the cloud's order of IDs (WithIDOrder)",
				p.op, k, p.last, p.pages, p.opts.PageSize)
		}
		p.seen[k] = true
		p.last = k
	}
	p.opts.PageToken = token
	p.done = token == ""
	return items, nil
}

// all pages to the end. maxItems bounds how many items the listing can hold, so that a
// backend that never ends its listing fails instead of looping.
func (p *pager[T]) all(ctx context.Context, maxItems int) ([]T, error) {
	var out []T
	limit := 2*maxItems + 10
	for !p.done {
		if p.pages >= limit {
			return nil, fmt.Errorf("%s: broke \"an empty NextPageToken means the last page\": no last page after %d pages of at most %d items in all (page size %d)",
				p.op, p.pages, maxItems, p.opts.PageSize)
		}
		items, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// listAll pages through a whole listing with opts and checks the paging promises.
func listAll[T any](t testing.TB, op cloudapi.Operation, list lister[T], id func(T) string, order func(a, b string) int, opts cloudapi.ListOptions, maxItems int) []T {
	t.Helper()
	out, err := newPager(op, list, id, order, opts).all(t.Context(), maxItems)
	require.NoError(t, err)
	return out
}

// requireClass fails t unless err matches class with errors.Is and cloudapi.ClassOf
// gives class (so it matches no class listed before it either).
func requireClass(t testing.TB, err, class error, format string, args ...any) {
	t.Helper()
	if err := checkClass(err, class); err != nil {
		require.FailNow(t, fmt.Sprintf(format, args...)+": "+err.Error())
	}
}

// checkClass is requireClass for goroutines. It compares ClassOf's answer by identity:
// ClassOf returns one of the sentinels itself, never a wrapper. Its messages describe the
// errors; they do not wrap them.
//
//nolint:errorlint // see above
func checkClass(err, class error) error {
	switch {
	case err == nil:
		return fmt.Errorf("want an error matching %v with errors.Is, got no error", class)
	case !errors.Is(err, class):
		return fmt.Errorf("want an error matching %v with errors.Is, got %q (class %v)", class, err, cloudapi.ClassOf(err))
	case cloudapi.ClassOf(err) != class:
		return fmt.Errorf("want cloudapi.ClassOf to give %v, got %v for %q: the error matches more than one class", class, cloudapi.ClassOf(err), err)
	}
	return nil
}

// requireNotNotFound fails t unless err is an error that does not match ErrNotFound:
// "ErrNotFound ... must never be returned for a failure to find out".
func requireNotNotFound(t testing.TB, err error, what string) {
	t.Helper()
	require.Errorf(t, err, "%s with a canceled context: broke \"Do honour the context's deadline and cancellation\": got no error", what)
	require.Falsef(t, errors.Is(err, cloudapi.ErrNotFound),
		"%s with a canceled context: broke \"ErrNotFound ... must never be returned for a failure to find out (timeouts, throttling, server errors)\": got %q", what, err)
	require.Falsef(t, cloudapi.ClassOf(err) == cloudapi.ErrNotFound, //nolint:errorlint // ClassOf returns the sentinel itself
		"%s with a canceled context: cloudapi.ClassOf gives ErrNotFound for %q", what, err)
}

// canceledContext returns a context that is already canceled.
func canceledContext(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
