package cloudapitest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Defaults of the options.
const (
	// DefaultProvisioningReads is how many GetLoadBalancer reads a new load balancer may
	// stay provisioning when WithProvisioningReads is not given.
	DefaultProvisioningReads = 50
	// DefaultAddresses is how many load balancer addresses per family the suite assumes
	// the backend can hand out when WithAddresses is not given.
	DefaultAddresses = 32
)

// maxUniquenessLBs caps how many load balancers the address uniqueness check creates.
const maxUniquenessLBs = 32

// Fixture is what the backend under test must contain when NewBackend returns.
type Fixture struct {
	// Instances are the instances the backend must hold, and report field by field as
	// given: IDs, names, types, zones, regions, addresses in order, states and tags. The
	// suite owns the slice; a NewBackend must copy what it keeps.
	Instances []cloudapi.Instance
}

// NewBackend builds a fresh, isolated backend holding exactly f's instances and no load
// balancers or routes. It fails t when it cannot, and registers any cleanup with
// t.Cleanup. Run calls it once per subtest, from the subtest's goroutine.
type NewBackend func(t testing.TB, f Fixture) cloudapi.Client

// Option changes how Run checks a backend.
type Option func(*options)

type options struct {
	provisioningReads int
	addresses         int
	hostnames         bool // every active load balancer has a hostname
	noAddresses       bool // no load balancer has an address
	settings          []map[string]string
	instanceShape     func(cloudapi.Instance) cloudapi.Instance
	shape             cloudapi.LoadBalancerShape
	pageNumbers       bool
	ipv4RoutesOnly    bool
	order             func(a, b string) int // the cloud's order of IDs (WithIDOrder)
	certificates      []string              // the certificate references of the suite's listeners (WithCertificates)
}

// defaultOptions are the options before any Option.
func defaultOptions() options {
	return options{provisioningReads: DefaultProvisioningReads, addresses: DefaultAddresses, order: strings.Compare,
		certificates: []string{"cert-a", "cert-b"}}
}

// WithProvisioningReads sets how many GetLoadBalancer reads at most a new load balancer
// may stay provisioning before the suite fails (default DefaultProvisioningReads). Zero
// means CreateLoadBalancer must already answer with an active load balancer; a negative n
// counts as zero.
func WithProvisioningReads(n int) Option {
	return func(o *options) { o.provisioningReads = max(n, 0) }
}

// WithAddresses sets how many load balancer addresses per family the backend's pools can
// hand out at least (default DefaultAddresses). The address uniqueness check holds
// min(n, 32) dual-stack load balancers at once; n below 1 counts as 1.
func WithAddresses(n int) Option {
	return func(o *options) { o.addresses = max(n, 1) }
}

// WithHostnames says that the backend's cloud gives every load balancer a hostname
// (cloudapi.LoadBalancer.Hostname): the suite then requires one on every active load
// balancer, in every answer, so an adapter that drops the cloud's hostname fails. Without
// it, a hostname is checked only where the backend reports one.
func WithHostnames() Option {
	return func(o *options) { o.hostnames = true }
}

// WithInstanceShape says how the backend's cloud holds the suite's instances, for a cloud
// that cannot hold them as the suite makes them (IDs like "i-contract-0001", host names
// among the addresses, every state): the suite passes shape(inst) for each of its
// instances in the Fixture, expects it back field by field, and names instances (load
// balancer targets, an unknown ID) by shape's IDs. shape must map an ID to an ID the
// backend accepts, the same way whatever the other fields, different IDs to different
// ones, in the same order; it must keep the tags. Use it sparingly: what shape drops, the
// suite no longer checks.
func WithInstanceShape(shape func(cloudapi.Instance) cloudapi.Instance) Option {
	return func(o *options) { o.instanceShape = shape }
}

// WithLoadBalancerShape says what the backend's load balancers do not keep and do not
// support, as the adapter declares it to ccmkit (provider.Options.LoadBalancerShape). The
// suite then builds its specs without the unsupported parts, compares what the backend
// reports as shape.Comparable does (a part not kept may come back empty), checks the
// addresses of a load balancer against its families only where the families are kept,
// and requires every unsupported part to be refused with ErrInvalidRequest by create
// and update alike, changing nothing: a backend that declares a part unsupported and
// builds it, or drops it, fails.
func WithLoadBalancerShape(shape cloudapi.LoadBalancerShape) Option {
	return func(o *options) { o.shape = shape }
}

// WithPageNumbers says that the backend pages by page number, as an API without page
// tokens does (Hetzner's): an item deleted before the caller reads the next page shifts
// the later pages by one, so one item per deletion may be missed by that listing (ccmkit
// is safe with it: see cloudapi's doc, "Paging"). The check of a listing that changes
// between pages then allows as many missed items as were deleted, and still requires no
// item twice and no deleted item; a listing of a set that does not change must be
// complete, as without the option.
func WithPageNumbers() Option {
	return func(o *options) { o.pageNumbers = true }
}

// WithIPv4RoutesOnly says that the backend's routes are IPv4 only, as a Hetzner network's
// are: the suite then expects an IPv6 route to be refused with ErrInvalidRequest and uses
// IPv4 destinations elsewhere.
func WithIPv4RoutesOnly() Option {
	return func(o *options) { o.ipv4RoutesOnly = true }
}

// WithoutAddresses says that the backend's load balancers are reached by their hostname
// alone and have no addresses, as AWS's are: the suite then requires no address on any
// load balancer, skips the address checks, and expects a spec with RequestedIPs to be
// refused with ErrInvalidRequest. It implies WithHostnames.
func WithoutAddresses() Option {
	return func(o *options) { o.hostnames, o.noAddresses = true, true }
}

// WithIDOrder says how the backend's cloud orders IDs, the order of its pages ("ordered
// by ID", see cloudapi.ListOptions): compare returns a negative number when a sorts before
// b, zero when they are one ID, a positive one otherwise (cloudapi.CompareNumericIDs for a
// cloud that sorts its numbered IDs as numbers, Hetzner's id:asc). The suite then checks
// the pages in that order. Without it, IDs are ordered byte-wise (strings.Compare).
func WithIDOrder(compare func(a, b string) int) Option {
	return func(o *options) { o.order = compare }
}

// WithCertificates gives the certificate references the suite's listeners that terminate
// TLS name, as the backend's cloud takes them (the IDs, names or ARNs of two different
// certificates of its test account): at least two, the first two different. Without it,
// they are "cert-a" and "cert-b", which a cloud that checks its references (UUIDs, ARNs)
// refuses, so that its TLS and HTTPS cases only check the refusal.
func WithCertificates(refs ...string) Option {
	return func(o *options) { o.certificates = refs }
}

// WithSettings names adapter settings (cloudapi.LoadBalancerSpec.SettingValues) that the
// backend declares and must keep exactly: each argument is one set of settings, canonical
// values as the adapter's declarations allow. The suite creates a load balancer with the
// first set, updates it to each of the others in turn, to none and to the first again,
// and reads it back after every write; a backend that refuses or drops one of them fails.
// Without it, the suite still checks that a setting the backend does not know is kept or
// refused, never dropped.
func WithSettings(sets ...map[string]string) Option {
	return func(o *options) { o.settings = sets }
}

// validate refuses options that the suite cannot run with.
func (o options) validate() error {
	if len(o.certificates) < 2 || o.certificates[0] == o.certificates[1] {
		return fmt.Errorf("cloudapitest.WithCertificates(%q): give at least two references of different certificates", o.certificates)
	}
	if o.order == nil {
		return errors.New("cloudapitest.WithIDOrder(nil): give the cloud's comparison of two IDs")
	}
	return nil
}

// suite carries what every check needs.
type suite struct {
	newBackend NewBackend
	opts       options
}

// makeInstances returns n instances with varied fields (see makeInstances), as the
// backend's cloud holds them (WithInstanceShape).
func (s *suite) makeInstances(n int) []cloudapi.Instance {
	out := makeInstances(n)
	if s.opts.instanceShape != nil {
		for i := range out {
			out[i] = s.opts.instanceShape(out[i].Clone())
		}
	}
	return out
}

// instanceID is the ID of the suite's i-th instance in the backend's cloud.
func (s *suite) instanceID(i int) string { return s.shapeID(instanceID(i)) }

// unknownInstanceID is an ID the backend accepts that names no instance.
func (s *suite) unknownInstanceID() string { return s.shapeID("i-contract-does-not-exist") }

func (s *suite) shapeID(id string) string {
	if s.opts.instanceShape == nil {
		return id
	}
	return s.opts.instanceShape(cloudapi.Instance{ID: id}).ID
}

// backend builds a fresh backend holding clones of instances.
func (s *suite) backend(t testing.TB, instances []cloudapi.Instance) cloudapi.Client {
	t.Helper()
	f := Fixture{Instances: make([]cloudapi.Instance, len(instances))}
	for i, inst := range instances {
		f.Instances[i] = inst.Clone()
	}
	c := s.newBackend(t, f)
	if c == nil {
		t.Fatal("NewBackend returned a nil client")
	}
	return c
}

// Run runs the contract suite against the backends that newBackend builds, each check in
// its own subtest with its own backend: instances, loadbalancers, routes, targetgroups,
// concurrency and errors. Load balancer, route and target group checks are skipped when
// the client reports that it lacks the capability (target groups: cloudapi.TargetGroups).
func Run(t *testing.T, newBackend NewBackend, opts ...Option) {
	s := &suite{newBackend: newBackend, opts: defaultOptions()}
	for _, o := range opts {
		o(&s.opts)
	}
	if err := s.opts.validate(); err != nil {
		t.Fatal(err)
	}
	t.Run("instances", s.testInstances)
	t.Run("loadbalancers", s.testLoadBalancers)
	t.Run("routes", s.testRoutes)
	t.Run("targetgroups", s.testTargetGroups)
	t.Run("concurrency", s.testConcurrency)
	t.Run("errors", s.testErrors)
}
