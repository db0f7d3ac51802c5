package fake

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Cloud is an in-memory cloud. It implements cloudapi.Client; its other methods are for
// tests: they change the cloud behind the client's back (an instance is stopped or
// deleted) and inspect it (every load balancer and route with its owner tags, and how
// often each operation was called). It is safe for concurrent use.
type Cloud struct {
	cfg   Config
	clock clock.PassiveClock

	calls []atomic.Int64 // by index in operations

	// file keeps the state of a cloud made by Open with a state file; nil otherwise. With
	// it, every call holds file.mu (see enter), outside mu and netMu.
	file *stateFile

	mu        sync.RWMutex
	instances table[cloudapi.Instance]
	// configInstances are the config's instances as a state file keeps them (set with a
	// state file only). Guarded by mu.
	configInstances []stateInstance

	netMu    sync.Mutex // guards load balancers, their addresses and names, the history, routes and target groups
	lbs      table[*loadBalancer]
	lbNames  map[string]string // name → ID
	lbSeq    int
	inUse    map[netip.Addr]string // address → load balancer ID
	pools    map[poolKey]*pool
	history  []Event
	routes   table[cloudapi.Route]
	groups   table[cloudapi.TargetGroup] // target groups (Capabilities.TargetGroups)
	groupSeq int
	routeDst map[netip.Prefix]string // destination → route ID
	routeSeq int
}

type poolKey struct {
	internal bool
	family   cloudapi.IPFamily
}

// loadBalancer is the cloud's record of a load balancer.
type loadBalancer struct {
	lb      cloudapi.LoadBalancer
	created time.Time
	reads   int // reads that answered while provisioning
	// saved is the record as the state file has it, once encoded: a write re-encodes only
	// the records that changed. Set to nil on every change. Guarded by netMu.
	saved []byte
}

// Option customises New.
type Option func(*Cloud)

// WithClock makes the cloud read the time from clk instead of the real clock.
// Provisioning.Duration is measured on it. A nil clk means the real clock.
func WithClock(clk clock.PassiveClock) Option {
	return func(c *Cloud) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// New returns a cloud as cfg describes it. It validates cfg (after SetDefaults on a copy)
// and returns every problem at once.
//
// New does no I/O: a cfg with a StateFile is an error; Open is the constructor that reads
// and writes it.
func New(cfg Config, opts ...Option) (*Cloud, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fake cloud: %w", err)
	}
	if cfg.StateFile != "" {
		return nil, fmt.Errorf("fake cloud: stateFile %q is set: fake.Open keeps the cloud's state in it; fake.New does no I/O", cfg.StateFile)
	}
	c := &Cloud{
		cfg:      cfg,
		calls:    make([]atomic.Int64, len(operations)),
		clock:    clock.RealClock{},
		lbNames:  map[string]string{},
		inUse:    map[netip.Addr]string{},
		pools:    map[poolKey]*pool{},
		routeDst: map[netip.Prefix]string{},
	}
	for _, o := range opts {
		o(c)
	}
	for _, p := range []struct {
		key   poolKey
		cidrs []string
	}{
		{poolKey{false, cloudapi.IPv4}, cfg.AddressPools.Public.IPv4},
		{poolKey{false, cloudapi.IPv6}, cfg.AddressPools.Public.IPv6},
		{poolKey{true, cloudapi.IPv4}, cfg.AddressPools.Internal.IPv4},
		{poolKey{true, cloudapi.IPv6}, cfg.AddressPools.Internal.IPv6},
	} {
		pl, err := newPool(p.cidrs)
		if err != nil {
			return nil, fmt.Errorf("fake cloud: %w", err)
		}
		c.pools[p.key] = pl
	}
	for _, in := range cfg.Instances {
		c.instances.put(in.ID, cfg.cloudInstance(in))
	}
	return c, nil
}

// Instances returns the instance API.
func (c *Cloud) Instances() cloudapi.InstanceAPI { return instanceAPI{c} }

// LoadBalancers returns the load balancer API, or (nil, false) when
// Config.Capabilities.LoadBalancers is false.
func (c *Cloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	if !c.cfg.loadBalancersEnabled() {
		return nil, false
	}
	return lbAPI{c}, true
}

// Routes returns the route API, or (nil, false) when Config.Capabilities.Routes is false.
func (c *Cloud) Routes() (cloudapi.RouteAPI, bool) {
	if !c.cfg.routesEnabled() {
		return nil, false
	}
	return routeAPI{c}, true
}

// Config returns the cloud's config, with defaults applied.
func (c *Cloud) Config() Config { return c.cfg }

// begin counts a call of op and fails it when ctx is done, as a real client whose request
// never left would, then enters it (see enter); call leave when the call is done. The
// error is transient: nothing was read or applied.
func (c *Cloud) begin(ctx context.Context, op cloudapi.Operation, id string) (leave func(), err error) {
	c.calls[opIndex(op)].Add(1)
	if err := ctx.Err(); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
	}
	if leave, err = c.enter(ctx, op.IsWrite()); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
	}
	return leave, nil
}

// saved is err of a write whose change could not be saved to the state file: transient,
// as the file may or may not hold it (the cloud reads the file again on the next call).
func saved(op cloudapi.Operation, id string, err error) error {
	if err == nil {
		return nil
	}
	return cloudapi.NewError(cloudapi.ErrTransient, op, id, err)
}

// pageSize returns how many items a List answers with.
func (c *Cloud) pageSize(requested int) int {
	if requested <= 0 || requested > c.cfg.PageSize {
		return c.cfg.PageSize
	}
	return requested
}

// table keeps resources by ID and their IDs in order, so that a page is a binary search
// and a short scan, as in a real cloud's database.
type table[T any] struct {
	byID map[string]T
	ids  []string // sorted
}

func (t *table[T]) get(id string) (T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

func (t *table[T]) put(id string, v T) {
	if t.byID == nil {
		t.byID = map[string]T{}
	}
	if _, ok := t.byID[id]; !ok {
		i, _ := slices.BinarySearch(t.ids, id)
		t.ids = slices.Insert(t.ids, i, id)
	}
	t.byID[id] = v
}

func (t *table[T]) delete(id string) bool {
	if _, ok := t.byID[id]; !ok {
		return false
	}
	delete(t.byID, id)
	i, _ := slices.BinarySearch(t.ids, id)
	t.ids = slices.Delete(t.ids, i, i+1)
	return true
}

func (t *table[T]) len() int { return len(t.ids) }

// page returns up to size items after the ID in token that match keep, and the token of
// the next page (empty when there is none). A token is the last ID of the previous page,
// so a page never repeats an item of an earlier page, also when the table changed between
// the calls.
func (t *table[T]) page(token string, size int, keep func(T) bool) ([]T, string, error) {
	start := 0
	if token != "" {
		after, ok := strings.CutPrefix(token, tokenPrefix)
		if !ok {
			return nil, "", fmt.Errorf("page token %q was not returned by this cloud", token)
		}
		start, _ = slices.BinarySearch(t.ids, after)
		if start < len(t.ids) && t.ids[start] == after {
			start++
		}
	}
	var items []T
	i := start
	for ; i < len(t.ids) && len(items) < size; i++ {
		if v := t.byID[t.ids[i]]; keep(v) {
			items = append(items, v)
		}
	}
	// Like a database query with LIMIT size+1: a full page has a next page only when one
	// more item matches, so the last page is never an empty one.
	next := ""
	if len(items) == size {
		for j := i; j < len(t.ids); j++ {
			if keep(t.byID[t.ids[j]]) {
				next = tokenPrefix + t.ids[i-1]
				break
			}
		}
	}
	return items, next, nil
}

const tokenPrefix = "after:"
