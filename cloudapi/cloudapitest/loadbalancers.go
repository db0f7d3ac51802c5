package cloudapitest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// Tag values of the load balancers the suite creates.
const contractCluster = "contract"

// lbBackend builds a backend with a few instances to target and returns its load
// balancer API, or skips t when the backend has none.
func (s *suite) lbBackend(t *testing.T) cloudapi.LoadBalancerAPI {
	t.Helper()
	api, ok := s.backend(t, s.makeInstances(4)).LoadBalancers()
	if !ok {
		t.Skip("Client.LoadBalancers reports that the cloud has no load balancers")
	}
	require.NotNil(t, api, "Client.LoadBalancers returned true and a nil API")
	return api
}

// lbSpec returns a valid public IPv4 spec named name that uses most fields, its health
// check within the backend's ranges (LoadBalancerShape.FitHealthCheck), changed by tweaks.
func (s *suite) lbSpec(name string, tweaks ...func(*cloudapi.LoadBalancerSpec)) cloudapi.LoadBalancerSpec {
	spec := cloudapi.LoadBalancerSpec{
		Name: name,
		Listeners: []cloudapi.Listener{
			{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
			{Name: "dns", Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053},
		},
		Targets: []string{s.instanceID(0), s.instanceID(1)},
		HealthCheck: &cloudapi.HealthCheck{
			Protocol: cloudapi.HealthCheckHTTP, Port: 30081, Path: "/healthz",
			Interval: 5 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3,
		},
		SourceRanges:  []string{"10.0.0.0/8", "192.168.0.0/16"},
		ProxyProtocol: true,
		IPFamilies:    []cloudapi.IPFamily{cloudapi.IPv4},
		Tags: map[string]string{
			cloudapi.TagCluster:     contractCluster,
			cloudapi.TagService:     "uid-" + name,
			cloudapi.TagServiceName: "default/" + name,
		},
	}
	*spec.HealthCheck = s.opts.shape.FitHealthCheck(*spec.HealthCheck)
	s.supported(&spec)
	for _, tweak := range tweaks {
		tweak(&spec)
	}
	return spec
}

// supported removes from spec what the backend's shape does not support
// (WithLoadBalancerShape): listeners it cannot build, source ranges, the PROXY protocol,
// internal, requested addresses, session affinity, IPv6, IPv6 first and both families
// (also where an exclusive pair with dual-stack asks for one family).
func (s *suite) supported(spec *cloudapi.LoadBalancerSpec) {
	sh := s.opts.shape
	spec.Listeners = slices.DeleteFunc(spec.Listeners, func(l cloudapi.Listener) bool {
		u := cloudapi.LoadBalancerShape{Unsupported: sh.Unsupported}
		return len(u.Uses(cloudapi.LoadBalancerSpec{Listeners: []cloudapi.Listener{l}})) > 0
	})
	if !sh.Supports(cloudapi.FeatureSourceRanges) {
		spec.SourceRanges = nil
	}
	if !sh.Supports(cloudapi.FeatureProxyProtocol) {
		spec.ProxyProtocol = false
	}
	if !sh.Supports(cloudapi.FeatureInternal) {
		spec.Internal = false
	}
	if !sh.Supports(cloudapi.FeatureRequestedIPs) {
		spec.RequestedIPs = nil
	}
	if !sh.Supports(cloudapi.FeatureSessionAffinity) {
		spec.SessionAffinity, spec.SessionAffinityTimeout = cloudapi.SessionAffinityNone, 0
	}
	if !sh.Supports(cloudapi.FeatureIPv6) {
		spec.IPFamilies = slices.DeleteFunc(spec.IPFamilies, func(f cloudapi.IPFamily) bool { return f == cloudapi.IPv6 })
	}
	if !sh.Supports(cloudapi.FeatureIPv6First) && len(spec.IPFamilies) > 0 && spec.IPFamilies[0] == cloudapi.IPv6 {
		spec.IPFamilies = append(spec.IPFamilies[1:], cloudapi.IPv6) // IPv6 second, or alone (then refused below)
		if len(spec.IPFamilies) == 1 {
			spec.IPFamilies = nil
		}
	}
	dual := !sh.Supports(cloudapi.FeatureDualStack)
	for _, pair := range sh.Excluded(*spec) {
		dual = dual || slices.Contains(pair[:], cloudapi.FeatureDualStack)
	}
	if dual && len(spec.IPFamilies) > 1 {
		spec.IPFamilies = spec.IPFamilies[:1]
	}
}

func withFamilies(f ...cloudapi.IPFamily) func(*cloudapi.LoadBalancerSpec) {
	return func(s *cloudapi.LoadBalancerSpec) { s.IPFamilies = f }
}

func withTags(kv ...string) func(*cloudapi.LoadBalancerSpec) {
	return func(s *cloudapi.LoadBalancerSpec) {
		s.Tags = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Tags[kv[i]] = kv[i+1]
		}
	}
}

// requireSpec fails t unless got configures the same load balancer as want, compared as
// DiffLoadBalancer compares (targets and source ranges as sets), the parts the backend's
// shape does not keep not at all.
func (s *suite) requireSpec(t testing.TB, want, got cloudapi.LoadBalancerSpec, format string, args ...any) {
	t.Helper()
	if err := s.checkSpec(want, got); err != nil {
		require.FailNow(t, fmt.Sprintf(format, args...)+": "+err.Error())
	}
}

func (s *suite) checkSpec(want, got cloudapi.LoadBalancerSpec) error {
	if c := cloudapi.DiffLoadBalancer(want, s.opts.shape.Comparable(got, want)); !c.Empty() {
		return fmt.Errorf("the spec differs from the one sent in %+v\nsent:   %+v\nstored: %+v", c, want, got)
	}
	return nil
}

// createLB creates a load balancer from spec and checks the create answer.
func (s *suite) createLB(t testing.TB, api cloudapi.LoadBalancerAPI, spec cloudapi.LoadBalancerSpec) *cloudapi.LoadBalancer {
	t.Helper()
	lb, err := s.createLBErr(t.Context(), api, spec)
	require.NoError(t, err)
	return lb
}

func (s *suite) createLBErr(ctx context.Context, api cloudapi.LoadBalancerAPI, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	want := spec.Clone()
	lb, err := api.CreateLoadBalancer(ctx, spec)
	switch {
	case err != nil:
		return nil, fmt.Errorf("CreateLoadBalancer(%q) of a valid spec: %w", want.Name, err)
	case lb == nil:
		return nil, fmt.Errorf("CreateLoadBalancer(%q) returned nil and no error", want.Name)
	case lb.ID == "":
		return nil, fmt.Errorf("CreateLoadBalancer(%q): the load balancer has no ID", want.Name)
	}
	if err := s.checkSpec(want, lb.Spec); err != nil {
		return nil, fmt.Errorf("CreateLoadBalancer(%q): broke \"returns it as the cloud stored it\": %w", want.Name, err)
	}
	if lb.Status != cloudapi.LoadBalancerProvisioning && lb.Status != cloudapi.LoadBalancerActive {
		return nil, fmt.Errorf("CreateLoadBalancer(%q): status %q, want provisioning or active", want.Name, lb.Status)
	}
	return lb, nil
}

// waitActive reads the load balancer until it is active and checks its addresses, within
// the provisioning read budget.
func (s *suite) waitActive(t testing.TB, api cloudapi.LoadBalancerAPI, lb *cloudapi.LoadBalancer) *cloudapi.LoadBalancer {
	t.Helper()
	got, err := s.waitActiveErr(t.Context(), api, lb)
	require.NoError(t, err)
	return got
}

func (s *suite) waitActiveErr(ctx context.Context, api cloudapi.LoadBalancerAPI, lb *cloudapi.LoadBalancer) (*cloudapi.LoadBalancer, error) {
	lb, err := s.awaitActive(ctx, api, lb)
	if err != nil {
		return nil, err
	}
	if err := s.checkActive(lb); err != nil {
		return nil, err
	}
	return lb, nil
}

// awaitActive reads the load balancer until it is active, within the provisioning read
// budget.
func (s *suite) awaitActive(ctx context.Context, api cloudapi.LoadBalancerAPI, lb *cloudapi.LoadBalancer) (*cloudapi.LoadBalancer, error) {
	for reads := 0; lb.Status != cloudapi.LoadBalancerActive; reads++ {
		if lb.Status == cloudapi.LoadBalancerError {
			return nil, fmt.Errorf("load balancer %q (%s) failed to provision: status error", lb.ID, lb.Spec.Name)
		}
		if reads >= s.opts.provisioningReads {
			return nil, fmt.Errorf("load balancer %q (%s) still %q after %d GetLoadBalancer reads (WithProvisioningReads)",
				lb.ID, lb.Spec.Name, lb.Status, reads)
		}
		got, err := api.GetLoadBalancer(ctx, lb.ID)
		if err != nil {
			return nil, fmt.Errorf("GetLoadBalancer(%q) while provisioning: %w", lb.ID, err)
		}
		if got == nil {
			return nil, fmt.Errorf("GetLoadBalancer(%q) returned nil and no error", lb.ID)
		}
		if got.ID != lb.ID {
			return nil, fmt.Errorf("GetLoadBalancer(%q) returned load balancer %q", lb.ID, got.ID)
		}
		lb = got
	}
	return lb, nil
}

// families returns the families a spec asks for, with the documented default.
func families(spec cloudapi.LoadBalancerSpec) []cloudapi.IPFamily {
	if len(spec.IPFamilies) == 0 {
		return []cloudapi.IPFamily{cloudapi.IPv4}
	}
	return spec.IPFamilies
}

// checkActive checks the addresses and the hostname of an active load balancer against
// its families and the suite's options.
func (s *suite) checkActive(lb *cloudapi.LoadBalancer) error {
	if err := s.checkHostname(lb); err != nil {
		return err
	}
	if s.opts.noAddresses {
		if len(lb.Addresses) > 0 {
			return fmt.Errorf("active load balancer %q (%s) has addresses %v, but the suite runs WithoutAddresses", lb.ID, lb.Spec.Name, lb.Addresses)
		}
		return nil
	}
	return s.checkAddresses(lb)
}

// checkHostname checks the hostname of an active load balancer.
func (s *suite) checkHostname(lb *cloudapi.LoadBalancer) error {
	h := lb.Hostname
	prefix := fmt.Sprintf("active load balancer %q (%s) with hostname %q", lb.ID, lb.Spec.Name, h)
	switch {
	case h == "" && s.opts.hostnames:
		return fmt.Errorf("%s: broke \"Hostname is the DNS name the cloud gives the load balancer\": none, but the suite runs WithHostnames (does the adapter drop the cloud's hostname?)", prefix)
	case h == "":
		return nil
	case net.ParseIP(h) != nil:
		return fmt.Errorf("%s: broke \"Hostname ... never an IP address\"", prefix)
	}
	msgs := validation.IsDNS1123Subdomain(h)
	for label := range strings.SplitSeq(h, ".") {
		msgs = append(msgs, validation.IsDNS1123Label(label)...)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s: broke \"Hostname ... lower case, a DNS subdomain of at most 253 characters\": %s", prefix, strings.Join(msgs, "; "))
	}
	return nil
}

// checkAddresses checks the addresses of an active load balancer against its families.
func (s *suite) checkAddresses(lb *cloudapi.LoadBalancer) error {
	fams := families(lb.Spec)
	kept := s.opts.shape.Keeps(cloudapi.FeatureIPFamilies)
	if !kept { // the backend reports every address the load balancer has, at least one
		fams = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
		if len(lb.Addresses) == 0 {
			return fmt.Errorf("active load balancer %q (%s) has no address", lb.ID, lb.Spec.Name)
		}
	}
	prefix := fmt.Sprintf("active load balancer %q (%s) with IPFamilies %v (empty means IPv4) and addresses %v",
		lb.ID, lb.Spec.Name, lb.Spec.IPFamilies, lb.Addresses)
	seen := map[cloudapi.IPFamily]bool{}
	dup := map[netip.Addr]bool{}
	for i, a := range lb.Addresses {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return fmt.Errorf("%s: broke \"Addresses are the IP addresses assigned\": %q does not parse: %w", prefix, a, err)
		}
		fam := cloudapi.IPv6
		if ip.Unmap().Is4() {
			fam = cloudapi.IPv4
		}
		if !slices.Contains(fams, fam) {
			return fmt.Errorf("%s: broke \"IPFamilies are the address families the load balancer serves\": %q is %s", prefix, a, fam)
		}
		if kept && i == 0 && fam != fams[0] {
			return fmt.Errorf("%s: broke \"Addresses ... primary family first\": the first address is %s", prefix, fam)
		}
		if dup[ip] {
			return fmt.Errorf("%s: address %q is listed twice", prefix, a)
		}
		dup[ip] = true
		seen[fam] = true
	}
	for _, f := range fams {
		if kept && !seen[f] {
			return fmt.Errorf("%s: broke \"IPFamilies are the address families the load balancer serves\": no %s address", prefix, f)
		}
	}
	return nil
}

// scribbleLB changes every field of lb that a backend could share with its own state.
func scribbleLB(lb *cloudapi.LoadBalancer) {
	lb.Spec.Name = "scribbled"
	for i := range lb.Spec.Listeners {
		lb.Spec.Listeners[i].Port = 1
		if len(lb.Spec.Listeners[i].Certificates) > 0 {
			lb.Spec.Listeners[i].Certificates[0] = "scribbled"
		}
	}
	if len(lb.Spec.Targets) > 0 {
		lb.Spec.Targets[0] = "scribbled"
	}
	if lb.Spec.HealthCheck != nil {
		lb.Spec.HealthCheck.Path = "/scribbled"
	}
	if len(lb.Spec.SourceRanges) > 0 {
		lb.Spec.SourceRanges[0] = "0.0.0.0/0"
	}
	if len(lb.Spec.IPFamilies) > 0 {
		lb.Spec.IPFamilies[0] = "scribbled"
	}
	if lb.Spec.Tags != nil {
		lb.Spec.Tags[cloudapi.TagService] = "scribbled"
	}
	if len(lb.Addresses) > 0 {
		lb.Addresses[0] = "192.0.2.255"
	}
}

func (s *suite) listAllLBs(t testing.TB, api cloudapi.LoadBalancerAPI, opts cloudapi.ListOptions, maxItems int) []cloudapi.LoadBalancer {
	t.Helper()
	return listAll(t, cloudapi.OpListLoadBalancers, listLoadBalancers(api), lbID, s.opts.order, opts, maxItems)
}

func (s *suite) testLoadBalancers(t *testing.T) {
	t.Run("create and get round-trip the spec", func(t *testing.T) {
		api := s.lbBackend(t)
		spec := s.lbSpec("ct-create")
		want := spec.Clone()
		created := s.createLB(t, api, spec)
		require.Equal(t, want, spec, "CreateLoadBalancer: broke \"the spec a write is given is the caller's, read only\"")
		// The backend must not keep the caller's slices and maps.
		spec.Listeners[0].Port = 1
		spec.Targets[0] = "scribbled"
		spec.Tags[cloudapi.TagService] = "scribbled"
		spec.HealthCheck.Port = 1
		scribbleLB(created)

		got, err := api.GetLoadBalancer(t.Context(), created.ID)
		require.NoError(t, err, "GetLoadBalancer right after CreateLoadBalancer")
		require.NotNil(t, got, "GetLoadBalancer returned nil and no error")
		assert.Equal(t, created.ID, got.ID, "GetLoadBalancer: broke \"returns the load balancer with the given ID\"")
		s.requireSpec(t, want, got.Spec,
			"GetLoadBalancer after create: broke \"returns it as the cloud stored it\" (a backend must copy the caller's spec and return copies)")

		scribbleLB(got)
		again, err := api.GetLoadBalancer(t.Context(), created.ID)
		require.NoError(t, err)
		s.requireSpec(t, want, again.Spec,
			"GetLoadBalancer: the backend's load balancer changed when a caller changed one it got: answers must be copies")
	})

	t.Run("becomes active with an address of every requested family", func(t *testing.T) {
		for _, fams := range [][]cloudapi.IPFamily{
			nil,
			{cloudapi.IPv4},
			{cloudapi.IPv6},
			{cloudapi.IPv4, cloudapi.IPv6},
			{cloudapi.IPv6, cloudapi.IPv4},
		} {
			t.Run(fmt.Sprintf("families %v", fams), func(t *testing.T) {
				if used := s.opts.shape.Uses(cloudapi.LoadBalancerSpec{IPFamilies: fams}); len(used) > 0 {
					t.Skipf("the backend's shape does not support %v (WithLoadBalancerShape; its refusal is checked apart)", used)
				}
				api := s.lbBackend(t)
				spec := s.lbSpec("ct-active", withFamilies(fams...))
				lb := s.waitActive(t, api, s.createLB(t, api, spec))
				s.requireSpec(t, spec, lb.Spec, "GetLoadBalancer of an active load balancer: the spec changed while provisioning")
				listed := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: spec.Tags}, 1)
				require.Len(t, listed, 1)
				assert.Equal(t, lb.Hostname, listed[0].Hostname,
					"ListLoadBalancers and GetLoadBalancer disagree on the hostname: broke \"returns it as the cloud stored it\"")
				assert.ElementsMatch(t, lb.Addresses, listed[0].Addresses,
					"ListLoadBalancers and GetLoadBalancer disagree on the addresses")
			})
		}
	})

	t.Run("duplicate name is a conflict", func(t *testing.T) {
		api := s.lbBackend(t)
		first := s.createLB(t, api, s.lbSpec("ct-dup"))
		_, err := api.CreateLoadBalancer(t.Context(), s.lbSpec("ct-dup", withTags(cloudapi.TagService, "uid-other")))
		requireClass(t, err, cloudapi.ErrConflict,
			"CreateLoadBalancer with the name of an existing load balancer: broke \"returns an error matching ErrConflict when ... a load balancer with the same name already exists\"")
		all := s.listAllLBs(t, api, cloudapi.ListOptions{}, 2)
		assert.Equal(t, []string{first.ID}, ids(all, lbID),
			"CreateLoadBalancer refused with ErrConflict: broke \"The request was not applied\"")

		require.NoError(t, api.DeleteLoadBalancer(t.Context(), first.ID))
		s.createLB(t, api, s.lbSpec("ct-dup"))
	})

	t.Run("update applies the changes", func(t *testing.T) {
		api := s.lbBackend(t)
		old := s.waitActive(t, api, s.createLB(t, api, s.lbSpec("ct-update")))
		desired := old.Spec.Clone()
		desired.Listeners = []cloudapi.Listener{
			{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30090},   // changed
			{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443}, // added
		} // UDP 53 removed
		desired.Targets = []string{s.instanceID(1), s.instanceID(2), s.instanceID(3)}
		hc := s.opts.shape.FitHealthCheck(cloudapi.HealthCheck{
			Protocol: cloudapi.HealthCheckTCP, Port: 30090,
			Interval: 10 * time.Second, Timeout: 3 * time.Second, HealthyThreshold: 3, UnhealthyThreshold: 2,
		})
		desired.HealthCheck = &hc
		desired.SourceRanges = []string{"172.16.0.0/12"}
		desired.ProxyProtocol = false
		s.supported(&desired)
		desired.Tags[cloudapi.TagServiceName] = "default/ct-update-renamed"
		desired.Tags["extra"] = "yes"
		changes := cloudapi.DiffLoadBalancer(old.Spec, desired)
		require.False(t, changes.Empty())

		// Its own copies (a second diff gives changes' slices anew): what the backend
		// writes into them shows against desired and changes.
		given := cloudapi.LoadBalancerUpdate{Spec: desired.Clone(), Changes: cloudapi.DiffLoadBalancer(old.Spec, desired)}
		updated, err := api.UpdateLoadBalancer(t.Context(), old.ID, given)
		require.NoError(t, err, "UpdateLoadBalancer of listeners, targets, health check, source ranges, PROXY protocol and tags")
		require.Equal(t, cloudapi.LoadBalancerUpdate{Spec: desired, Changes: changes}, given,
			"UpdateLoadBalancer: broke \"the update a write is given is the caller's, read only\"")
		require.NotNil(t, updated, "UpdateLoadBalancer returned nil and no error")
		assert.Equal(t, old.ID, updated.ID, "UpdateLoadBalancer: the ID changed; it is \"unique, immutable\"")
		assert.Equal(t, old.Hostname, updated.Hostname, "UpdateLoadBalancer: broke \"a hostname, once given, does not change\"")
		s.requireSpec(t, desired, updated.Spec,
			"UpdateLoadBalancer: broke \"changes the load balancer ... so that it matches update.Spec, and returns it as the cloud stored it\"")
		assert.NotEqual(t, cloudapi.LoadBalancerError, updated.Status, "UpdateLoadBalancer left the load balancer in status error")

		got, err := api.GetLoadBalancer(t.Context(), old.ID)
		require.NoError(t, err, "GetLoadBalancer after UpdateLoadBalancer")
		s.requireSpec(t, desired, got.Spec, "GetLoadBalancer after UpdateLoadBalancer: the update was not stored")

		found := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: map[string]string{"extra": "yes"}}, 1)
		assert.Equal(t, []string{old.ID}, ids(found, lbID),
			"ListLoadBalancers by a tag added by UpdateLoadBalancer: broke \"returns one page of the load balancers that carry every tag\"")
	})

	t.Run("optional settings are kept or refused", func(t *testing.T) {
		for _, o := range optionalSettings(s.opts.certificates) {
			t.Run(o.name, func(t *testing.T) { s.checkOptional(t, o) })
		}
	})

	t.Run("unsupported parts are refused", func(t *testing.T) {
		if len(s.opts.shape.Unsupported) == 0 {
			t.Skip("the backend's shape declares nothing unsupported (WithLoadBalancerShape)")
		}
		for _, f := range s.opts.shape.Unsupported {
			t.Run(string(f), func(t *testing.T) {
				want := s.lbSpec("ct-unsupported", uses(f, s.opts.certificates[0]))
				require.Containsf(t, s.opts.shape.Uses(want), f, "the suite's spec for %s", f)
				s.checkRefused(t, string(f), want)
			})
		}
	})

	t.Run("exclusive parts are refused together", func(t *testing.T) {
		if len(s.opts.shape.Exclusive) == 0 {
			t.Skip("the backend's shape declares no exclusive features (WithLoadBalancerShape)")
		}
		for _, pair := range s.opts.shape.Exclusive {
			t.Run(fmt.Sprintf("%s with %s", pair[0], pair[1]), func(t *testing.T) {
				want := s.lbSpec("ct-exclusive", uses(pair[0], s.opts.certificates[0]), uses(pair[1], s.opts.certificates[0]))
				require.Equalf(t, [][2]cloudapi.Feature{pair}, s.opts.shape.Excluded(want), "the suite's spec for %v", pair)
				s.checkRefused(t, fmt.Sprintf("%s with %s", pair[0], pair[1]), want)
			})
		}
	})

	t.Run("declared settings are kept", func(t *testing.T) {
		if len(s.opts.settings) == 0 {
			t.Skip("the backend declares no settings (WithSettings)")
		}
		s.checkDeclaredSettings(t)
	})

	t.Run("update with an invalid spec is an invalid request", func(t *testing.T) {
		api := s.lbBackend(t)
		old := s.waitActive(t, api, s.createLB(t, api, s.lbSpec("ct-update-invalid")))
		desired := old.Spec.Clone()
		desired.Listeners[0].Protocol = "HTTP2"
		_, err := api.UpdateLoadBalancer(t.Context(), old.ID,
			cloudapi.LoadBalancerUpdate{Spec: desired, Changes: cloudapi.DiffLoadBalancer(old.Spec, desired)})
		requireClass(t, err, cloudapi.ErrInvalidRequest,
			"UpdateLoadBalancer to listener protocol HTTP2: broke \"ErrInvalidRequest means the cloud rejected the request as malformed or unsupported\"")
		got, err := api.GetLoadBalancer(t.Context(), old.ID)
		require.NoError(t, err)
		s.requireSpec(t, old.Spec, got.Spec, "UpdateLoadBalancer refused with ErrInvalidRequest changed the load balancer")
	})

	t.Run("unknown ID is not found", func(t *testing.T) {
		api := s.lbBackend(t)
		const id = "lb-contract-does-not-exist"
		_, err := api.GetLoadBalancer(t.Context(), id)
		requireClass(t, err, cloudapi.ErrNotFound,
			"GetLoadBalancer of an unknown ID: broke \"or an error matching ErrNotFound when the cloud is certain that it does not exist\"")
		spec := s.lbSpec("ct-unknown")
		_, err = api.UpdateLoadBalancer(t.Context(), id,
			cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{}, spec)})
		requireClass(t, err, cloudapi.ErrNotFound,
			"UpdateLoadBalancer of an unknown ID: broke \"returns an error matching ErrNotFound when the load balancer does not exist\"")
		err = api.DeleteLoadBalancer(t.Context(), id)
		requireClass(t, err, cloudapi.ErrNotFound,
			"DeleteLoadBalancer of an unknown ID: broke \"returns an error matching ErrNotFound when there was nothing to delete\"")
		assert.Empty(t, s.listAllLBs(t, api, cloudapi.ListOptions{}, 1), "UpdateLoadBalancer of an unknown ID created a load balancer")
	})

	t.Run("delete", func(t *testing.T) {
		api := s.lbBackend(t)
		keep := s.waitActive(t, api, s.createLB(t, api, s.lbSpec("ct-keep")))
		for _, active := range []bool{false, true} {
			lb := s.createLB(t, api, s.lbSpec(fmt.Sprintf("ct-delete-%t", active)))
			if active {
				lb = s.waitActive(t, api, lb)
			}
			require.NoErrorf(t, api.DeleteLoadBalancer(t.Context(), lb.ID), "DeleteLoadBalancer of a load balancer (active %t)", active)
			_, err := api.GetLoadBalancer(t.Context(), lb.ID)
			requireClass(t, err, cloudapi.ErrNotFound,
				"GetLoadBalancer after DeleteLoadBalancer: broke \"DeleteLoadBalancer deletes the load balancer\"")
			err = api.DeleteLoadBalancer(t.Context(), lb.ID)
			requireClass(t, err, cloudapi.ErrNotFound,
				"DeleteLoadBalancer twice: broke \"returns an error matching ErrNotFound when there was nothing to delete\"")
		}
		all := s.listAllLBs(t, api, cloudapi.ListOptions{}, 3)
		assert.Equal(t, []string{keep.ID}, ids(all, lbID), "ListLoadBalancers after DeleteLoadBalancer: deleted load balancers are listed")
	})

	t.Run("owner tags find exactly the owned load balancers", func(t *testing.T) {
		api := s.lbBackend(t)
		owner := func(cluster, service string) func(*cloudapi.LoadBalancerSpec) {
			return withTags(cloudapi.TagCluster, cluster, cloudapi.TagService, service)
		}
		a := s.createLB(t, api, s.lbSpec("ct-owner-a", owner("c1", "s1")))
		b := s.createLB(t, api, s.lbSpec("ct-owner-b", owner("c1", "s2")))
		c := s.createLB(t, api, s.lbSpec("ct-owner-c", owner("c2", "s1")))
		d := s.createLB(t, api, s.lbSpec("ct-owner-d",
			withTags(cloudapi.TagCluster, "c1", cloudapi.TagService, "s1", cloudapi.TagServiceName, "default/d")))
		e := s.createLB(t, api, s.lbSpec("ct-owner-e", withTags()))
		for _, tc := range []struct {
			filter map[string]string
			want   []*cloudapi.LoadBalancer
		}{
			{map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "s1"}, []*cloudapi.LoadBalancer{a, d}},
			{map[string]string{cloudapi.TagCluster: "c1"}, []*cloudapi.LoadBalancer{a, b, d}},
			{map[string]string{cloudapi.TagService: "s1"}, []*cloudapi.LoadBalancer{a, c, d}},
			{map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "s3"}, nil},
			{map[string]string{"no-such-key": ""}, nil},
			{nil, []*cloudapi.LoadBalancer{a, b, c, d, e}},
		} {
			var wantIDs []string
			for _, lb := range tc.want {
				wantIDs = append(wantIDs, lb.ID)
			}
			slices.SortFunc(wantIDs, s.opts.order)
			for _, size := range []int{1, 0} {
				got := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: tc.filter, PageSize: size}, 5)
				assert.Equalf(t, wantIDs, ids(got, lbID),
					"ListLoadBalancers with Tags %v, page size %d: broke \"returns one page of the load balancers that carry every tag in opts.Tags\"",
					tc.filter, size)
			}
		}
	})

	t.Run("a shared load balancer's tags and listener names are kept", func(t *testing.T) {
		// Several Services share one load balancer: the share's tags instead of a
		// Service's, each listener named by its Service's UID, one listener removed alone.
		api := s.lbBackend(t)
		shared := func(spec *cloudapi.LoadBalancerSpec) {
			spec.Tags = map[string]string{cloudapi.TagCluster: contractCluster, cloudapi.TagShare: "default/front", cloudapi.TagShareNodes: "all-nodes"}
			spec.Listeners = []cloudapi.Listener{
				{Name: "0b7f4c9e-5d2a-4c3b-9f1e-2a6d8c4b7e10:http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
				{Name: "7e1d2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b:ssh", Protocol: cloudapi.ProtocolTCP, Port: 22, TargetPort: 30022},
			}
		}
		spec := s.lbSpec("ct-shared", shared)
		created := s.createLB(t, api, spec)
		got := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: contractCluster, cloudapi.TagShare: "default/front"}}, 5)
		require.Equal(t, []string{created.ID}, ids(got, lbID), "ListLoadBalancers by the share's tags: broke \"returns one page of the load balancers that carry every tag in opts.Tags\"")
		s.requireSpec(t, spec, got[0].Spec, "a shared load balancer as listed: its tags and listener names must be kept as given")

		want := spec.Clone()
		want.Listeners = want.Listeners[1:]
		updated, err := api.UpdateLoadBalancer(t.Context(), created.ID, cloudapi.LoadBalancerUpdate{Spec: want, Changes: cloudapi.DiffLoadBalancer(spec, want)})
		require.NoError(t, err, "UpdateLoadBalancer removing one Service's listener")
		s.requireSpec(t, want, updated.Spec, "UpdateLoadBalancer removing one listener: the other listener and its name must stay")
	})

	t.Run("list pagination", func(t *testing.T) {
		api := s.lbBackend(t)
		const n = 15
		want := map[string]cloudapi.LoadBalancerSpec{}
		for i := range n {
			lb := s.createLB(t, api, s.lbSpec(fmt.Sprintf("ct-page-%02d", i)))
			want[lb.ID] = s.lbSpec(fmt.Sprintf("ct-page-%02d", i))
		}
		wantIDs := slices.SortedFunc(maps.Keys(want), s.opts.order)
		require.Len(t, wantIDs, n, "CreateLoadBalancer: broke \"unique, immutable identifier\": IDs repeat")
		for _, size := range pageSizes {
			got := s.listAllLBs(t, api, cloudapi.ListOptions{PageSize: size}, n)
			require.Equalf(t, wantIDs, ids(got, lbID),
				"ListLoadBalancers, page size %d, paged to the end: not every load balancer exactly once, in ID order", size)
			for _, lb := range got {
				s.requireSpec(t, want[lb.ID], lb.Spec, "ListLoadBalancers: load balancer %q", lb.ID)
			}
		}
	})

	t.Run("list pagination over a changing set", func(t *testing.T) {
		api := s.lbBackend(t)
		var created []string
		for i := range 12 {
			created = append(created, s.createLB(t, api, s.lbSpec(fmt.Sprintf("ct-change-%02d", i))).ID)
		}
		checkChangingSet(t, s.opts, cloudapi.OpListLoadBalancers, listLoadBalancers(api), lbID, created,
			func(id string) error { return api.DeleteLoadBalancer(t.Context(), id) },
			func(i int) (string, error) {
				lb, err := s.createLBErr(t.Context(), api, s.lbSpec(fmt.Sprintf("ct-change-new-%02d", i)))
				if err != nil {
					return "", err
				}
				return lb.ID, nil
			})
	})

	t.Run("addresses are unique", func(t *testing.T) {
		api := s.lbBackend(t)
		n := min(s.opts.addresses, maxUniquenessLBs)
		first := s.createActiveConcurrently(t, api, "ct-unique", n)
		requireDistinctAddresses(t, first, "after concurrent creates")
		requireDistinctHostnames(t, first)

		// Release half of them and take as many again: the new ones must not get an
		// address that a load balancer still holds.
		for _, lb := range first[:n/2] {
			require.NoError(t, api.DeleteLoadBalancer(t.Context(), lb.ID))
		}
		second := s.createActiveConcurrently(t, api, "ct-unique-again", n/2)
		requireDistinctAddresses(t, append(slices.Clone(first[n/2:]), second...), "after deletes and new concurrent creates")
	})

	t.Run("requested address", func(t *testing.T) {
		api := s.lbBackend(t)
		if s.opts.noAddresses || !s.opts.shape.Supports(cloudapi.FeatureRequestedIPs) {
			_, err := api.CreateLoadBalancer(t.Context(), s.lbSpec("ct-req", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"203.0.113.10"} }))
			requireClass(t, err, cloudapi.ErrInvalidRequest,
				"CreateLoadBalancer requesting an address of a cloud without load balancer addresses (WithoutAddresses): broke \"ErrInvalidRequest when the spec cannot be built\"")
			return
		}
		holder := s.waitActive(t, api, s.createLB(t, api, s.lbSpec("ct-req-holder")))
		addr := holder.Addresses[0]
		_, err := api.CreateLoadBalancer(t.Context(), s.lbSpec("ct-req-clash", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{addr} }))
		requireClass(t, err, cloudapi.ErrConflict,
			"CreateLoadBalancer requesting an address in use: broke \"returns an error matching ErrConflict when ... a requested address is in use\"")

		require.NoError(t, api.DeleteLoadBalancer(t.Context(), holder.ID))
		spec := s.lbSpec("ct-req-free", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{addr} })
		lb := s.waitActive(t, api, s.createLB(t, api, spec))
		assert.Containsf(t, lb.Addresses, addr,
			"CreateLoadBalancer requesting the free address %s: broke \"RequestedIPs are the addresses the caller wants\"", addr)
	})

	t.Run("invalid spec is an invalid request", func(t *testing.T) {
		api := s.lbBackend(t)
		for _, tc := range []struct {
			name  string
			tweak func(*cloudapi.LoadBalancerSpec)
		}{
			{"listener protocol HTTP2", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Protocol = "HTTP2" }},
			{"listener port 0", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Port = 0 }},
			{"listener port 65536", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].Port = 65536 }},
			{"two listeners on one protocol and port", func(s *cloudapi.LoadBalancerSpec) {
				s.Listeners = append(s.Listeners, cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30099})
			}},
			{"IP family IPv5", withFamilies("IPv5")},
			{"health check protocol ICMP", func(s *cloudapi.LoadBalancerSpec) { s.HealthCheck.Protocol = "ICMP" }},
			{"requested IP not an address", func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"not-an-ip"} }},
			{"source range not a CIDR", func(s *cloudapi.LoadBalancerSpec) { s.SourceRanges = []string{"10.0.0.0/33"} }},
			{"session affinity Sticky", func(s *cloudapi.LoadBalancerSpec) { s.SessionAffinity = "Sticky" }},
			{"application protocol QUIC", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = "QUIC" }},
			{"a TLS listener without certificates", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = cloudapi.AppProtocolTLS }},
			{"certificates on a listener that terminates no TLS", func(spec *cloudapi.LoadBalancerSpec) { spec.Listeners[0].Certificates = s.opts.certificates[:1] }},
			{"an HTTP listener over UDP", func(s *cloudapi.LoadBalancerSpec) {
				s.Listeners = append(s.Listeners, cloudapi.Listener{Protocol: cloudapi.ProtocolUDP, Port: 54, TargetPort: 30054, AppProtocol: cloudapi.AppProtocolHTTP})
			}},
		} {
			_, err := api.CreateLoadBalancer(t.Context(), s.lbSpec("ct-invalid", tc.tweak))
			requireClass(t, err, cloudapi.ErrInvalidRequest,
				"CreateLoadBalancer with %s: broke \"returns an error matching ErrInvalidRequest when the spec cannot be built\"", tc.name)
		}
		assert.Empty(t, s.listAllLBs(t, api, cloudapi.ListOptions{}, 10),
			"CreateLoadBalancer refused with ErrInvalidRequest created a load balancer anyway")
	})

	t.Run("canceled context is not not-found", func(t *testing.T) {
		api := s.lbBackend(t)
		const id = "lb-contract-does-not-exist"
		_, err := api.GetLoadBalancer(canceledContext(t), id)
		requireNotNotFound(t, err, "GetLoadBalancer of an unknown ID")
		spec := s.lbSpec("ct-canceled")
		_, err = api.UpdateLoadBalancer(canceledContext(t), id,
			cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{}, spec)})
		requireNotNotFound(t, err, "UpdateLoadBalancer of an unknown ID")
		requireNotNotFound(t, api.DeleteLoadBalancer(canceledContext(t), id), "DeleteLoadBalancer of an unknown ID")
		_, err = api.ListLoadBalancers(canceledContext(t), cloudapi.ListOptions{})
		requireNotNotFound(t, err, "ListLoadBalancers")
		_, err = api.CreateLoadBalancer(canceledContext(t), spec)
		requireNotNotFound(t, err, "CreateLoadBalancer")
	})
}

// createActiveConcurrently creates n dual-stack load balancers from n goroutines and reads
// each one until it is active, also concurrently.
func (s *suite) createActiveConcurrently(t testing.TB, api cloudapi.LoadBalancerAPI, prefix string, n int) []*cloudapi.LoadBalancer {
	t.Helper()
	out := make([]*cloudapi.LoadBalancer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			spec := s.lbSpec(fmt.Sprintf("%s-%02d", prefix, i), withFamilies(cloudapi.IPv4, cloudapi.IPv6))
			s.supported(&spec)
			lb, err := s.createLBErr(t.Context(), api, spec)
			if err == nil {
				lb, err = s.waitActiveErr(t.Context(), api, lb)
			}
			out[i], errs[i] = lb, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err, "concurrent CreateLoadBalancer: broke \"Implementations must be safe for concurrent use by many goroutines\"")
	}
	return out
}

// requireDistinctHostnames fails t when two load balancers have the same hostname.
func requireDistinctHostnames(t testing.TB, lbs []*cloudapi.LoadBalancer) {
	t.Helper()
	holder := map[string]string{}
	for _, lb := range lbs {
		if lb.Hostname == "" {
			continue
		}
		other, taken := holder[lb.Hostname]
		require.Falsef(t, taken, "load balancers %q and %q have the same hostname %q: a hostname names one load balancer", other, lb.ID, lb.Hostname)
		holder[lb.Hostname] = lb.ID
	}
}

// requireDistinctAddresses fails t when two load balancers hold the same address.
func requireDistinctAddresses(t testing.TB, lbs []*cloudapi.LoadBalancer, when string) {
	t.Helper()
	holder := map[netip.Addr]string{}
	for _, lb := range lbs {
		for _, a := range lb.Addresses {
			ip, err := netip.ParseAddr(a)
			require.NoError(t, err)
			other, taken := holder[ip]
			require.Falsef(t, taken,
				"%s: load balancers %q and %q both hold address %s: broke \"a requested address is in use\" (an address belongs to one load balancer)",
				when, other, lb.ID, a)
			holder[ip] = lb.ID
		}
	}
}

// checkChangingSet pages through a listing while it changes: after the first page it
// deletes the page's last item (the one the token continues after) and an item of a later
// page, and creates new items. The rest of the listing must hold every item that existed
// throughout and sorts after the first page, no deleted item and nothing twice.
func checkChangingSet[T any](t *testing.T, o options, op cloudapi.Operation, list lister[T], id func(T) string, created []string,
	del func(id string) error, create func(i int) (string, error),
) {
	t.Helper()
	p := newPager(op, list, id, o.order, cloudapi.ListOptions{PageSize: 4})
	first, err := p.next(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, first, "%s: the first page of a listing of %d items is empty", op, len(created))
	require.False(t, p.done, "%s with page size 4: the first page of %d items is the last", op, len(created))
	cut := id(first[len(first)-1])

	sorted := slices.SortedFunc(slices.Values(created), o.order)
	var later []string
	for _, k := range sorted {
		if o.order(k, cut) > 0 {
			later = append(later, k)
		}
	}
	require.Greater(t, len(later), 2, "%s: too few items after the first page", op)
	deleted := []string{cut, later[1]}
	for _, k := range deleted {
		require.NoError(t, del(k))
	}
	for i := range 3 {
		_, err := create(i)
		require.NoError(t, err)
	}

	rest, err := p.all(t.Context(), len(created)+3)
	require.NoError(t, err,
		"%s over a set that changed after the first page: broke \"a page token ... continues after the last item of the page\"", op)
	got := ids(rest, id)
	missed := 0
	for _, k := range later {
		if k == later[1] {
			assert.NotContainsf(t, got, k, "%s: an item deleted before its page was read is listed", op)
			continue
		}
		if o.pageNumbers && !slices.Contains(got, k) && missed < len(deleted) {
			missed++ // a page shifted by a deletion (WithPageNumbers)
			continue
		}
		assert.Containsf(t, got, k,
			"%s: broke \"a page token ... continues after the last item of the page\": %q, which existed throughout and sorts after the first page (token after %q), is missing",
			op, k, cut)
	}
}

// optionalSetting is a part of the spec that a cloud may lack. A backend either stores it
// exactly, or refuses every spec holding it with ErrInvalidRequest.
type optionalSetting struct {
	name  string
	tweak func(*cloudapi.LoadBalancerSpec)
}

// refusedByShape reports whether the backend's shape refuses a part of o (Check).
func (s *suite) refusedByShape(o optionalSetting) bool {
	return s.opts.shape.Check(cloudapi.OpCreateLoadBalancer, "", s.lbSpec("ct-optional", o.tweak)) != nil
}

// optionalSettings are the parts of the spec beyond what every cloud offers, the
// listeners that terminate TLS naming certs (WithCertificates).
func optionalSettings(certs []string) []optionalSetting {
	return []optionalSetting{
		{"session affinity ClientIP", func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, 3*time.Hour
		}},
		{"a TLS listener with two certificates", func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners[0].AppProtocol, s.Listeners[0].Certificates = cloudapi.AppProtocolTLS, []string{certs[1], certs[0]}
		}},
		{"an HTTP listener", func(s *cloudapi.LoadBalancerSpec) { s.Listeners[0].AppProtocol = cloudapi.AppProtocolHTTP }},
		{"session affinity Cookie on an HTTP listener", uses(cloudapi.FeatureCookieAffinity, "")},
		{"an adapter setting", func(s *cloudapi.LoadBalancerSpec) {
			s.SettingValues = map[string]string{"ccmkit-contract-size": "large"}
		}},
		{"an HTTPS listener with a certificate", func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners = append(s.Listeners, cloudapi.Listener{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443,
				AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: []string{certs[0]}})
		}},
	}
}

// neverDrops is the promise a backend breaks when it stores a spec without a part it was
// given.
const neverDrops = `broke "a backend never drops a part of the spec it cannot build, it refuses the spec"`

// checkOptional creates a load balancer with the setting, reads it back in every way,
// updates it away and back; or, when the backend refuses it, checks that the refusal is
// ErrInvalidRequest for both create and update and changed nothing.
func (s *suite) checkOptional(t *testing.T, o optionalSetting) {
	api := s.lbBackend(t)
	want := s.lbSpec("ct-optional", o.tweak)
	lb, err := api.CreateLoadBalancer(t.Context(), want.Clone())
	if err == nil && s.refusedByShape(o) {
		require.Failf(t, "a part declared unsupported was built",
			"CreateLoadBalancer with %s, which the backend's shape refuses (%v): it must be refused with ErrInvalidRequest", o.name, s.opts.shape.Check(cloudapi.OpCreateLoadBalancer, "", want))
	}
	if err != nil {
		requireClass(t, err, cloudapi.ErrInvalidRequest,
			"CreateLoadBalancer with %s: a backend that cannot build it must refuse it: \"ErrInvalidRequest when the spec cannot be built\"", o.name)
		assert.Empty(t, s.listAllLBs(t, api, cloudapi.ListOptions{}, 1), "CreateLoadBalancer refused with ErrInvalidRequest created a load balancer anyway")
		t.Logf("the backend refuses %s with ErrInvalidRequest: %v", o.name, err)

		plain := s.waitActive(t, api, s.createLB(t, api, s.lbSpec("ct-optional")))
		_, err = api.UpdateLoadBalancer(t.Context(), plain.ID,
			cloudapi.LoadBalancerUpdate{Spec: want.Clone(), Changes: cloudapi.DiffLoadBalancer(plain.Spec, want)})
		requireClass(t, err, cloudapi.ErrInvalidRequest,
			"UpdateLoadBalancer to %s, which CreateLoadBalancer refuses: \"ErrInvalidRequest when the cloud cannot build update.Spec\"", o.name)
		got, err := api.GetLoadBalancer(t.Context(), plain.ID)
		require.NoError(t, err)
		s.requireSpec(t, plain.Spec, got.Spec, "UpdateLoadBalancer refused with ErrInvalidRequest changed the load balancer")
		return
	}
	require.NotNil(t, lb, "CreateLoadBalancer returned nil and no error")
	s.requireSpec(t, want, lb.Spec, "CreateLoadBalancer with %s, as it answered: %s", o.name, neverDrops)
	scribbleLB(lb) // answers are copies, certificates too
	lb, err = api.GetLoadBalancer(t.Context(), lb.ID)
	require.NoError(t, err)
	s.requireSpec(t, want, lb.Spec, "GetLoadBalancer after the caller changed the create's answer: answers must be copies")
	lb = s.waitActive(t, api, lb)
	s.requireSpec(t, want, lb.Spec, "GetLoadBalancer of a load balancer created with %s: %s", o.name, neverDrops)
	listed := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: want.Tags}, 1)
	require.Len(t, listed, 1)
	s.requireSpec(t, want, listed[0].Spec, "ListLoadBalancers of a load balancer created with %s: %s", o.name, neverDrops)

	// Away and back: an update must carry the setting both ways.
	plain := s.lbSpec("ct-optional")
	for _, to := range []struct {
		what string
		spec cloudapi.LoadBalancerSpec
	}{{"without " + o.name, plain}, {"with " + o.name + " again", want}} {
		got, err := api.UpdateLoadBalancer(t.Context(), lb.ID,
			cloudapi.LoadBalancerUpdate{Spec: to.spec.Clone(), Changes: cloudapi.DiffLoadBalancer(lb.Spec, to.spec)})
		require.NoErrorf(t, err, "UpdateLoadBalancer %s", to.what)
		s.requireSpec(t, to.spec, got.Spec, "UpdateLoadBalancer %s, as it answered: %s", to.what, neverDrops)
		lb, err = api.GetLoadBalancer(t.Context(), lb.ID)
		require.NoError(t, err)
		s.requireSpec(t, to.spec, lb.Spec, "GetLoadBalancer after UpdateLoadBalancer %s: %s", to.what, neverDrops)
	}
}

// checkDeclaredSettings creates a load balancer with the first of WithSettings' sets,
// updates it to each of the others, to none and to the first again, and reads it back
// after every write: each must be kept exactly.
func (s *suite) checkDeclaredSettings(t *testing.T) {
	api := s.lbBackend(t)
	with := func(set map[string]string) cloudapi.LoadBalancerSpec {
		return s.lbSpec("ct-settings", func(sp *cloudapi.LoadBalancerSpec) { sp.SettingValues = maps.Clone(set) })
	}
	want := with(s.opts.settings[0])
	lb, err := api.CreateLoadBalancer(t.Context(), want.Clone())
	require.NoErrorf(t, err, "CreateLoadBalancer with the settings %v, which WithSettings says the backend declares", want.SettingValues)
	require.NotNil(t, lb, "CreateLoadBalancer returned nil and no error")
	s.requireSpec(t, want, lb.Spec, "CreateLoadBalancer with the settings %v, as it answered: %s", want.SettingValues, keepsSettings)
	lb = s.waitActive(t, api, lb)
	s.requireSpec(t, want, lb.Spec, "GetLoadBalancer of a load balancer created with the settings %v: %s", want.SettingValues, keepsSettings)
	steps := append(slices.Clone(s.opts.settings[1:]), nil, s.opts.settings[0])
	for _, set := range steps {
		to := with(set)
		got, err := api.UpdateLoadBalancer(t.Context(), lb.ID,
			cloudapi.LoadBalancerUpdate{Spec: to.Clone(), Changes: cloudapi.DiffLoadBalancer(lb.Spec, to)})
		require.NoErrorf(t, err, "UpdateLoadBalancer to the settings %v, which WithSettings says the backend declares", set)
		s.requireSpec(t, to, got.Spec, "UpdateLoadBalancer to the settings %v, as it answered: %s", set, keepsSettings)
		lb, err = api.GetLoadBalancer(t.Context(), lb.ID)
		require.NoError(t, err)
		s.requireSpec(t, to, lb.Spec, "GetLoadBalancer after UpdateLoadBalancer to the settings %v: %s", set, keepsSettings)
		listed := s.listAllLBs(t, api, cloudapi.ListOptions{Tags: to.Tags}, 1)
		require.Len(t, listed, 1)
		s.requireSpec(t, to, listed[0].Spec, "ListLoadBalancers after UpdateLoadBalancer to the settings %v: %s", set, keepsSettings)
	}
}

// keepsSettings is the promise a backend breaks when it stores other settings than it
// was given.
const keepsSettings = `broke "A backend keeps every setting exactly as given, or refuses a spec with one it does not know or cannot build with ErrInvalidRequest; it never drops one"`

// uses returns a change of a spec that uses f, a listener that terminates TLS naming
// cert.
func uses(f cloudapi.Feature, cert string) func(*cloudapi.LoadBalancerSpec) {
	listener := func(p cloudapi.Protocol, app cloudapi.AppProtocol, certs ...string) func(*cloudapi.LoadBalancerSpec) {
		return func(s *cloudapi.LoadBalancerSpec) {
			s.Listeners = append(s.Listeners, cloudapi.Listener{Name: "extra", Protocol: p, Port: 8443, TargetPort: 30843, AppProtocol: app, Certificates: certs})
		}
	}
	switch f {
	case cloudapi.FeatureIPv6, cloudapi.FeatureDualStack:
		return withFamilies(cloudapi.IPv4, cloudapi.IPv6)
	case cloudapi.FeatureIPv6First:
		return withFamilies(cloudapi.IPv6, cloudapi.IPv4)
	case cloudapi.FeatureUDP:
		return listener(cloudapi.ProtocolUDP, cloudapi.AppProtocolNone)
	case cloudapi.FeatureSCTP:
		return listener(cloudapi.ProtocolSCTP, cloudapi.AppProtocolNone)
	case cloudapi.FeatureTLS:
		return listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolTLS, cert)
	case cloudapi.FeatureHTTP:
		return listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolHTTP)
	case cloudapi.FeatureHTTPS:
		return listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolHTTPS, cert)
	case cloudapi.FeatureSourceRanges:
		return func(s *cloudapi.LoadBalancerSpec) { s.SourceRanges = []string{"10.0.0.0/8"} }
	case cloudapi.FeatureProxyProtocol:
		return func(s *cloudapi.LoadBalancerSpec) { s.ProxyProtocol = true }
	case cloudapi.FeatureInternal:
		return func(s *cloudapi.LoadBalancerSpec) { s.Internal = true }
	case cloudapi.FeatureRequestedIPs:
		return func(s *cloudapi.LoadBalancerSpec) { s.RequestedIPs = []string{"203.0.113.10"} }
	case cloudapi.FeatureSessionAffinity:
		return func(s *cloudapi.LoadBalancerSpec) {
			s.SessionAffinity, s.SessionAffinityTimeout = cloudapi.SessionAffinityClientIP, time.Hour
		}
	case cloudapi.FeatureCookieAffinity:
		return func(s *cloudapi.LoadBalancerSpec) {
			listener(cloudapi.ProtocolTCP, cloudapi.AppProtocolHTTP)(s) // where the cookie is set
			s.SessionAffinity, s.SessionAffinityTimeout, s.SessionAffinityCookieName = cloudapi.SessionAffinityCookie, 20*time.Minute, "ccmkit-contract"
		}
	}
	return func(*cloudapi.LoadBalancerSpec) {}
}

// checkRefused requires want, a spec of what (a part or parts the backend's shape
// refuses), to be refused with ErrInvalidRequest by create and by update, changing
// nothing.
func (s *suite) checkRefused(t *testing.T, what string, want cloudapi.LoadBalancerSpec) {
	api := s.lbBackend(t)
	_, err := api.CreateLoadBalancer(t.Context(), want.Clone())
	requireClass(t, err, cloudapi.ErrInvalidRequest,
		"CreateLoadBalancer with %s, which the backend's shape refuses: broke \"a backend never drops a part of the spec it cannot build, it refuses the spec\"", what)
	assert.Empty(t, s.listAllLBs(t, api, cloudapi.ListOptions{}, 1), "CreateLoadBalancer refused with ErrInvalidRequest created a load balancer anyway")

	plain := s.waitActive(t, api, s.createLB(t, api, s.lbSpec(want.Name)))
	_, err = api.UpdateLoadBalancer(t.Context(), plain.ID,
		cloudapi.LoadBalancerUpdate{Spec: want.Clone(), Changes: cloudapi.DiffLoadBalancer(plain.Spec, want)})
	requireClass(t, err, cloudapi.ErrInvalidRequest,
		"UpdateLoadBalancer to %s, which the backend's shape refuses: \"ErrInvalidRequest when the cloud cannot build update.Spec\"", what)
	got, err := api.GetLoadBalancer(t.Context(), plain.ID)
	require.NoError(t, err)
	s.requireSpec(t, plain.Spec, got.Spec, "UpdateLoadBalancer refused with ErrInvalidRequest changed the load balancer")
}
