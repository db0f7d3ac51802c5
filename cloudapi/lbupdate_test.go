package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// recordingSteps are steps that record each call as a line, failing the one named fail.
func recordingSteps(calls *[]string, fail string) cloudapi.LoadBalancerSteps {
	rec := func(s string) error {
		*calls = append(*calls, s)
		if s == fail {
			return errors.New("the cloud failed " + s)
		}
		return nil
	}
	return cloudapi.LoadBalancerSteps{
		Properties: func(context.Context) error { return rec("properties") },
		Setting:    func(_ context.Context, name, v string) error { return rec("setting " + name + "=" + v) },
		RemoveListener: func(_ context.Context, k cloudapi.ListenerKey) error {
			return rec(fmt.Sprint("remove listener ", k.Port))
		},
		AddListener:    func(_ context.Context, l cloudapi.Listener) error { return rec(fmt.Sprint("add listener ", l.Port)) },
		UpdateListener: func(_ context.Context, l cloudapi.Listener) error { return rec(fmt.Sprint("update listener ", l.Port)) },
		HealthCheck:    func(context.Context) error { return rec("health check") },
		ProxyProtocol:  func(context.Context) error { return rec("proxy protocol") },
		SourceRanges:   func(context.Context) error { return rec("source ranges") },
		RemoveTarget:   func(_ context.Context, id string) error { return rec("remove target " + id) },
		AddTarget:      func(_ context.Context, id string) error { return rec("add target " + id) },
	}
}

func tcp(port int32) cloudapi.Listener {
	return cloudapi.Listener{Protocol: cloudapi.ProtocolTCP, Port: port, TargetPort: 30000 + port}
}

// TestLoadBalancerShapeUpdate: the steps run in the documented order, one per change; a
// cloud that keeps the health check or the PROXY protocol per listener rewrites every
// listener that is not new instead; a change no step makes is refused before any step; the
// first failure stops the rest and is returned as it is.
func TestLoadBalancerShapeUpdate(t *testing.T) {
	hc := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 10256, Interval: time.Second}
	current := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{tcp(80), tcp(443), tcp(8080)},
		Targets: []string{"1", "2"}, HealthCheck: hc, SettingValues: map[string]string{"type": "lb11"}}
	desired := current.Clone()
	desired.Listeners = []cloudapi.Listener{tcp(443), tcp(8080), tcp(9090)}
	desired.Listeners[1].TargetPort = 31000
	desired.Targets = []string{"2", "3"}
	desired.SettingValues = map[string]string{"algorithm": "least_connections", "type": "lb21"}
	perListener := cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureProxyProtocol}}
	newHC := desired.Clone()
	newHC.HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz"}
	newHC.ProxyProtocol = true
	stepless := current.Clone()
	stepless.Internal, stepless.SourceRanges = true, []string{"10.0.0.0/8"}

	for _, tc := range []struct {
		name      string
		shape     cloudapi.LoadBalancerShape
		current   cloudapi.LoadBalancerSpec
		desired   cloudapi.LoadBalancerSpec
		steps     func(*[]string) cloudapi.LoadBalancerSteps
		want      []string
		wantError string
	}{
		{name: "every kind of change, in order", current: current, desired: desired, want: []string{
			"properties", "setting algorithm=least_connections", "setting type=lb21",
			"remove listener 80", "add listener 9090", "update listener 8080", "remove target 1", "add target 3"}},
		{name: "health check, PROXY protocol and source ranges, in order", current: current, desired: func() cloudapi.LoadBalancerSpec {
			d := newHC.Clone()
			d.Listeners, d.Targets, d.SettingValues, d.SourceRanges = current.Listeners, current.Targets, current.SettingValues, []string{"10.0.0.0/8"}
			return d
		}(), want: []string{"health check", "proxy protocol", "source ranges"}},
		{name: "converged: no step", current: current, desired: current},
		{name: "a setting no longer asked for is passed empty", current: current, desired: func() cloudapi.LoadBalancerSpec {
			d := current.Clone()
			d.SettingValues = nil
			return d
		}(), want: []string{"properties", "setting type="}},
		{name: "health check and PROXY protocol kept per load balancer", current: desired, desired: newHC,
			want: []string{"health check", "proxy protocol"}},
		{name: "kept per listener: every listener rewritten", shape: perListener, current: desired, desired: newHC,
			want: []string{"update listener 443", "update listener 8080", "update listener 9090"}},
		{name: "kept per listener: new listeners are added, not rewritten", shape: perListener, current: current, desired: func() cloudapi.LoadBalancerSpec {
			d := newHC.Clone()
			d.SettingValues = current.SettingValues
			d.Targets = current.Targets
			return d
		}(), want: []string{"remove listener 80", "add listener 9090", "update listener 443", "update listener 8080"}},
		{name: "a change no step makes is refused before any step", current: current, desired: stepless,
			wantError: "the cloud cannot change [internal] of a load balancer in place"},
		{name: "source ranges alone: their step, nothing rewritten", current: current, desired: func() cloudapi.LoadBalancerSpec {
			d := current.Clone()
			d.SourceRanges = []string{"10.0.0.0/8", "192.0.2.0/24"}
			return d
		}(), want: []string{"source ranges"}},
		{name: "source ranges without their step are refused before any step", current: current, desired: func() cloudapi.LoadBalancerSpec {
			d := desired.Clone()
			d.SourceRanges = []string{"10.0.0.0/8"}
			return d
		}(), steps: func(calls *[]string) cloudapi.LoadBalancerSteps {
			s := recordingSteps(calls, "")
			s.SourceRanges = nil
			return s
		}, wantError: "the cloud cannot change [source ranges] of a load balancer in place"},
		{name: "a nil step is refused before any step", current: current, desired: desired,
			steps: func(calls *[]string) cloudapi.LoadBalancerSteps {
				s := recordingSteps(calls, "")
				s.AddTarget = nil
				return s
			}, wantError: "the cloud cannot change [targets added] of a load balancer in place"},
		{name: "the first failure stops the rest", current: current, desired: desired,
			steps:     func(calls *[]string) cloudapi.LoadBalancerSteps { return recordingSteps(calls, "add listener 9090") },
			want:      []string{"properties", "setting algorithm=least_connections", "setting type=lb21", "remove listener 80", "add listener 9090"},
			wantError: "the cloud failed add listener 9090"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			steps := recordingSteps(&calls, "")
			if tc.steps != nil {
				steps = tc.steps(&calls)
			}
			err := tc.shape.Update(t.Context(), cloudapi.OpUpdateLoadBalancer, "lb-1", tc.current, tc.desired, steps)
			assert.Equal(t, tc.want, calls)
			if tc.wantError == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantError)
			if tc.steps == nil || len(calls) == 0 {
				assert.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
			}
		})
	}
}

// TestLoadBalancerShapePlan: Plan compares what the cloud keeps (Comparable) and expands a
// per-listener health check change to every listener that is not new.
func TestLoadBalancerShapePlan(t *testing.T) {
	current := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{tcp(443), tcp(80)}}
	desired := current.Clone()
	desired.Listeners = append(desired.Listeners, tcp(8080))
	desired.Listeners[0].Name = "https"
	desired.HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1}
	shape := cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames}, PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck}}
	c := shape.Plan(current, desired)
	assert.Equal(t, []cloudapi.Listener{tcp(8080)}, c.AddListeners)
	assert.Equal(t, []cloudapi.Listener{tcp(80), {Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443}}, c.UpdateListeners,
		"every listener not new, sorted by key")
	assert.True(t, c.HealthCheck)

	desired.HealthCheck = nil
	c = shape.Plan(current, desired)
	assert.Empty(t, c.UpdateListeners, "a listener name the cloud does not keep is not a change")
	assert.Equal(t, cloudapi.LoadBalancerChanges{AddListeners: []cloudapi.Listener{tcp(8080)}}, c)
}

// TestJoinListenerParts: the parts every listener shares, or no health check when they
// differ, so that the next update rewrites them all.
func TestJoinListenerParts(t *testing.T) {
	tcpCheck := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1}
	other := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 2}
	for _, tc := range []struct {
		name      string
		parts     []cloudapi.ListenerParts
		wantHC    *cloudapi.HealthCheck
		wantProxy bool
	}{
		{"no listener", nil, nil, false},
		{"shared", []cloudapi.ListenerParts{{tcpCheck, true}, {&cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1}, true}}, tcpCheck, true},
		{"health checks differ", []cloudapi.ListenerParts{{tcpCheck, true}, {other, true}}, nil, true},
		{"PROXY protocols differ", []cloudapi.ListenerParts{{tcpCheck, false}, {tcpCheck, true}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec cloudapi.LoadBalancerSpec
			cloudapi.JoinListenerParts(&spec, tc.parts)
			assert.Equal(t, tc.wantHC, spec.HealthCheck)
			assert.Equal(t, tc.wantProxy, spec.ProxyProtocol)
		})
	}
}

// TestListenerHealthChecks: on a cloud that keeps the health check per listener and builds
// each listener's own, the listeners are read with their own health checks where they do
// not share one (JoinListenerParts), compared listener by listener (a listener whose check
// is the desired one is not rewritten), and written with their own (Update); a cloud that
// does not declare it refuses a spec with one (Uses, Check), and a declaration of it
// without the health check per listener is refused (Validate).
func TestListenerHealthChecks(t *testing.T) {
	shape := cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck}}
	lbHC := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz", Interval: 10 * time.Second}
	ready := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTPS, Port: 10256, Path: "/ready", Interval: 10 * time.Second}
	live := &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTPS, Port: 10256, Path: "/live", Interval: 10 * time.Second}
	listeners := func(own443 *cloudapi.HealthCheck) []cloudapi.Listener {
		return []cloudapi.Listener{
			{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
			{Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443, HealthCheck: own443},
		}
	}
	// reported is what a cloud keeping one health check per listener reports of checks.
	reported := func(checks ...*cloudapi.HealthCheck) cloudapi.LoadBalancerSpec {
		s := cloudapi.LoadBalancerSpec{Name: "lb", Listeners: listeners(nil)}
		var parts []cloudapi.ListenerParts
		for _, hc := range checks {
			parts = append(parts, cloudapi.ListenerParts{HealthCheck: hc})
		}
		cloudapi.JoinListenerParts(&s, parts)
		return s
	}
	desired := cloudapi.LoadBalancerSpec{Name: "lb", Listeners: listeners(ready), HealthCheck: lbHC}

	t.Run("read", func(t *testing.T) {
		shared := reported(lbHC, lbHC)
		assert.Equal(t, lbHC, shared.HealthCheck)
		assert.Nil(t, shared.Listeners[1].HealthCheck)
		own := reported(lbHC, ready)
		assert.Nil(t, own.HealthCheck)
		assert.Equal(t, []*cloudapi.HealthCheck{lbHC, ready}, []*cloudapi.HealthCheck{own.Listeners[0].HealthCheck, own.Listeners[1].HealthCheck})
	})
	t.Run("converged", func(t *testing.T) {
		assert.True(t, shape.Plan(reported(lbHC, ready), desired).Empty())
	})
	for _, tc := range []struct {
		name    string
		current cloudapi.LoadBalancerSpec
		desired cloudapi.LoadBalancerSpec
		want    map[int32]*cloudapi.HealthCheck // the listeners rewritten, with the health check written
	}{
		{"a port gets its own", reported(lbHC, lbHC), desired, map[int32]*cloudapi.HealthCheck{443: ready}},
		{"a port's own changes", reported(lbHC, ready), cloudapi.LoadBalancerSpec{Name: "lb", Listeners: listeners(live), HealthCheck: lbHC}, map[int32]*cloudapi.HealthCheck{443: live}},
		{"a port's own goes", reported(lbHC, ready), cloudapi.LoadBalancerSpec{Name: "lb", Listeners: listeners(nil), HealthCheck: lbHC}, map[int32]*cloudapi.HealthCheck{443: lbHC}},
		{"the load balancer's changes", reported(lbHC, ready), cloudapi.LoadBalancerSpec{Name: "lb", Listeners: listeners(ready), HealthCheck: live}, map[int32]*cloudapi.HealthCheck{80: live}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := map[int32]*cloudapi.HealthCheck{}
			err := shape.Update(t.Context(), cloudapi.OpUpdateLoadBalancer, "lb-1", tc.current, tc.desired, cloudapi.LoadBalancerSteps{
				UpdateListener: func(_ context.Context, l cloudapi.Listener) error { written[l.Port] = l.HealthCheck; return nil },
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, written)
		})
	}
	t.Run("refused where not declared", func(t *testing.T) {
		for _, s := range []cloudapi.LoadBalancerShape{{}, {PerListener: []cloudapi.Feature{cloudapi.FeatureHealthCheck}}} {
			assert.Equal(t, []cloudapi.Feature{cloudapi.FeatureListenerHealthCheck}, s.Uses(desired))
			require.ErrorIs(t, s.Check(cloudapi.OpCreateLoadBalancer, "", desired), cloudapi.ErrInvalidRequest)
		}
		require.NoError(t, shape.Check(cloudapi.OpCreateLoadBalancer, "", desired))
		bad := desired.Clone()
		bad.Listeners[1].HealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP}
		assert.ErrorContains(t, bad.Validate(), "listeners[1].healthCheck: an HTTP check needs a path")
		assert.ErrorContains(t, cloudapi.LoadBalancerShape{PerListener: []cloudapi.Feature{cloudapi.FeatureListenerHealthCheck}}.Validate(), `"listener-health-check" without "health-check"`)
	})
}
