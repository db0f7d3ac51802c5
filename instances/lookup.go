package instances

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
)

// Lookup finds a cloud's instances: the one way Instances, package zones and package
// routes reach them, so that all three share one snapshot (NewLookup). Both methods
// return an error matching cloudapi.ErrNotFound only when the cloud is certain the
// instance does not exist; a terminated instance is returned with its state.
//
// Its methods are the reads for any purpose but a Node's own (a route's ownership check,
// a zone): however many instances they find running, they never release the deletion
// brake (LookupOptions.Brake). Only Instances' reads for a Node may, which it makes
// through reads of NewLookup's Lookup that this interface does not offer; over any other
// Lookup (one that wraps NewLookup's too), Instances reads through these methods, and
// only a list that has the cluster's instances again releases the brake.
type Lookup interface {
	// ByID returns the instance with the given cloud ID.
	ByID(ctx context.Context, id string) (*cloudapi.Instance, error)
	// ByName returns the instance of the Node named name. Names compare as the kubelet
	// derives Node names from hostnames: trimmed and in lower case.
	ByName(ctx context.Context, name string) (*cloudapi.Instance, error)
}

// nodeLookup is the reads of NewLookup's Lookup for one of the cluster's Nodes, the node
// controllers' (internal/instancecache's "Which reads count"): Instances makes them, and
// nothing else.
type nodeLookup interface {
	// ByIDForNode is Lookup.ByID for a Node, by the instance ID of its provider ID.
	ByIDForNode(ctx context.Context, id string) (*cloudapi.Instance, error)
	// ByNameForNode is Lookup.ByName for a Node without a provider ID.
	ByNameForNode(ctx context.Context, name string) (*cloudapi.Instance, error)
}

// NewLookup's Lookup has the Node reads: without them, Instances' reads would be plain ones.
var _ nodeLookup = (*instancecache.Cache)(nil)

// forNodes returns the Node reads of lookup: its own when it is NewLookup's, else its
// plain ones.
func forNodes(lookup Lookup) nodeLookup {
	if n, ok := lookup.(nodeLookup); ok {
		return n
	}
	return plainReads{lookup}
}

// plainReads reads for Nodes through a Lookup that has no reads of its own for them.
type plainReads struct{ lookup Lookup }

func (p plainReads) ByIDForNode(ctx context.Context, id string) (*cloudapi.Instance, error) {
	return p.lookup.ByID(ctx, id)
}

func (p plainReads) ByNameForNode(ctx context.Context, name string) (*cloudapi.Instance, error) {
	return p.lookup.ByName(ctx, name)
}

// NewLookup returns the shared instance snapshot over api: a Lookup that answers from one
// paginated list of the cloud's instances while it is younger than LookupOptions.MaxAge,
// refreshes it with one list shared by concurrent callers, asks GetInstance for an ID the
// snapshot lacks, and does not take "gone" on the word of a cloud that looks unhealthy
// (see the package documentation). It validates opts, makes no call until the first
// lookup and starts no goroutine until then.
func NewLookup(api cloudapi.InstanceAPI, opts LookupOptions) (Lookup, error) {
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("instances: NewLookup needs an instance API"))
	}
	if opts.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("instances: lookup MaxAge %s is negative", opts.MaxAge))
	}
	if opts.PageSize < 0 {
		errs = append(errs, fmt.Errorf("instances: lookup PageSize %d is negative", opts.PageSize))
	}
	errs = append(errs, opts.Brake.check()...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultLookupMaxAge
	}
	cacheOpts := instancecache.Options{MaxAge: opts.MaxAge, PageSize: opts.PageSize, Clock: opts.Clock, Brake: opts.Brake.withDefaults()}
	if opts.OnCheck != nil {
		onCheck := opts.OnCheck
		cacheOpts.OnCheck = func(reason instancecache.CheckReason, result instancecache.CheckResult) {
			onCheck(string(reason), string(result))
		}
	}
	return instancecache.New(api, cacheOpts), nil
}

// DefaultLookupMaxAge is how old the snapshot may get when LookupOptions.MaxAge is zero.
const DefaultLookupMaxAge = sharedlist.DefaultMaxAge

// LookupOptions tune the snapshot NewLookup builds.
type LookupOptions struct {
	// MaxAge is how old the snapshot may get before a lookup refreshes it. Zero means
	// DefaultLookupMaxAge. An instance missing from a fresh snapshot is always asked for
	// with GetInstance, so a longer MaxAge never reads a live instance as gone.
	MaxAge time.Duration
	// PageSize is the page size asked for when listing; zero asks for the backend's
	// default.
	PageSize int
	// Clock tells the snapshot's age. Nil means the real clock; tests pass a fake one
	// (k8s.io/utils/clock/testing).
	Clock clock.PassiveClock
	// OnCheck, when set, is told of every answer "gone" the snapshot checked instead of
	// trusting, with why (reason "list_failing": GetInstance answered not found while the
	// instance list fails; "list_shrank": a list lost at least a tenth of the instances the
	// list before had; "brake": the deletion brake held the answer back) and what the check found (result "gone", "exists", "refused": the
	// lookup failed instead, or "error": the check's own call failed). The provider counts
	// them in cloudprovider_<provider>_instance_gone_checks_total.
	OnCheck func(reason, result string)
	// Brake bounds how many instances may read as gone; the zero value is the brake with
	// its defaults, on.
	Brake DeletionBrake
}

// DeletionBrake bounds how many instances may read as gone, so that a cloud answering
// "gone" for every instance (the CCM pointed at another project, or a token scoped to the
// wrong one) cannot have the node lifecycle controller delete the NotReady Nodes whose
// instances run. Its rule is in the package documentation ("The deletion brake"). A
// lookup whose answer "gone" the brake holds back fails with an error matching
// ErrDeletionBrake: the Node is kept.
type DeletionBrake struct {
	// Off turns the brake off: every answer "gone" is passed on.
	Off bool
	// Window is the time over which answers "gone" are counted; zero means
	// DefaultBrakeWindow.
	Window time.Duration
	// Share is the share of the known instances (the most any list begun within the
	// window had live) that may read as gone within a window, in (0, 1]; zero means
	// DefaultBrakeShare.
	Share float64
	// Minimum is how many instances may read as gone within a window whatever Share of
	// the known instances is, so that small clusters scale down; zero means
	// DefaultBrakeMinimum.
	Minimum int
}

// The defaults of DeletionBrake; the package documentation says why these.
const (
	// DefaultBrakeWindow is the default DeletionBrake.Window.
	DefaultBrakeWindow = instancecache.DefaultBrakeWindow
	// DefaultBrakeShare is the default DeletionBrake.Share.
	DefaultBrakeShare = instancecache.DefaultBrakeShare
	// DefaultBrakeMinimum is the default DeletionBrake.Minimum.
	DefaultBrakeMinimum = instancecache.DefaultBrakeMinimum
)

// ErrDeletionBrake is matched (errors.Is) by the error of a lookup that the cloud answered
// "gone" while the deletion brake holds such answers back. It never matches
// cloudapi.ErrNotFound.
var ErrDeletionBrake = instancecache.ErrBrake

// check returns the problems of b.
func (b DeletionBrake) check() []error {
	var errs []error
	if b.Window < 0 {
		errs = append(errs, fmt.Errorf("instances: deletion brake Window %s is negative", b.Window))
	}
	if math.IsNaN(b.Share) || b.Share < 0 || b.Share > 1 {
		errs = append(errs, fmt.Errorf("instances: deletion brake Share %v is not from 0 to 1", b.Share))
	}
	if b.Minimum < 0 {
		errs = append(errs, fmt.Errorf("instances: deletion brake Minimum %d is negative", b.Minimum))
	}
	return errs
}

// withDefaults returns the brake the snapshot applies: the zero instancecache.Brake when
// b is off.
func (b DeletionBrake) withDefaults() instancecache.Brake {
	if b.Off {
		return instancecache.Brake{}
	}
	out := instancecache.Brake{Window: b.Window, Share: b.Share, Minimum: b.Minimum}
	if out.Window == 0 {
		out.Window = DefaultBrakeWindow
	}
	if out.Share == 0 {
		out.Share = DefaultBrakeShare
	}
	if out.Minimum == 0 {
		out.Minimum = DefaultBrakeMinimum
	}
	return out
}

// knownLookup is the read of NewLookup's Lookup that answers only what it finds, with
// at most one list per name and MaxAge (instancecache.(*Cache).Known).
type knownLookup interface {
	Known(ctx context.Context, name string) (*cloudapi.Instance, bool)
}

var _ knownLookup = (*instancecache.Cache)(nil)

// KnownProviderID returns the provider ID that InstanceMetadata gives a Node named name
// that has none yet, when the snapshot knows its instance: a snapshot no older than its
// MaxAge, read after the list under way (the cloud node controller's lookup of that
// Node), with one live instance of that name. For a name the snapshot lacks, or a
// snapshot too old, it waits for a list (instancecache's Known says which: the first ask
// about a name, one begun then or with the names asked about with it; later asks, a
// snapshot no older than MaxAge): the list the node controller's lookup of a new Node
// makes too, whichever begins it (the other finds the instance in it). It makes no
// GetInstance. ok is false otherwise, and with a Lookup other than NewLookup's. It never
// answers that an instance is gone. It is what the load balancers' targets use for a
// Node the cloud node controller is initializing (loadbalancer.Options.NodeProviderID).
func (i *Instances) KnownProviderID(ctx context.Context, name string) (providerID string, ok bool) {
	k, ok := i.lookup.(knownLookup)
	if !ok {
		return "", false
	}
	inst, ok := k.Known(ctx, name)
	if !ok {
		return "", false
	}
	id, err := i.formatProviderID(inst)
	return id, err == nil
}
