package providertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Defaults of the provider that New builds, where they differ from the provider's own
// (provider.DefaultQPS and the rest). A zero value in the config means these.
const (
	// DefaultClusterID is the cluster ID (cluster.id) the load balancers and routes are
	// tagged with.
	DefaultClusterID = "test"
	// DefaultQPS is the client-side rate limit of cloud calls (cloudAPI.qps). The
	// provider's own default, 10, makes its token bucket wait in real time as soon as a
	// test makes more than its burst of calls.
	DefaultQPS = 1000
	// DefaultBurst is how many cloud calls may go out at once (cloudAPI.burst).
	DefaultBurst = 1000
	// DefaultMaxAttempts is how often a call is tried in all (cloudAPI.retry.maxAttempts):
	// once. A retry waits its backoff (200 ms and up) in real time; a test that checks
	// retries sets more attempts, with WithConfig or cloudAPI.retry.maxAttempts.
	DefaultMaxAttempts = 1
)

// start is the time on a Cloud's clock when New returns.
var start = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// Cloud is ccmkit's provider over an in-memory fake cloud, made by New for one test.
// Its fields are set by New and must not be changed.
type Cloud struct {
	// Provider is the cloudprovider.Interface under test, to hand to the controllers:
	// InstancesV2, Instances, Zones, LoadBalancer and Routes are all offered unless the
	// config switches them off (Routes too, which the provider alone leaves off by
	// default), and Clusters answers from the config.
	Provider *provider.Cloud
	// Fake is the cloud behind the provider: its state (Inventory, LoadBalancerHistory),
	// its call counters (Calls, ResetCalls: every call that reached it, counted per
	// operation) and the changes made behind the provider's back (AddInstance,
	// SetInstanceState, SetInstanceAddresses, DeleteInstance).
	Fake *fake.Cloud
	// Faults is the fault injector between the provider and Fake when WithFaults was
	// given, else nil. Its Injected counters count every call the provider made, also
	// those that a fault kept from Fake.
	Faults *faultinject.Client
	// Metrics is the registry of the provider's metrics (cloudprovider_<name>_api_* and
	// the instance checks), the test's own.
	Metrics provider.MetricsRegistry

	tb    testing.TB
	clock clock.PassiveClock             // the provider's and the fake's clock
	made  *clocktesting.FakePassiveClock // the clock New made; nil when WithOptions set one
}

// New builds, for the test tb, a fake cloud and ccmkit's provider over it, as the options
// describe: an empty cloud without options. Options apply in order, each over what the
// earlier ones set. Problems with the options (a YAML error, an invalid cloud, an invalid
// config) fail the test at once, all of them in one message.
//
// The provider is assembled with provider.New, never through the global registry of
// cloud providers, with its own metrics registry, so tests may run in parallel, and it
// starts no goroutine. Time stands still for the provider and the fake (see Advance). The
// cleanup it registers with tb.Cleanup logs, when the test has failed, what the fake cloud
// held and the calls it received.
func New(tb testing.TB, opts ...Option) *Cloud {
	tb.Helper()
	c, err := build(tb, opts)
	if err != nil {
		tb.Fatalf("providertest: %v", err)
		return nil
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("providertest: the fake cloud at the end of the failed test:\n%s", c.Describe())
		}
	})
	return c
}

// build does New's work without a test to fail.
func build(tb testing.TB, opts []Option) (*Cloud, error) {
	var s settings
	for i, o := range opts {
		if o == nil {
			s.errs = append(s.errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		o(&s)
	}

	c := &Cloud{tb: tb}
	popts := s.opts
	if popts.Clock == nil {
		c.made = clocktesting.NewFakePassiveClock(start)
		popts.Clock = c.made
	}
	c.clock = popts.Clock
	if popts.Metrics == nil {
		popts.Metrics = metrics.NewKubeRegistry()
	}
	c.Metrics = popts.Metrics

	cfg := s.cfg
	if cfg.Backend == "" {
		cfg.Backend = fake.SectionName
	}
	if cfg.Cluster.ID == "" {
		cfg.Cluster.ID = DefaultClusterID
	}
	if cfg.CloudAPI.QPS == 0 {
		cfg.CloudAPI.QPS = DefaultQPS
	}
	if cfg.CloudAPI.Burst == 0 {
		cfg.CloudAPI.Burst = DefaultBurst
	}
	if cfg.CloudAPI.Retry.MaxAttempts == 0 {
		cfg.CloudAPI.Retry.MaxAttempts = DefaultMaxAttempts
	}
	fakeCfg := s.fake
	if cfg.Enable.Routes == nil {
		routes := fakeCfg.Capabilities.Routes == nil || *fakeCfg.Capabilities.Routes
		cfg.Enable.Routes = &routes
	}
	if fakeCfg.Region == "" {
		fakeCfg.Region = cfg.Region
	}

	// Report every problem at once: the options', the cloud's and the config's.
	errs := s.errs
	var err error
	c.Fake, err = fake.New(fakeCfg, fake.WithClock(popts.Clock))
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	var client cloudapi.Client = c.Fake
	if s.faults != nil {
		c.Faults = faultinject.Wrap(c.Fake, *s.faults)
		client = c.Faults
	}
	c.Provider, err = provider.New(cfg, client, popts)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Now returns the time on the clock that the provider's caches and the fake's
// provisioning read. It starts at 2030-01-01 00:00 UTC and moves only with Advance.
func (c *Cloud) Now() time.Time { return c.clock.Now() }

// Advance moves the clock of the provider and the fake by d. Time stands still otherwise,
// so that what a test counts does not depend on how fast the machine runs. Advance when
// the test needs time to pass for ccmkit: after a failed list (WithFaults), which is
// retried after its backoff (internal/sharedlist's), or for load balancers that provision
// for fake.Provisioning.Duration. After changing the cloud behind the provider's back,
// ExpireSnapshots says it better.
//
// It fails the test when WithOptions gave the provider a clock of its own: advance that
// one instead.
func (c *Cloud) Advance(d time.Duration) {
	c.tb.Helper()
	if c.made == nil {
		c.tb.Fatalf("providertest: Advance moves the clock New made, but WithOptions set provider.Options.Clock: advance that clock instead")
		return
	}
	c.made.SetTime(c.made.Now().Add(d))
}

// ExpireSnapshots advances the clock just past cache.maxAge (provider.DefaultCacheMaxAge,
// one minute, unless the config sets it), so that ccmkit's next lookups list the cloud
// afresh. Call it after changing the cloud behind the provider's back (an instance
// deleted, stopped or readdressed; a load balancer or route changed), before the
// controller pass that should see the change: until then ccmkit answers from its
// instance, load balancer and route table snapshots, as it does in production.
func (c *Cloud) ExpireSnapshots() {
	c.tb.Helper()
	c.Advance(c.Provider.Config().Cache.MaxAge + time.Nanosecond)
}

// Describe returns what the fake cloud holds and the calls it received, a line per
// resource, as New's cleanup logs it when a test fails. Pass it as the message of an
// assertion about the cloud to see the whole cloud when the assertion fails. It makes no
// call.
func (c *Cloud) Describe() string {
	var b strings.Builder
	calls := c.Fake.Calls()
	fmt.Fprintf(&b, "calls: %d", calls.Total())
	for _, op := range cloudapi.Operations() {
		if n := calls[op]; n > 0 {
			fmt.Fprintf(&b, " %s=%d", op, n)
		}
	}
	b.WriteString("\n")
	inv := c.Fake.Inventory()
	for _, in := range inv.Instances {
		fmt.Fprintf(&b, "instance %s name=%q state=%s zone=%q\n", in.ID, in.Name, in.State, in.Zone)
	}
	for _, lb := range inv.LoadBalancers {
		fmt.Fprintf(&b, "load balancer %s name=%q status=%s addresses=%v targets=%v tags=%v\n",
			lb.ID, lb.Spec.Name, lb.Status, lb.Addresses, lb.Spec.Targets, lb.Spec.Tags)
	}
	for _, r := range inv.Routes {
		fmt.Fprintf(&b, "route %s %s -> %s blackhole=%t tags=%v\n", r.ID, r.DestinationCIDR, r.TargetInstanceID, r.Blackhole, r.Tags)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
