package loadbalancer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// testSettings are an adapter's declarations: a size changed in place, a network tier
// that only a new load balancer can change, and a free-form value with its own parse.
func testSettings() loadbalancer.Settings {
	return loadbalancer.Settings{
		{Name: "size", Values: []string{"small", "medium", "large"}, Default: "small", Doc: "The load balancer's size."},
		{Name: "network-tier", Values: []string{"standard", "premium"}, Default: "standard", Doc: "The network tier.", Replace: true},
		{Name: "idle-timeout", Allowed: "whole seconds from 1 to 3600", Doc: "How long an idle connection stays open.",
			Parse: func(v string) (string, error) {
				n, err := parseSeconds(v)
				if err != nil {
					return "", err
				}
				return n, nil
			}},
	}
}

// parseSeconds accepts 1-3600 and returns it without leading zeros.
func parseSeconds(v string) (string, error) {
	v = strings.TrimLeft(v, "0")
	if v == "" || len(v) > 4 || strings.Trim(v, "0123456789") != "" || (len(v) == 4 && v > "3600") {
		return "", errors.New("not a whole number of seconds from 1 to 3600")
	}
	return v, nil
}

func withSettings(defaults map[string]string, rec *record.FakeRecorder) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) {
		o.Settings, o.SettingDefaults = testSettings(), defaults
		if rec != nil {
			o.Recorder = rec
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	ok := loadbalancer.Setting{Name: "size", Values: []string{"small", "large"}, Default: "small"}
	parse := func(v string) (string, error) { return strings.ToLower(v), nil }
	for _, tc := range []struct {
		name  string
		decls loadbalancer.Settings
		want  []string // each in the error; nil: valid
	}{
		{"none", nil, nil},
		{"a size and a parsed setting", loadbalancer.Settings{ok, {Name: "zone-x", Parse: parse, Allowed: "anything"}}, nil},
		{"declared twice", loadbalancer.Settings{ok, ok}, []string{`setting 1 ("size"): declared twice`}},
		{"ccmkit's own annotation", loadbalancer.Settings{{Name: loadbalancer.AnnotationInternal, Values: []string{"x"}}},
			[]string{"one of ccmkit's own annotations"}},
		{"no DNS label", loadbalancer.Settings{{Name: "Size", Values: []string{"x"}}, {Name: "", Values: []string{"x"}}},
			[]string{`setting 0 ("Size"): the name must be a DNS label`, `setting 1 (""): the name must be a DNS label`}},
		{"default not allowed", loadbalancer.Settings{{Name: "size", Values: []string{"small"}, Default: "huge"}},
			[]string{`the default "huge" is not allowed`}},
		{"default not canonical", loadbalancer.Settings{{Name: "size", Values: []string{"small"}, Default: "Small"}},
			[]string{`the default "Small" is not canonical: write "small"`}},
		{"neither values nor parse", loadbalancer.Settings{{Name: "size"}}, []string{"set Values or Parse"}},
		{"both", loadbalancer.Settings{{Name: "size", Values: []string{"a"}, Parse: parse, Allowed: "a"}}, []string{"not both"}},
		{"parse without allowed", loadbalancer.Settings{{Name: "size", Parse: parse}}, []string{"Parse needs Allowed"}},
		{"values twice ignoring case", loadbalancer.Settings{{Name: "size", Values: []string{"a", "A", ""}}},
			[]string{`value "A" is empty`, `value "" is empty`}},
		{"service-only with a default", loadbalancer.Settings{{Name: "zone", Values: []string{"a"}, Default: "a", ServiceOnly: "set the zone in the section"}},
			[]string{"a ServiceOnly setting takes no Default"}},
		{"every problem at once", loadbalancer.Settings{ok, ok, {Name: "name", Values: []string{"x"}}},
			[]string{"declared twice", "one of ccmkit's own annotations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decls.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	got, err := testSettings().Defaults(nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"size": "small", "network-tier": "standard"}, got, "the declared defaults; none for idle-timeout")

	got, err = testSettings().Defaults(map[string]string{"size": " Large ", "idle-timeout": "060"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"size": "large", "network-tier": "standard", "idle-timeout": "60"}, got, "canonical values override")

	_, err = testSettings().Defaults(map[string]string{"sise": "large", "size": "huge", "idle-timeout": "x"})
	require.Error(t, err)
	for _, w := range []string{
		"sise: no such setting (the adapter declares: size, network-tier, idle-timeout)",
		`size: "huge": not an allowed value (allowed: small, medium, large)`,
		`idle-timeout: "x": not a whole number of seconds from 1 to 3600 (allowed: whole seconds from 1 to 3600)`,
	} {
		assert.Contains(t, err.Error(), w, "every problem at once")
	}

	_, err = loadbalancer.Settings(nil).Defaults(map[string]string{"size": "large"})
	assert.ErrorContains(t, err, "size: no such setting (the adapter declares: none)")
}

// TestServiceOnlySetting: a ServiceOnly setting is refused as a default (the cloud
// config's loadBalancer.settings), with the declaration's advice, and checked like any
// other in a spec (Check), which refuses what Defaults refuses but that.
func TestServiceOnlySetting(t *testing.T) {
	decls := loadbalancer.Settings{
		{Name: "size", Values: []string{"small", "large"}},
		{Name: "zone", Values: []string{"a", "b"}, ServiceOnly: "set the default zone in the adapter's section"},
	}
	require.NoError(t, decls.Validate())
	_, err := decls.Defaults(map[string]string{"zone": "a", "size": "large"})
	require.EqualError(t, err, "zone: only a Service's annotation may set it: set the default zone in the adapter's section")
	got, err := decls.Defaults(map[string]string{"size": "Large"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"size": "large"}, got)

	require.NoError(t, decls.Check(map[string]string{"zone": "a", "size": "large"}), "a Service may set it")
	err = decls.Check(map[string]string{"zone": "c", "sise": "large"})
	require.ErrorContains(t, err, `zone: "c": not an allowed value (allowed: a, b)`)
	require.ErrorContains(t, err, "sise: no such setting (the adapter declares: size, zone)")
	assert.Contains(t, decls.Reference(""), "Only a Service's annotation sets it, not the cloud config's loadBalancer.settings: set the default zone in the adapter's section.")
}

func TestNewRefusesBadSettings(t *testing.T) {
	for name, tweak := range map[string]func(*loadbalancer.Options){
		"declarations": func(o *loadbalancer.Options) {
			o.Settings = loadbalancer.Settings{{Name: "size", Values: []string{"a"}}, {Name: "size", Values: []string{"a"}}}
		},
		"defaults": withSettings(map[string]string{"size": "huge"}, nil),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, nil)
			o := loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t)}
			tweak(&o)
			api, _ := e.cloud.LoadBalancers()
			_, err := loadbalancer.New(api, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "adapter's settings")
		})
	}
}

func TestAdapterSettings(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withSettings(map[string]string{"idle-timeout": "30"}, nil))
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	first := e.only(t)
	assert.Equal(t, map[string]string{"size": "small", "network-tier": "standard", "idle-timeout": "30"}, first.Spec.SettingValues,
		"the declared defaults, and the config's default")

	before := e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	assert.Empty(t, e.cloud.Calls().Sub(before), "converged with settings: no call")

	t.Run("changed in place: one update, same load balancer", func(t *testing.T) {
		large := newService("web", withAnnotation("size", " LARGE "), withAnnotation("idle-timeout", "0120"))
		before := e.cloud.Calls()
		history := len(e.cloud.LoadBalancerHistory())
		e.ensure(t, large, e.nodes)
		calls := e.cloud.Calls().Sub(before)
		assert.Equal(t, int64(1), calls.Writes(), "one update")
		assert.Equal(t, int64(1), calls[cloudapi.OpUpdateLoadBalancer])
		lb := e.only(t)
		assert.Equal(t, first.ID, lb.ID)
		assert.Equal(t, first.Addresses, lb.Addresses)
		assert.Equal(t, map[string]string{"size": "large", "network-tier": "standard", "idle-timeout": "120"}, lb.Spec.SettingValues, "canonical values")
		h := e.cloud.LoadBalancerHistory()[history:]
		require.Len(t, h, 1)
		assert.Equal(t, []string{"idle-timeout", "size"}, h[0].Changes.SettingValues)
		assert.True(t, h[0].ChangesMatch())

		before = e.cloud.Calls()
		e.ensure(t, large, e.nodes)
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", large, e.nodes))
		assert.Empty(t, e.cloud.Calls().Sub(before), "converged again")
	})

	t.Run("a Replace setting replaces the load balancer; UpdateLoadBalancer never does", func(t *testing.T) {
		premium := newService("web", withAnnotation("size", "large"), withAnnotation("idle-timeout", "120"), withAnnotation("network-tier", "premium"))
		old := e.only(t)
		before := e.cloud.Calls()
		require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", premium, e.nodes))
		assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "UpdateLoadBalancer keeps the tier")
		e.ensure(t, premium, e.nodes)
		lb := e.only(t)
		assert.NotEqual(t, old.ID, lb.ID, "replaced")
		assert.Equal(t, "premium", lb.Spec.SettingValues["network-tier"])
	})

	t.Run("keep-on-delete refuses a replacement", func(t *testing.T) {
		svc := newService("web", withAnnotation("size", "large"), withAnnotation("idle-timeout", "120"),
			withAnnotation("network-tier", "standard"), withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"))
		before := e.cloud.Calls()
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `has network-tier "premium", and annotation loadbalancer.ccmkit.io/network-tier asks for "standard"`)
		assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
	})
}

func TestReplaceSettingNotAnnotatedKeepsAnOlderLoadBalancer(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes) // made before the adapter declared its settings
	first := e.only(t)
	e2 := &env{cloud: e.cloud, nodes: e.nodes, clock: e.clock}
	api, _ := e.cloud.LoadBalancers()
	var err error
	o := loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock}
	withSettings(nil, nil)(&o)
	e2.lb, err = loadbalancer.New(api, o)
	require.NoError(t, err)
	e2.ensure(t, svc, e.nodes)
	lb := e2.only(t)
	assert.Equal(t, first.ID, lb.ID, "not replaced for a default nobody asked for")
	assert.Equal(t, map[string]string{"size": "small"}, lb.Spec.SettingValues, "the in-place setting's default is written")
	before := e.cloud.Calls()
	e2.ensure(t, svc, e.nodes)
	assert.Empty(t, e.cloud.Calls().Sub(before), "converged")
}

func TestMalformedSettingIsAnAnnotationError(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withSettings(nil, nil))
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	for _, tc := range []struct{ key, value, allowed, msg string }{
		{"size", "huge", "small, medium, large", "not an allowed value"},
		{"idle-timeout", "forever", "whole seconds from 1 to 3600", "not a whole number of seconds"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			bad := newService("web", withAnnotation(tc.key, tc.value))
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", bad, e.nodes)
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, prefix+tc.key, aerr.Key)
			assert.Equal(t, tc.value, aerr.Value)
			assert.Equal(t, tc.allowed, aerr.Allowed)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	}
}

func TestUnknownAnnotationIsAWarningEventOncePerChange(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withSettings(nil, rec))
	typo := newService("web", withAnnotation("sise", "large"))
	e.ensure(t, typo, e.nodes)
	got := events(rec)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "Warning UnknownAnnotation Ignoring annotation loadbalancer.ccmkit.io/sise")
	assert.Equal(t, "small", e.only(t).Spec.SettingValues["size"], "never a failed sync")

	e.ensure(t, typo, e.nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", typo, e.nodes))
	assert.Empty(t, events(rec), "not on every resync")

	two := newService("web", withAnnotation("sise", "large"), withAnnotation("nodeselector", "a=b"))
	e.ensure(t, two, e.nodes)
	got = events(rec)
	require.Len(t, got, 1, "a change is reported again")
	assert.Contains(t, got[0], "loadbalancer.ccmkit.io/nodeselector, loadbalancer.ccmkit.io/sise")

	e.ensure(t, newService("web"), e.nodes)
	e.ensure(t, typo, e.nodes)
	assert.Len(t, events(rec), 1, "fixed, then the typo again: reported again")

	e.ensure(t, newService("web", withAnnotation("size", "large")), e.nodes)
	assert.Empty(t, events(rec), "a declared setting is no unknown annotation")
}

func TestSettingsReference(t *testing.T) {
	got := testSettings().Reference("lb.example.com/")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	require.Len(t, lines, 5, "header, separator and one row per setting")
	assert.Equal(t, "| `lb.example.com/size` | small, medium, large | small | The load balancer's size. Changed in place. |", lines[2])
	assert.Equal(t, "| `lb.example.com/network-tier` | standard, premium | standard | The network tier. Changing it replaces the load balancer (new address). |", lines[3])
	assert.Equal(t, "| `lb.example.com/idle-timeout` | whole seconds from 1 to 3600 | none: the cloud's own | How long an idle connection stays open. Changed in place. |", lines[4])
	assert.Contains(t, loadbalancer.Settings{{Name: "size", Values: []string{"a"}}}.Reference(""), "`"+loadbalancer.DefaultAnnotationPrefix+"size`")
}

// A '|' or a line break in a declaration's text would end its cell or row: escaped.
func TestSettingsReferenceEscapesCells(t *testing.T) {
	got := loadbalancer.Settings{{
		Name: "mode", Allowed: "a|b, or\r\nc", Default: "a|b",
		Parse: func(v string) (string, error) { return v, nil },
		Doc:   "Picks the mode:\nfast | safe.",
	}}.Reference("x|y/")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, 3, "header, separator and one row: no line break in a cell")
	assert.Equal(t, "| `x\\|y/mode` | a\\|b, or<br>c | a\\|b | Picks the mode:<br>fast \\| safe. Changed in place. |", lines[2])
	assert.Len(t, strings.Split(strings.ReplaceAll(lines[2], `\|`, ""), "|"), 6, "four cells")
}

func mustFormat(t *testing.T) providerid.Format {
	t.Helper()
	f, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	return f
}

func TestNamedLoadBalancerIsNeverReplacedForASetting(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withSettings(nil, nil))
	named := e.unowned(t, "kept", func(s *cloudapi.LoadBalancerSpec) { s.SettingValues = map[string]string{"network-tier": "premium"} })
	svc := newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, named.ID), withAnnotation("network-tier", "standard"))
	before := e.cloud.Calls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `has network-tier "premium", but annotation loadbalancer.ccmkit.io/network-tier asks for "standard"`)
	assert.Contains(t, err.Error(), `set loadbalancer.ccmkit.io/network-tier to "premium"`)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes())

	svc = newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, named.ID), withAnnotation("network-tier", "premium"))
	e.ensure(t, svc, e.nodes)
	lb := e.only(t)
	assert.Equal(t, named.ID, lb.ID, "adopted")
	assert.Equal(t, map[string]string{"size": "small", "network-tier": "premium"}, lb.Spec.SettingValues)
}

// A cloud that spells a setting differently, a default that changes and a value the
// declaration cannot read each cost no replacement (no new address) and no write loop.
func TestReplaceSettingIsReplacedOnlyForAnAnnotatedValue(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withSettings(nil, nil))
	svc := newService("web", withAnnotation("network-tier", "premium"))
	e.ensure(t, svc, e.nodes)
	first := e.only(t)
	api, _ := e.cloud.LoadBalancers()

	for _, tc := range []struct{ name, cloudValue string }{
		{"the cloud answers another spelling", "PREMIUM"},
		{"the cloud answers a value the declaration cannot read", "gold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := e.only(t).Spec.Clone()
			spec.SettingValues["network-tier"] = tc.cloudValue
			_, err := api.UpdateLoadBalancer(t.Context(), first.ID, cloudapi.LoadBalancerUpdate{Spec: spec})
			require.NoError(t, err)
			e.expire() // Ensure reads the cloud again
			e.ensure(t, svc, e.nodes)
			lb := e.only(t)
			assert.Equal(t, first.ID, lb.ID, "not replaced")
			assert.Equal(t, first.Addresses, lb.Addresses)
			before := e.cloud.Calls()
			e.ensure(t, svc, e.nodes)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "converged: no write loop")
		})
	}

	t.Run("without the annotation the load balancer keeps its value, whatever the default", func(t *testing.T) {
		plain := newService("web") // the default is standard
		before := e.cloud.Calls()
		e.ensure(t, plain, e.nodes)
		lb := e.only(t)
		assert.Equal(t, first.ID, lb.ID, "not replaced for a default")
		assert.Zero(t, e.cloud.Calls().Sub(before)[cloudapi.OpCreateLoadBalancer])
	})
}

// A setting the adapter no longer declares (after an upgrade, say) is not ccmkit's to
// change: an update carries it over unchanged, as foreign tags are, and it is no
// difference.
func TestUndeclaredSettingsAreKept(t *testing.T) {
	zoned := loadbalancer.Settings{
		{Name: "size", Values: []string{"small", "large"}, Default: "small"},
		{Name: "zone-x", Values: []string{"a", "b"}},
	}
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Settings = zoned })
	svc := newService("web", withAnnotation("zone-x", "b"))
	e.ensure(t, svc, e.nodes)
	first := e.only(t)
	require.Equal(t, map[string]string{"size": "small", "zone-x": "b"}, first.Spec.SettingValues)

	// The adapter now declares only size.
	api, _ := e.cloud.LoadBalancers()
	o := loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t), Clock: e.clock, Settings: zoned[:1]}
	lb, err := loadbalancer.New(api, o)
	require.NoError(t, err)
	plain := newService("web")

	before := e.cloud.Calls()
	_, err = lb.EnsureLoadBalancer(t.Context(), "c", plain, e.nodes)
	require.NoError(t, err)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "converged: an undeclared setting is no difference")

	moved := newService("web", withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, NodePort: 30080}))
	for _, tc := range []struct {
		name string
		sync func() error
	}{
		{"EnsureLoadBalancer", func() error { _, err := lb.EnsureLoadBalancer(t.Context(), "c", moved, e.nodes); return err }},
		{"UpdateLoadBalancer", func() error { return lb.UpdateLoadBalancer(t.Context(), "c", moved, e.nodes[:2]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.cloud.Calls()
			require.NoError(t, tc.sync())
			assert.Equal(t, int64(1), e.cloud.Calls().Sub(before).Writes(), "one update")
			got := e.only(t)
			assert.Equal(t, first.ID, got.ID)
			assert.Equal(t, map[string]string{"size": "small", "zone-x": "b"}, got.Spec.SettingValues, "zone-x kept")
			h := e.cloud.LoadBalancerHistory()
			assert.Empty(t, h[len(h)-1].Changes.SettingValues, "no setting changed")

			before = e.cloud.Calls()
			require.NoError(t, tc.sync())
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "converged again")
		})
	}
}
