package cloudapitest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapitest"
	"github.com/ccmkit/ccmkit/fake"
)

// Environment variables of the child process that runs the suite against a broken backend.
const (
	envChild = "CCMKIT_CONTRACT_CHILD"
	envBug   = "CCMKIT_CONTRACT_BUG"
)

// bug is a way tinyCloud breaks the contract.
type bug string

const (
	bugNone            bug = ""
	bugRepeatLast      bug = "repeat-last"       // each page starts with the last item of the page before
	bugPlainNotFound   bug = "plain-not-found"   // not found is errors.New, no sentinel
	bugIgnoreCanceled  bug = "ignore-canceled"   // a canceled context reads as not found
	bugSharedInstances bug = "shared-instances"  // GetInstance returns the stored instance itself
	bugIgnoreTagFilter bug = "ignore-tag-filter" // ListInstances returns everything

	// The load balancer bugs of an adapter whose wire format lacks a field (dropper).
	bugDropAffinity  bug = "lb-drop-affinity"  // specs lose their session affinity on the way to the cloud
	bugDropHostname  bug = "lb-drop-hostname"  // answers lose the cloud's hostname
	bugDropCerts     bug = "lb-drop-certs"     // listeners lose their certificates after the first
	bugDropApp       bug = "lb-drop-app"       // answers lose the listeners' application protocol
	bugDropSettings  bug = "lb-drop-settings"  // specs lose the adapter's settings on the way to the cloud
	bugNarrow        bug = "lb-narrow"         // answers lose the listener names, undeclared (WithLoadBalancerShape)
	bugBuildsUDP     bug = "lb-builds-udp"     // UDP listeners are built though the shape declares them unsupported
	bugDropCookie    bug = "lb-drop-cookie"    // cookie stickiness becomes client-IP stickiness on the way to the cloud
	bugBuildsCookie  bug = "lb-builds-cookie"  // cookie stickiness is built though the shape declares it unsupported
	bugWritesSpec    bug = "lb-writes-spec"    // UpdateLoadBalancer writes into the caller's update.Spec.Targets
	bugWritesChanges bug = "lb-writes-changes" // UpdateLoadBalancer writes into the caller's update.Changes.AddTargets
	bugGroupWrites   bug = "tg-writes-update"  // UpdateTargetGroup reorders the caller's update.Spec.Targets in place

	bugTaglessKeepsTags bug = "routes-tagless-keeps-tags" // declares routes without tags, stores them
	bugNumericOrder     bug = "numeric-order-undeclared"  // sorts its numbered IDs as numbers, run without WithIDOrder
)

// narrowShape is the shape of the narrow backend (newNarrow).
var narrowShape = cloudapi.LoadBalancerShape{
	NotKept:     []cloudapi.Feature{cloudapi.FeatureListenerNames, cloudapi.FeatureHealthyThreshold, cloudapi.FeatureIPFamilies},
	Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureIPv6, cloudapi.FeatureSourceRanges, cloudapi.FeatureSessionAffinity, cloudapi.FeatureTLS},
}

// dropNarrow drops from an answer what the narrow backend does not keep.
func dropNarrow(lb *cloudapi.LoadBalancer) {
	for i := range lb.Spec.Listeners {
		lb.Spec.Listeners[i].Name = ""
	}
	if lb.Spec.HealthCheck != nil {
		lb.Spec.HealthCheck.HealthyThreshold = 0
	}
	lb.Spec.IPFamilies = nil
}

// claimsTagless is a fake cloud whose route API declares that its routes carry no tags
// (cloudapi.TaglessRouteAPI) but keeps them.
type claimsTagless struct{ *fake.Cloud }

func (c claimsTagless) Routes() (cloudapi.RouteAPI, bool) {
	api, ok := c.Cloud.Routes()
	return taglessClaim{api}, ok
}

type taglessClaim struct{ cloudapi.RouteAPI }

func (taglessClaim) RoutesCarryNoTags() bool { return true }

// dropper is a fake cloud behind an adapter that loses a part of every load balancer spec
// it sends (in) or every load balancer it answers (out), as an adapter whose wire format
// lacks a field does.
type dropper struct {
	*fake.Cloud
	in  func(*cloudapi.LoadBalancerSpec)
	out func(*cloudapi.LoadBalancer)
	// check, when set, refuses a spec before it reaches the cloud.
	check func(op cloudapi.Operation, id string, spec cloudapi.LoadBalancerSpec) error
	// scribble, when set, writes into the caller's update before anything else.
	scribble func(u *cloudapi.LoadBalancerUpdate)
	// scribbleGroup, when set, writes into the caller's target group update first.
	scribbleGroup func(u *cloudapi.TargetGroupUpdate)
}

// newDropper returns the backend of a load balancer bug and the suite's options for it.
func newDropper(b bug) (cloudapitest.NewBackend, []cloudapitest.Option) {
	var cfg fake.Config
	d := dropper{in: func(*cloudapi.LoadBalancerSpec) {}, out: func(*cloudapi.LoadBalancer) {}}
	var opts []cloudapitest.Option
	switch b {
	case bugDropAffinity:
		d.in = func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity, s.SessionAffinityTimeout = "", 0 }
	case bugDropCookie:
		d.in = func(s *cloudapi.LoadBalancerSpec) {
			if s.SessionAffinity == cloudapi.SessionAffinityCookie {
				s.SessionAffinity, s.SessionAffinityCookieName = cloudapi.SessionAffinityClientIP, ""
			}
		}
	case bugBuildsCookie:
		opts = append(opts, cloudapitest.WithLoadBalancerShape(cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureCookieAffinity}}))
	case bugDropCerts:
		d.in = func(s *cloudapi.LoadBalancerSpec) {
			for i := range s.Listeners {
				if len(s.Listeners[i].Certificates) > 1 {
					s.Listeners[i].Certificates = s.Listeners[i].Certificates[:1]
				}
			}
		}
	case bugDropSettings:
		d.in = func(s *cloudapi.LoadBalancerSpec) { s.SettingValues = nil }
		opts = append(opts, cloudapitest.WithSettings(map[string]string{"size": "small"}, map[string]string{"size": "large"}))
	case bugDropApp:
		d.out = func(lb *cloudapi.LoadBalancer) {
			for i := range lb.Spec.Listeners {
				lb.Spec.Listeners[i].AppProtocol = ""
			}
		}
	case bugNarrow:
		d.out = dropNarrow
	case bugBuildsUDP:
		opts = append(opts, cloudapitest.WithLoadBalancerShape(cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP}}))
	case bugWritesChanges:
		d.scribble = func(u *cloudapi.LoadBalancerUpdate) {
			if len(u.Changes.AddTargets) > 0 {
				u.Changes.AddTargets[0] = "scribbled"
			}
		}
	case bugGroupWrites:
		on := true
		cfg.Capabilities.TargetGroups = &on
		d.scribbleGroup = func(u *cloudapi.TargetGroupUpdate) { slices.Reverse(u.Spec.Targets) } // a sort of its own, in place
	case bugWritesSpec:
		d.scribble = func(u *cloudapi.LoadBalancerUpdate) {
			if len(u.Spec.Targets) > 0 {
				u.Spec.Targets[0] = "scribbled"
			}
		}
	case bugDropHostname:
		cfg.Hostnames.Domain = "lb.example.com"
		d.out = func(lb *cloudapi.LoadBalancer) { lb.Hostname = "" }
		opts = append(opts, cloudapitest.WithHostnames())
	}
	return func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		cloud, err := fake.New(cfg)
		require.NoError(t, err)
		for _, inst := range f.Instances {
			require.NoError(t, cloud.AddInstance(inst))
		}
		c := d
		c.Cloud = cloud
		return c
	}, opts
}

func (d dropper) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	api, ok := d.Cloud.TargetGroups()
	if !ok || d.scribbleGroup == nil {
		return api, ok
	}
	return scribblingGroups{api, d.scribbleGroup}, true
}

// scribblingGroups writes into the caller's update before it passes it on.
type scribblingGroups struct {
	cloudapi.TargetGroupAPI
	scribble func(u *cloudapi.TargetGroupUpdate)
}

func (g scribblingGroups) UpdateTargetGroup(ctx context.Context, id string, u cloudapi.TargetGroupUpdate) (*cloudapi.TargetGroup, error) {
	g.scribble(&u)
	return g.TargetGroupAPI.UpdateTargetGroup(ctx, id, u)
}

func (d dropper) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := d.Cloud.LoadBalancers()
	return dropperLBs{api, d}, ok
}

type dropperLBs struct {
	cloudapi.LoadBalancerAPI
	d dropper
}

func (a dropperLBs) answer(lb *cloudapi.LoadBalancer, err error) (*cloudapi.LoadBalancer, error) {
	if lb != nil {
		a.d.out(lb)
	}
	return lb, err
}

func (a dropperLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	return a.answer(a.LoadBalancerAPI.GetLoadBalancer(ctx, id))
}

func (a dropperLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	p, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
	if p != nil {
		for i := range p.Items {
			a.d.out(&p.Items[i])
		}
	}
	return p, err
}

func (a dropperLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if a.d.check != nil {
		if err := a.d.check(cloudapi.OpCreateLoadBalancer, "", spec); err != nil {
			return nil, err
		}
	}
	spec = spec.Clone()
	a.d.in(&spec)
	return a.answer(a.LoadBalancerAPI.CreateLoadBalancer(ctx, spec))
}

func (a dropperLBs) UpdateLoadBalancer(ctx context.Context, id string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	if a.d.scribble != nil {
		pristine := u
		pristine.Spec = u.Spec.Clone()
		pristine.Changes.AddTargets = slices.Clone(u.Changes.AddTargets)
		a.d.scribble(&u) // into the caller's arrays
		u = pristine
	}
	if a.d.check != nil {
		if err := a.d.check(cloudapi.OpUpdateLoadBalancer, id, u.Spec); err != nil {
			return nil, err
		}
	}
	u.Spec = u.Spec.Clone()
	a.d.in(&u.Spec)
	return a.answer(a.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, u))
}

// tinyCloud is an in-memory instances-only backend, correct unless told to break.
type tinyCloud struct {
	bug   bug
	order func(a, b string) int // of its IDs: strings.Compare unless set

	mu        sync.Mutex
	instances map[string]*cloudapi.Instance
}

func newTiny(b bug) cloudapitest.NewBackend { return newTinyOrdered(b, strings.Compare) }

// newTinyOrdered is newTiny whose lists order IDs by order.
func newTinyOrdered(b bug, order func(a, b string) int) cloudapitest.NewBackend {
	return func(_ testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		c := &tinyCloud{bug: b, order: order, instances: map[string]*cloudapi.Instance{}}
		for _, inst := range f.Instances {
			inst = inst.Clone()
			c.instances[inst.ID] = &inst
		}
		return c
	}
}

func (c *tinyCloud) Instances() cloudapi.InstanceAPI                 { return c }
func (c *tinyCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return nil, false }
func (c *tinyCloud) Routes() (cloudapi.RouteAPI, bool)               { return nil, false }

func (c *tinyCloud) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	if err := ctx.Err(); err != nil && c.bug != bugIgnoreCanceled {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	inst, ok := c.instances[id]
	switch {
	case !ok && c.bug == bugPlainNotFound:
		return nil, errors.New("no such instance")
	case !ok:
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, id, nil)
	case c.bug == bugSharedInstances:
		return inst, nil
	}
	out := inst.Clone()
	return &out, nil
}

func (c *tinyCloud) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	if err := ctx.Err(); err != nil {
		return nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListInstances, "", err)
	}
	size := opts.PageSize
	if size <= 0 {
		size = 10
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var matching []cloudapi.Instance
	for _, inst := range c.instances {
		if c.bug == bugIgnoreTagFilter || cloudapi.MatchTags(inst.Tags, opts.Tags) {
			matching = append(matching, inst.Clone())
		}
	}
	slices.SortFunc(matching, func(a, b cloudapi.Instance) int { return c.order(a.ID, b.ID) })
	start := 0
	if opts.PageToken != "" {
		start, _ = slices.BinarySearchFunc(matching, opts.PageToken, func(inst cloudapi.Instance, id string) int {
			return c.order(inst.ID, id)
		})
		if start < len(matching) && matching[start].ID == opts.PageToken {
			start++
		}
	}
	if c.bug == bugRepeatLast && start > 0 {
		start--
	}
	end := min(start+size, len(matching))
	page := &cloudapi.InstancePage{Items: matching[start:end]}
	if end < len(matching) {
		page.NextPageToken = matching[end-1].ID
	}
	return page, nil
}

// TestRunPassesCorrectBackend proves that the suite passes a correct backend, and skips
// the load balancer and route checks of a backend without them.
func TestRunPassesCorrectBackend(t *testing.T) {
	cloudapitest.Run(t, newTiny(bugNone), cloudapitest.WithProvisioningReads(0), cloudapitest.WithAddresses(4))
}

// TestRunPassesNarrowBackend proves that a backend narrower than the spec passes with
// the shape it declares: it reports no listener names, healthy threshold or families, and
// refuses UDP, IPv6, source ranges, session affinity and TLS listeners.
func TestRunPassesNarrowBackend(t *testing.T) {
	backend := func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		cloud, err := fake.New(fake.Config{})
		require.NoError(t, err)
		for _, inst := range f.Instances {
			require.NoError(t, cloud.AddInstance(inst))
		}
		return dropper{Cloud: cloud, in: func(*cloudapi.LoadBalancerSpec) {}, out: dropNarrow, check: narrowShape.Check}
	}
	cloudapitest.Run(t, backend, cloudapitest.WithLoadBalancerShape(narrowShape))
}

// numbered holds the suite's instances as a cloud of numbered IDs: the suite's i-th as
// i+1, so that the IDs pass from one digit to two; the unknown ID as 99999.
func numbered(inst cloudapi.Instance) cloudapi.Instance {
	n, err := strconv.Atoi(strings.TrimPrefix(inst.ID, "i-contract-"))
	if err != nil {
		n = 99998
	}
	inst.ID = strconv.Itoa(n + 1)
	return inst
}

// TestRunComparesIDsInTheCloudsOrder: a backend that sorts its numbered IDs as numbers
// ("9" before "10", as Hetzner's id:asc) passes with WithIDOrder; run without it, it
// fails (bugNumericOrder).
func TestRunComparesIDsInTheCloudsOrder(t *testing.T) {
	cloudapitest.Run(t, newTinyOrdered(bugNone, cloudapi.CompareNumericIDs), cloudapitest.WithInstanceShape(numbered),
		cloudapitest.WithIDOrder(cloudapi.CompareNumericIDs))
}

// uuidRE matches a UUID in its canonical form.
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestRunUsesTheAdaptersCertificates: a backend that takes only UUIDs as certificate
// references builds the suite's TLS and HTTPS listeners when the suite names its
// certificates (WithCertificates), where it only refuses them without.
func TestRunUsesTheAdaptersCertificates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []cloudapitest.Option
		built bool
	}{
		{"the adapter's certificates", []cloudapitest.Option{cloudapitest.WithCertificates("0b9c3c3e-6d1e-4e7e-9a51-3f0c2a8b7d10", "5f2d8e4a-1c3b-4a6f-8e9d-7b6a5c4d3e2f")}, true},
		{"the suite's own", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var https atomic.Int32 // creates with an HTTPS listener the backend built
			check := func(op cloudapi.Operation, id string, spec cloudapi.LoadBalancerSpec) error {
				for _, l := range spec.Listeners {
					for _, c := range l.Certificates {
						if !uuidRE.MatchString(c) {
							return cloudapi.NewError(cloudapi.ErrInvalidRequest, op, id, fmt.Errorf("certificate %q is not a UUID", c))
						}
					}
					if op == cloudapi.OpCreateLoadBalancer && l.AppProtocol == cloudapi.AppProtocolHTTPS {
						https.Add(1)
					}
				}
				return nil
			}
			cloudapitest.Run(t, func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
				cloud, err := fake.New(fake.Config{})
				require.NoError(t, err)
				for _, inst := range f.Instances {
					require.NoError(t, cloud.AddInstance(inst))
				}
				return dropper{Cloud: cloud, in: func(*cloudapi.LoadBalancerSpec) {}, out: func(*cloudapi.LoadBalancer) {}, check: check}
			}, tc.opts...)
			assert.Equal(t, tc.built, https.Load() > 0, "HTTPS listeners built")
		})
	}
}

// limitedShape is a cloud's whose health checks take a timeout of 3s at least (the
// suite's own is 2s), whose load balancers serve IPv6 only beside IPv4 and are not both
// internal and dual-stack, and whose listeners take one certificate.
var limitedShape = cloudapi.LoadBalancerShape{
	Unsupported:     []cloudapi.Feature{cloudapi.FeatureIPv6First},
	HealthCheckUnit: time.Second,
	HealthCheckRanges: cloudapi.HealthCheckRanges{Interval: cloudapi.DurationRange{Min: 3 * time.Second, Max: 5 * time.Minute},
		Timeout: cloudapi.DurationRange{Min: 3 * time.Second, Max: time.Minute}, HealthyThreshold: cloudapi.CountRange{Min: 2, Max: 10}},
	Exclusive:       [][2]cloudapi.Feature{{cloudapi.FeatureInternal, cloudapi.FeatureDualStack}},
	MaxCertificates: 1,
}

// TestRunPassesLimitedBackend proves that the suite derives its specs from the shape: a
// backend that refuses what limitedShape refuses passes with it, its health checks within
// the ranges, its refusals of IPv6 first, of internal with dual-stack and of two
// certificates checked.
func TestRunPassesLimitedBackend(t *testing.T) {
	cloudapitest.Run(t, func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
		cloud, err := fake.New(fake.Config{})
		require.NoError(t, err)
		for _, inst := range f.Instances {
			require.NoError(t, cloud.AddInstance(inst))
		}
		return dropper{Cloud: cloud, in: func(*cloudapi.LoadBalancerSpec) {}, out: func(*cloudapi.LoadBalancer) {}, check: limitedShape.Check}
	}, cloudapitest.WithLoadBalancerShape(limitedShape))
}

// TestBrokenBackendChild runs the suite against the backend broken as CCMKIT_CONTRACT_BUG
// says. It runs only as the child process of TestSuiteFailsBrokenBackend, and fails there.
func TestBrokenBackendChild(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as the child process of TestSuiteFailsBrokenBackend")
	}
	b := bug(os.Getenv(envBug))
	if b == bugTaglessKeepsTags {
		cloudapitest.Run(t, func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
			cloud, err := fake.New(fake.Config{})
			require.NoError(t, err)
			for _, inst := range f.Instances {
				require.NoError(t, cloud.AddInstance(inst))
			}
			return claimsTagless{cloud}
		})
		return
	}
	if b == bugNumericOrder {
		cloudapitest.Run(t, newTinyOrdered(bugNone, cloudapi.CompareNumericIDs), cloudapitest.WithInstanceShape(numbered))
		return
	}
	if strings.HasPrefix(string(b), "lb-") || b == bugGroupWrites {
		backend, opts := newDropper(b)
		cloudapitest.Run(t, backend, opts...)
		return
	}
	cloudapitest.Run(t, newTiny(b))
}

// TestSuiteFailsBrokenBackend proves that the suite can fail: it runs the suite against
// broken backends in a child process, which must fail in the subtest that checks the
// broken promise, with a message that quotes it.
func TestSuiteFailsBrokenBackend(t *testing.T) {
	for _, tc := range []struct {
		bug         bug
		wantSubtest string
		wantMessage string
	}{
		{bugRepeatLast, "TestBrokenBackendChild/instances/list_pagination/page_size_1",
			"never returns an item twice"},
		{bugPlainNotFound, "TestBrokenBackendChild/instances/get_unknown_is_not_found",
			"want an error matching not found with errors.Is"},
		{bugPlainNotFound, "TestBrokenBackendChild/errors/not_found_is_classified_as_not_found", ""},
		{bugIgnoreCanceled, "TestBrokenBackendChild/instances/get_with_canceled_context_is_not_not-found",
			"must never be returned for a failure to find out"},
		{bugSharedInstances, "TestBrokenBackendChild/instances/get_and_list_return_copies",
			"answers must be copies"},
		{bugIgnoreTagFilter, "TestBrokenBackendChild/instances/list_tag_filter",
			"carry every tag in opts.Tags"},
		{bugDropAffinity, "TestBrokenBackendChild/loadbalancers/optional_settings_are_kept_or_refused/session_affinity_ClientIP",
			`CreateLoadBalancer with session affinity ClientIP, as it answered: broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`},
		{bugDropCerts, "TestBrokenBackendChild/loadbalancers/optional_settings_are_kept_or_refused/a_TLS_listener_with_two_certificates",
			`CreateLoadBalancer with a TLS listener with two certificates, as it answered: broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`},
		{bugDropApp, "TestBrokenBackendChild/loadbalancers/optional_settings_are_kept_or_refused/an_HTTP_listener",
			`CreateLoadBalancer with an HTTP listener, as it answered: broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`},
		{bugDropSettings, "TestBrokenBackendChild/loadbalancers/optional_settings_are_kept_or_refused/an_adapter_setting",
			`CreateLoadBalancer with an adapter setting, as it answered: broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`},
		{bugDropSettings, "TestBrokenBackendChild/loadbalancers/declared_settings_are_kept",
			`CreateLoadBalancer with the settings map[size:small], as it answered: broke "A backend keeps every setting exactly as given, or refuses a spec with one it does not know or cannot build with ErrInvalidRequest; it never drops one"`},
		{bugNarrow, "TestBrokenBackendChild/loadbalancers/create_and_get_round-trip_the_spec",
			`broke "returns it as the cloud stored it"`},
		{bugBuildsUDP, "TestBrokenBackendChild/loadbalancers/unsupported_parts_are_refused/udp",
			`CreateLoadBalancer with udp, which the backend's shape refuses`},
		{bugDropCookie, "TestBrokenBackendChild/loadbalancers/optional_settings_are_kept_or_refused/session_affinity_Cookie_on_an_HTTP_listener",
			`CreateLoadBalancer with session affinity Cookie on an HTTP listener, as it answered: broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`},
		{bugBuildsCookie, "TestBrokenBackendChild/loadbalancers/unsupported_parts_are_refused/session-affinity-cookie",
			`CreateLoadBalancer with session-affinity-cookie, which the backend's shape refuses`},
		{bugTaglessKeepsTags, "TestBrokenBackendChild/routes/create_list_delete_round_trip/IPv4",
			`broke "CreateRoute drops RouteSpec.Tags; every route it returns or lists has no tags" (cloudapi.TaglessRouteAPI)`},
		{bugNumericOrder, "TestBrokenBackendChild/instances/list_pagination/page_size_1",
			`broke "pages are ordered by ID": "10" after "9"`},
		{bugWritesSpec, "TestBrokenBackendChild/loadbalancers/update_applies_the_changes",
			`UpdateLoadBalancer: broke "the update a write is given is the caller's, read only"`},
		{bugGroupWrites, "TestBrokenBackendChild/targetgroups/create_list_update_delete_round_trip",
			`UpdateTargetGroup: broke "the update a write is given is the caller's, read only"`},
		{bugWritesChanges, "TestBrokenBackendChild/loadbalancers/update_applies_the_changes",
			`UpdateLoadBalancer: broke "the update a write is given is the caller's, read only"`},
		{bugDropHostname, "TestBrokenBackendChild/loadbalancers/becomes_active_with_an_address_of_every_requested_family/families_[]",
			`broke "Hostname is the DNS name the cloud gives the load balancer": none, but the suite runs WithHostnames`},
	} {
		t.Run(string(tc.bug)+"/"+tc.wantSubtest[strings.LastIndex(tc.wantSubtest, "/")+1:], func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenBackendChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envChild+"=1", envBug+"="+string(tc.bug))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAsf(t, err, &exit, "the suite passed a backend with bug %q; output:\n%s", tc.bug, out)
			assert.NotZero(t, exit.ExitCode())
			assert.Contains(t, string(out), fmt.Sprintf("--- FAIL: %s ", tc.wantSubtest), "the failing subtest is not named")
			assert.Contains(t, string(out), tc.wantMessage, "the failure does not quote the broken promise")
			// Only the broken promise fails: the other instance checks pass.
			assert.Contains(t, string(out), "--- PASS: TestBrokenBackendChild/instances/get_returns_the_stored_instance ")
		})
	}
}
