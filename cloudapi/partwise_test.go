package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// partCloud is a cloud with one call per part: a create that takes the name and the
// tags, and a call per listener and per target. calls records every call; a step whose
// name is in fail fails with ErrTransient (after it made its change: its answer is lost).
type partCloud struct {
	lbs   map[string]*cloudapi.LoadBalancerSpec
	calls []string
	fail  map[string]bool
}

// step records the call and answers it.
func (c *partCloud) step(call string) error {
	c.calls = append(c.calls, call)
	if c.fail[call] {
		return cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpUpdateLoadBalancer, "", errors.New("answer lost"))
	}
	return nil
}

func (c *partCloud) api() cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec] {
	find := func(ctx context.Context, op cloudapi.Operation, id string) (*cloudapi.LoadBalancerSpec, error) {
		c.calls = append(c.calls, "get "+id)
		if lb, ok := c.lbs[id]; ok {
			clone := lb.Clone()
			return &clone, nil
		}
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, op, id, nil)
	}
	return cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]{
		Shape: cloudapi.LoadBalancerShape{Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP}},
		Check: func(_ cloudapi.Operation, spec cloudapi.LoadBalancerSpec) error {
			if len(spec.Name) > 10 {
				return errors.New("names are at most 10 characters")
			}
			return nil
		},
		Get: find,
		Read: func(s *cloudapi.LoadBalancerSpec) cloudapi.LoadBalancer {
			return cloudapi.LoadBalancer{ID: s.Name, Spec: *s}
		},
		List: func(context.Context, cloudapi.ListOptions) ([]*cloudapi.LoadBalancerSpec, string, error) {
			c.calls = append(c.calls, "list")
			var out []*cloudapi.LoadBalancerSpec
			for _, id := range []string{"a", "b"} {
				if lb, ok := c.lbs[id]; ok {
					clone := lb.Clone()
					out = append(out, &clone)
				}
			}
			return out, "next", nil
		},
		Create: func(_ context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancerSpec, error) {
			c.calls = append(c.calls, "create "+spec.Name)
			c.lbs[spec.Name] = &cloudapi.LoadBalancerSpec{Name: spec.Name, Tags: spec.Tags}
			return c.lbs[spec.Name], nil
		},
		Steps: func(_ context.Context, _ cloudapi.Operation, cur *cloudapi.LoadBalancerSpec, desired cloudapi.LoadBalancerSpec) (cloudapi.LoadBalancerSteps, error) {
			if desired.Internal != cur.Internal {
				return cloudapi.LoadBalancerSteps{}, errors.New("internal cannot change")
			}
			lb := c.lbs[cur.Name]
			return cloudapi.LoadBalancerSteps{
				Properties: func(context.Context) error { c.calls = append(c.calls, "tags"); lb.Tags = desired.Tags; return nil },
				AddListener: func(_ context.Context, l cloudapi.Listener) error {
					lb.Listeners = append(lb.Listeners, l)
					return c.step(fmt.Sprint("add listener ", l.Port))
				},
				AddTarget: func(_ context.Context, id string) error {
					lb.Targets = append(lb.Targets, id)
					return c.step("add target " + id)
				},
				RemoveTarget: func(_ context.Context, id string) error {
					lb.Targets = slices.DeleteFunc(lb.Targets, func(t string) bool { return t == id })
					return c.step("remove target " + id)
				},
				SourceRanges: func(context.Context) error {
					lb.SourceRanges = slices.Clone(desired.SourceRanges)
					return c.step(fmt.Sprint("source ranges ", desired.SourceRanges))
				},
			}, nil
		},
		Delete: func(_ context.Context, id string) error {
			c.calls = append(c.calls, "delete "+id)
			delete(c.lbs, id)
			return nil
		},
	}
}

// TestPartwiseLoadBalancers: a spec is refused before any call; a create is the cloud's
// create, then the steps, then a read; an update a read and the steps (of targets alone:
// answered without a read); a list keeps what carries the tags asked for.
func TestPartwiseLoadBalancers(t *testing.T) {
	c := &partCloud{lbs: map[string]*cloudapi.LoadBalancerSpec{}}
	api := c.api()
	ctx := t.Context()
	spec := cloudapi.LoadBalancerSpec{Name: "a", Listeners: []cloudapi.Listener{tcp(80)}, Targets: []string{"i-1"}, Tags: map[string]string{cloudapi.TagCluster: "prod"}}

	for name, bad := range map[string]cloudapi.LoadBalancerSpec{
		"unsupported":             {Name: "a", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053}}},
		"the adapter's own check": {Name: "a-long-name"},
		"invalid":                 {},
	} {
		_, err := api.CreateLoadBalancer(ctx, bad)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, name)
		_, err = api.UpdateLoadBalancer(ctx, "a", cloudapi.LoadBalancerUpdate{Spec: bad})
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, name)
	}
	assert.Empty(t, c.calls, "nothing called for a spec refused")

	got, err := api.CreateLoadBalancer(ctx, spec)
	require.NoError(t, err)
	assert.Equal(t, []string{"create a", "add listener 80", "add target i-1", "get a"}, c.calls)
	assert.Equal(t, spec, got.Spec)

	c.calls = nil
	want := spec.Clone()
	want.Targets = []string{"i-2"}
	got, err = api.UpdateLoadBalancer(ctx, "a", cloudapi.LoadBalancerUpdate{Spec: want})
	require.NoError(t, err)
	assert.Equal(t, []string{"get a", "remove target i-1", "add target i-2"}, c.calls, "targets changed alone: the read before, with them changed")
	assert.Equal(t, want, got.Spec)

	c.calls = nil
	firewalled := want.Clone()
	firewalled.SourceRanges = []string{"10.0.0.0/8", "192.0.2.0/24"}
	got, err = api.UpdateLoadBalancer(ctx, "a", cloudapi.LoadBalancerUpdate{Spec: firewalled})
	require.NoError(t, err)
	assert.Equal(t, []string{"get a", "source ranges [10.0.0.0/8 192.0.2.0/24]", "get a"}, c.calls,
		"source ranges changed alone: their step in place, no listener or target rewritten, then the read")
	assert.Equal(t, firewalled, got.Spec)
	c.calls = nil
	firewalled.SourceRanges = nil
	_, err = api.UpdateLoadBalancer(ctx, "a", cloudapi.LoadBalancerUpdate{Spec: firewalled})
	require.NoError(t, err)
	assert.Equal(t, []string{"get a", "source ranges []", "get a"}, c.calls, "no source ranges: the step opens the load balancer to everyone")
	want = firewalled

	c.calls = nil
	internal := want.Clone()
	internal.Internal = true
	_, err = api.UpdateLoadBalancer(ctx, "a", cloudapi.LoadBalancerUpdate{Spec: internal})
	require.ErrorContains(t, err, "internal cannot change")
	assert.Equal(t, []string{"get a"}, c.calls, "refused by Steps before any write")
	_, err = api.UpdateLoadBalancer(ctx, "zz", cloudapi.LoadBalancerUpdate{Spec: want})
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	_, err = api.GetLoadBalancer(ctx, "zz")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)

	c.lbs["b"] = &cloudapi.LoadBalancerSpec{Name: "b", Tags: map[string]string{cloudapi.TagCluster: "other"}}
	page, err := api.ListLoadBalancers(ctx, cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "prod"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "b does not carry the tags asked for")
	assert.Equal(t, "a", page.Items[0].ID)
	assert.Equal(t, "next", page.NextPageToken)

	require.NoError(t, api.DeleteLoadBalancer(ctx, "a"))
	assert.NotContains(t, c.lbs, "a")
}

// TestPartwiseLoadBalancersReads: with Reads (keeping what Steps uses), an update whose
// Current is the load balancer as last listed or read makes its steps without a read,
// planned from Current, and one of targets alone answers without a read either; anything else reads before: a Current that is not
// the last read (the caller's read is another), a load balancer written since (its
// update failed, the outcome unknown) or deleted, no Current, no Reads. An update of
// more than targets reads once after.
func TestPartwiseLoadBalancersReads(t *testing.T) {
	base := cloudapi.LoadBalancerSpec{Name: "a", Listeners: []cloudapi.Listener{tcp(80)}, Targets: []string{"i-1"}, Tags: map[string]string{cloudapi.TagCluster: "prod"}}
	plusTarget := base.Clone()
	plusTarget.Targets = append(plusTarget.Targets, "i-2")
	plusListener := base.Clone()
	plusListener.Listeners = append(plusListener.Listeners, tcp(443))
	plusBoth := plusListener.Clone()
	plusBoth.Targets = plusTarget.Targets
	cloud := func() *partCloud {
		a := base.Clone()
		return &partCloud{lbs: map[string]*cloudapi.LoadBalancerSpec{"a": &a}}
	}
	listed := func(t *testing.T, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
		t.Helper()
		page, err := api.ListLoadBalancers(t.Context(), cloudapi.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		return &page.Items[0]
	}
	for _, tc := range []struct {
		name      string
		noReads   bool
		spec      cloudapi.LoadBalancerSpec
		current   func(t *testing.T, c *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer
		wantCalls []string
	}{
		{"the list's copy: the steps alone", false, plusTarget, func(t *testing.T, _ *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			return listed(t, api)
		}, []string{"list", "add target i-2"}},
		{"a read's copy", false, plusTarget, func(t *testing.T, _ *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			lb, err := api.GetLoadBalancer(t.Context(), "a")
			require.NoError(t, err)
			return lb
		}, []string{"get a", "add target i-2"}},
		{"more than targets: one read after", false, plusListener, func(t *testing.T, _ *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			return listed(t, api)
		}, []string{"list", "add listener 443", "get a"}},
		{"a Current that is not the last read", false, plusTarget, func(t *testing.T, c *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			lb := listed(t, api)
			lb.Spec.Targets = nil // the caller read another
			return lb
		}, []string{"list", "get a", "add target i-2"}},
		{"after an update of unknown outcome: based on a read, the listener not added twice", false, plusBoth, func(t *testing.T, c *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			lb := listed(t, api)
			c.fail = map[string]bool{"add listener 443": true}
			_, err := api.UpdateLoadBalancer(t.Context(), "a", cloudapi.LoadBalancerUpdate{Spec: plusListener, Current: lb})
			require.ErrorIs(t, err, cloudapi.ErrTransient)
			c.fail = nil
			return lb // the list's copy, from before the failed update
		}, []string{"list", "add listener 443", "get a", "add target i-2"}},
		{"no Current", false, plusTarget, func(*testing.T, *partCloud, cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			return nil
		}, []string{"get a", "add target i-2"}},
		{"no Reads", true, plusTarget, func(t *testing.T, _ *partCloud, api cloudapi.PartwiseLoadBalancers[*cloudapi.LoadBalancerSpec]) *cloudapi.LoadBalancer {
			return listed(t, api)
		}, []string{"list", "get a", "add target i-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cloud()
			api := c.api()
			if !tc.noReads {
				api.Reads = &cloudapi.LastReads[*cloudapi.LoadBalancerSpec]{}
				api.Keep = func(s *cloudapi.LoadBalancerSpec) *cloudapi.LoadBalancerSpec { // what Steps uses
					return &cloudapi.LoadBalancerSpec{Name: s.Name, Internal: s.Internal}
				}
			}
			current := tc.current(t, c, api)
			got, err := api.UpdateLoadBalancer(t.Context(), "a", cloudapi.LoadBalancerUpdate{Spec: tc.spec, Current: current})
			require.NoError(t, err)
			assert.Equal(t, tc.wantCalls, c.calls)
			assert.Equal(t, *c.lbs["a"], got.Spec, "answered as the cloud has it")
		})
	}

	t.Run("deleted", func(t *testing.T) {
		c := cloud()
		api := c.api()
		api.Reads = &cloudapi.LastReads[*cloudapi.LoadBalancerSpec]{}
		lb := listed(t, api)
		require.NoError(t, api.DeleteLoadBalancer(t.Context(), "a"))
		_, err := api.UpdateLoadBalancer(t.Context(), "a", cloudapi.LoadBalancerUpdate{Spec: plusTarget, Current: lb})
		require.ErrorIs(t, err, cloudapi.ErrNotFound)
		assert.Equal(t, []string{"list", "delete a", "get a"}, c.calls, "read, not written from the list's copy")
	})
}

// TestPartwiseLoadBalancersIDsAndRefs: an ID that IDs refuses names no load balancer, so
// a read, an update and a delete of it are not found before any call (transient when the
// context has ended: no answer is "not found"); a target or certificate that Refs refuses
// is an invalid request before any call.
func TestPartwiseLoadBalancersIDsAndRefs(t *testing.T) {
	c := &partCloud{lbs: map[string]*cloudapi.LoadBalancerSpec{}}
	api := c.api()
	api.IDs = func(id string) error {
		if len(id) != 1 {
			return errors.New("one letter")
		}
		return nil
	}
	api.Refs = cloudapi.RefChecks{Targets: cloudapi.CheckNumericID, Certificates: cloudapi.CheckNumericID}
	ctx := t.Context()
	spec := cloudapi.LoadBalancerSpec{Name: "a", Listeners: []cloudapi.Listener{tcp(80)}, Targets: []string{"1"}}

	_, err := api.GetLoadBalancer(ctx, "bm-1")
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	_, err = api.UpdateLoadBalancer(ctx, "bm-1", cloudapi.LoadBalancerUpdate{Spec: spec})
	require.ErrorIs(t, err, cloudapi.ErrNotFound)
	require.ErrorIs(t, api.DeleteLoadBalancer(ctx, "bm-1"), cloudapi.ErrNotFound)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = api.GetLoadBalancer(done, "bm-1")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.NotErrorIs(t, err, cloudapi.ErrNotFound)
	err = api.DeleteLoadBalancer(done, "bm-1")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Empty(t, c.calls, "an ID IDs refuses reaches no call")

	https := func(port int32, certs ...string) cloudapi.Listener {
		return cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: port, TargetPort: 30443, AppProtocol: cloudapi.AppProtocolHTTPS, Certificates: certs}
	}
	for name, tc := range map[string]struct {
		spec cloudapi.LoadBalancerSpec
		want string
	}{
		"target": {cloudapi.LoadBalancerSpec{Name: "a", Listeners: []cloudapi.Listener{tcp(80)}, Targets: []string{"1", "i-2"}},
			`CreateLoadBalancer: invalid request: target "i-2": not a positive decimal number: the cloud names its resources by their numeric IDs`},
		"certificate, once for two listeners": {cloudapi.LoadBalancerSpec{Name: "a", Listeners: []cloudapi.Listener{https(443, "cert-a", "7"), https(8443, "cert-a")}},
			`CreateLoadBalancer: invalid request: certificate "cert-a" (listener TCP/443): not a positive decimal number: the cloud names its resources by their numeric IDs`},
		"with the shape's and the adapter's problems": {cloudapi.LoadBalancerSpec{Name: "a-long-name", Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053}}, Targets: []string{"x"}},
			"CreateLoadBalancer: invalid request: the cloud's load balancers do not support [udp]\n" +
				`target "x": not a positive decimal number: the cloud names its resources by their numeric IDs` + "\nnames are at most 10 characters"},
	} {
		_, err := api.CreateLoadBalancer(ctx, tc.spec)
		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, name)
		assert.EqualError(t, err, tc.want, name)
	}
	assert.Empty(t, c.calls, "a reference Refs refuses reaches no call")

	_, err = api.CreateLoadBalancer(ctx, spec)
	require.NoError(t, err)
	require.NoError(t, api.DeleteLoadBalancer(ctx, "a"))
	assert.Equal(t, []string{"create a", "add listener 80", "add target 1", "get a", "delete a"}, c.calls, "IDs and references it takes")
}

func TestIPAddresses(t *testing.T) {
	got := cloudapi.IPAddresses(cloudapi.AddressExternalIP, nil, net.IPv4zero, net.IPv6unspecified, net.IP{1, 2, 3},
		net.ParseIP("203.0.113.7"), net.ParseIP("2001:DB8::0001"))
	assert.Equal(t, []cloudapi.Address{{Type: cloudapi.AddressExternalIP, Address: "203.0.113.7"}, {Type: cloudapi.AddressExternalIP, Address: "2001:db8::1"}}, got,
		"nil, unspecified and malformed left out, the rest canonical")
	assert.Nil(t, cloudapi.IPAddresses(cloudapi.AddressInternalIP))
}
