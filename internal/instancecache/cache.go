package instancecache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/pace"
)

// Options tune a Cache.
type Options struct {
	// MaxAge is how old the snapshot may get before a lookup refreshes it. Zero means
	// every lookup refreshes (no caching).
	MaxAge time.Duration
	// PageSize is the page size asked for when listing; zero means the backend's default.
	PageSize int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Cache is a shared snapshot of the cloud's instances. It is safe for concurrent use.
// The instances it returns are shared: callers must not modify them.
type Cache struct {
	api  cloudapi.InstanceAPI
	opts Options

	mu        sync.RWMutex
	byID      map[string]*cloudapi.Instance
	byName    map[string][]*cloudapi.Instance
	listedAt  time.Time // when the last completed list started; zero before the first
	gen       int       // completed lists
	misses    int       // by-ID fetches since that list
	pages     int       // pages the last list took
	listing   *flight   // the list in progress, if any
	fetchByID map[string]*flight
	// After a failed list, no new list starts until the backoff allows it; lookups get
	// the list's error (ByID asks for its one instance instead).
	backoff pace.Backoff
}

// The wait after a failed list before the next one starts: it doubles with each failure
// in a row, up to maxListBackoff, and resets when a list succeeds. Without it, every
// lookup while the cloud fails would start the whole paginated list again.
const (
	minListBackoff = time.Second
	maxListBackoff = 30 * time.Second
)

// flight is one cloud call that several lookups wait for.
type flight struct {
	done chan struct{}
	inst *cloudapi.Instance // by-ID fetches only
	err  error
}

// New returns a Cache over api. It makes no call until the first lookup.
func New(api cloudapi.InstanceAPI, opts Options) *Cache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{api: api, opts: opts, fetchByID: map[string]*flight{}, backoff: pace.Backoff{Min: minListBackoff, Max: maxListBackoff}}
}

// ByID returns the instance with the given cloud ID. It returns an error matching
// cloudapi.ErrNotFound only when the cloud said so for this ID; any other failure is
// returned as it is. When the snapshot is due for a refresh and the list fails (or
// failed moments ago), it asks the cloud for this one instance instead.
func (c *Cache) ByID(ctx context.Context, id string) (*cloudapi.Instance, error) {
	start := c.opts.Now()
	if err := c.ensureFresh(ctx, start); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		klog.FromContext(ctx).V(2).Info("Instance list failed; getting the one instance", "id", id, "err", err)
		return c.get(ctx, id)
	}
	c.mu.RLock()
	inst, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return inst, nil
	}
	if c.relistCheaper() {
		if err := c.relist(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			klog.FromContext(ctx).V(2).Info("Instance list failed; getting the one instance", "id", id, "err", err)
			return c.get(ctx, id)
		}
		c.mu.RLock()
		inst, ok = c.byID[id]
		c.mu.RUnlock()
		if ok {
			return inst, nil
		}
	}
	return c.get(ctx, id)
}

// ByName returns the instance named name. When several instances share the name, the
// one that is not terminated wins; two live instances with one name are an error, since
// the Node could be either. It returns an error matching cloudapi.ErrNotFound only when a
// list that started after this lookup began has no such instance.
func (c *Cache) ByName(ctx context.Context, name string) (*cloudapi.Instance, error) {
	start := c.opts.Now()
	if err := c.ensureFresh(ctx, start); err != nil {
		return nil, err
	}
	inst, found, err := c.lookupName(name)
	if found || err != nil {
		return inst, err
	}
	c.mu.RLock()
	listedAfterStart := !c.listedAt.Before(start)
	c.mu.RUnlock()
	if !listedAfterStart {
		// The snapshot predates this lookup: the instance may be new. Relist once.
		if err := c.listUntil(ctx, c.listedSince(start)); err != nil {
			return nil, err
		}
		if inst, found, err = c.lookupName(name); found || err != nil {
			return inst, err
		}
	}
	return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpListInstances, "",
		fmt.Errorf("no instance is named %q", name))
}

func (c *Cache) lookupName(name string) (*cloudapi.Instance, bool, error) {
	c.mu.RLock()
	candidates := c.byName[name]
	c.mu.RUnlock()
	var live []*cloudapi.Instance
	for _, inst := range candidates {
		if inst.State != cloudapi.InstanceTerminated {
			live = append(live, inst)
		}
	}
	switch {
	case len(live) == 1:
		return live[0], true, nil
	case len(live) > 1:
		return nil, false, fmt.Errorf("%d running instances are named %q (%s and %s): set the Node's spec.providerID to choose one",
			len(live), name, live[0].ID, live[1].ID)
	case len(candidates) > 0:
		return candidates[0], true, nil
	}
	return nil, false, nil
}

// Invalidate makes the next lookup refresh the snapshot.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.listedAt = time.Time{}
	c.mu.Unlock()
}

// Stats describe the snapshot, for logs and tests.
type Stats struct {
	// Instances is how many instances the snapshot holds.
	Instances int
	// ListedAt is when the list behind the snapshot began; zero before the first list.
	ListedAt time.Time
	// Pages is how many pages that list took.
	Pages int
}

// Stats returns the snapshot's current figures.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Instances: len(c.byID), ListedAt: c.listedAt, Pages: c.pages}
}

// ensureFresh lists unless a list began no earlier than MaxAge before start.
func (c *Cache) ensureFresh(ctx context.Context, start time.Time) error {
	return c.listUntil(ctx, c.listedSince(start.Add(-c.opts.MaxAge)))
}

// listedSince returns a condition (evaluated under c.mu) that holds once a list that
// began no earlier than t has completed.
func (c *Cache) listedSince(t time.Time) func() bool {
	return func() bool { return !c.listedAt.IsZero() && !c.listedAt.Before(t) }
}

// relist lists again, unless a list newer than the snapshot the caller saw completes
// meanwhile.
func (c *Cache) relist(ctx context.Context) error {
	c.mu.RLock()
	gen := c.gen
	c.mu.RUnlock()
	return c.listUntil(ctx, func() bool { return c.gen > gen })
}

// relistCheaper reports whether the by-ID fetches since the last list have cost as much
// as a relist would.
func (c *Cache) relistCheaper() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pages > 0 && c.misses >= c.pages
}

// listUntil makes sure done holds, joining a list in progress or starting one until it
// does. done is evaluated with c.mu held.
func (c *Cache) listUntil(ctx context.Context, done func() bool) error {
	c.mu.RLock()
	ok := done()
	c.mu.RUnlock()
	if ok {
		return nil
	}
	for {
		c.mu.Lock()
		if done() {
			c.mu.Unlock()
			return nil
		}
		if f := c.listing; f != nil {
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return fmt.Errorf("waiting for the instance list: %w", ctx.Err())
			}
			if f.err != nil {
				return f.err
			}
			continue // that list may not be recent enough
		}
		if err := c.backoff.Hold(c.opts.Now(), "the instance list"); err != nil {
			c.mu.Unlock()
			return err
		}
		f := &flight{done: make(chan struct{})}
		c.listing = f
		started := c.opts.Now()
		c.mu.Unlock()

		// The list runs on its own goroutine and context, so that no caller giving up,
		// the one that started it included, fails the others or waits for it; it keeps
		// the first caller's values (logger). The loop then waits for it like any caller.
		go c.list(context.WithoutCancel(ctx), f, started)
	}
}

// list makes one list for the flight f, begun at started, and installs it.
func (c *Cache) list(ctx context.Context, f *flight, started time.Time) {
	byID, byName, pages, err := c.fetchAll(ctx)
	c.mu.Lock()
	if err == nil {
		c.byID, c.byName, c.pages, c.misses = byID, byName, pages, 0
		c.listedAt = started
		c.gen++
		c.backoff.Succeeded()
	} else {
		c.backoff.Failed(c.opts.Now(), err)
	}
	c.listing = nil
	f.err = err
	c.mu.Unlock()
	close(f.done)
}

func (c *Cache) fetchAll(ctx context.Context) (map[string]*cloudapi.Instance, map[string][]*cloudapi.Instance, int, error) {
	byID := make(map[string]*cloudapi.Instance, len(c.byID))
	byName := make(map[string][]*cloudapi.Instance, len(c.byID))
	opts := cloudapi.ListOptions{PageSize: c.opts.PageSize}
	pages := 0
	for {
		page, err := c.api.ListInstances(ctx, opts)
		if err != nil {
			err = cloudapi.ListError(cloudapi.OpListInstances, err) // never "instance gone"
			return nil, nil, 0, fmt.Errorf("listing instances (page %d): %w", pages+1, err)
		}
		pages++
		for i := range page.Items {
			inst := &page.Items[i]
			if _, dup := byID[inst.ID]; dup {
				continue
			}
			byID[inst.ID] = inst
			byName[inst.Name] = append(byName[inst.Name], inst)
		}
		if page.NextPageToken == "" {
			break
		}
		if page.NextPageToken == opts.PageToken {
			return nil, nil, 0, fmt.Errorf("listing instances: the cloud returned the same page token %q twice", opts.PageToken)
		}
		opts.PageToken = page.NextPageToken
	}
	klog.FromContext(ctx).V(4).Info("Listed instances", "instances", len(byID), "pages", pages)
	return byID, byName, pages, nil
}

// get fetches one instance by ID, sharing the call with concurrent lookups of the same
// ID, and adds it to the snapshot.
func (c *Cache) get(ctx context.Context, id string) (*cloudapi.Instance, error) {
	c.mu.Lock()
	f, ok := c.fetchByID[id]
	if !ok {
		f = &flight{done: make(chan struct{})}
		c.fetchByID[id] = f
		c.misses++
		c.mu.Unlock()
		f.inst, f.err = c.api.GetInstance(context.WithoutCancel(ctx), id)
		c.mu.Lock()
		delete(c.fetchByID, id)
		if _, listed := c.byID[id]; f.err == nil && f.inst != nil && c.byID != nil && !listed {
			c.byID[id] = f.inst
			c.byName[f.inst.Name] = append(c.byName[f.inst.Name], f.inst)
		}
		c.mu.Unlock()
		close(f.done)
	} else {
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for instance %q: %w", id, ctx.Err())
		}
	}
	if f.err != nil {
		return nil, fmt.Errorf("getting instance %q: %w", id, f.err)
	}
	if f.inst == nil {
		return nil, fmt.Errorf("getting instance %q: the cloud answered neither an instance nor an error", id)
	}
	return f.inst, nil
}
