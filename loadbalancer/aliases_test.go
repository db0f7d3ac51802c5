package loadbalancer_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// legacy is the prefix of the test adapter's earlier cloud-controller-manager.
const legacy = "lb.legacy.example/"

// testAliases are an adapter's aliases of testSettings and ccmkit's annotations: some as
// written, some converted (a negated boolean, whole seconds, a lower-case protocol), two
// legacy keys onto one setting, one of them outside the legacy prefix.
func testAliases() loadbalancer.Aliases {
	return loadbalancer.Aliases{
		Prefixes: []string{legacy},
		Keys: []loadbalancer.Alias{
			{Key: legacy + "uses-proxyprotocol", Name: loadbalancer.AnnotationProxyProtocol},
			{Key: legacy + "public", Name: loadbalancer.AnnotationInternal, Convert: negate, Allowed: "true, false"},
			{Key: legacy + "health-check-interval", Name: loadbalancer.AnnotationHealthCheckInterval, Convert: seconds, Allowed: "whole seconds from 1 to 300"},
			{Key: legacy + "ipv4", Name: loadbalancer.AnnotationIPAddresses},
			{Key: legacy + "protocol", Name: loadbalancer.AnnotationProtocol, Convert: lowerProtocol, Allowed: "tcp, http, https"},
			{Key: legacy + "type", Name: "size"},
			{Key: "old.legacy.example/size", Name: "size"},
			{Key: legacy + "idle-timeout", Name: "idle-timeout"},
			{Key: legacy + "keep", Name: loadbalancer.AnnotationKeepOnDelete},
			{Key: legacy + "hostname", Name: loadbalancer.AnnotationHostname},
			{Key: legacy + "name", Name: loadbalancer.AnnotationName},
			{Key: legacy + "node-selector", Name: loadbalancer.AnnotationNodeSelector},
			{Key: legacy + "id", Name: loadbalancer.AnnotationLoadBalancerID},
		},
	}
}

func negate(v string) (string, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", errors.New("not a boolean")
	}
	return strconv.FormatBool(!b), nil
}

func seconds(v string) (string, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", errors.New("not whole seconds")
	}
	return fmt.Sprintf("%ds", n), nil
}

func lowerProtocol(v string) (string, error) {
	switch v {
	case "tcp", "http", "https":
		return strings.ToUpper(v), nil
	}
	return "", errors.New("not one of tcp, http, https")
}

// withAliases declares testSettings and testAliases, and sets the recorder unless nil.
func withAliases(rec *record.FakeRecorder) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) {
		withSettings(nil, rec)(o)
		o.Aliases = testAliases()
	}
}

// withKey sets the annotation key, whole.
func withKey(k, v string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations[k] = v }
}

func TestAliasesValidate(t *testing.T) {
	ok := loadbalancer.Alias{Key: legacy + "uses-proxyprotocol", Name: loadbalancer.AnnotationProxyProtocol}
	for _, tc := range []struct {
		name    string
		aliases loadbalancer.Aliases
		want    []string // each in the error; nil: valid
	}{
		{"none", loadbalancer.Aliases{}, nil},
		{"the test adapter's", testAliases(), nil},
		{"two legacy keys onto one annotation", loadbalancer.Aliases{Keys: []loadbalancer.Alias{ok, {Key: "b.example/proxy", Name: loadbalancer.AnnotationProxyProtocol}}}, nil},
		{"a prefix that is the start of a name", loadbalancer.Aliases{Prefixes: []string{"service.beta.kubernetes.io/do-loadbalancer-"}}, nil},
		{"unknown target", loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: legacy + "x", Name: "sise"}}},
			[]string{`annotation alias 0 ("lb.legacy.example/x"): "sise" is neither one of ccmkit's annotations nor a declared setting`}},
		{"a key under ccmkit's prefix", loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: prefix + "old-internal", Name: loadbalancer.AnnotationInternal}}},
			[]string{`is under ccmkit's annotation prefix "loadbalancer.ccmkit.io/"`}},
		{"a key declared twice", loadbalancer.Aliases{Keys: []loadbalancer.Alias{ok, ok}}, []string{`annotation alias 1 ("lb.legacy.example/uses-proxyprotocol"): declared twice`}},
		{"not an annotation key", loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: "a b/c", Name: loadbalancer.AnnotationInternal}, {Key: "", Name: loadbalancer.AnnotationInternal}}},
			[]string{`annotation alias 0 ("a b/c"): not a valid annotation key`, `annotation alias 1 (""): not a valid annotation key`}},
		{"Convert without Allowed", loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: legacy + "public", Name: loadbalancer.AnnotationInternal, Convert: negate}}},
			[]string{"Convert needs Allowed"}},
		{"a malformed prefix", loadbalancer.Aliases{Prefixes: []string{"no-slash", "Upper.example/", "a.example/b/"}},
			[]string{`prefix 0 ("no-slash"): must be a DNS subdomain`, `prefix 1 ("Upper.example/"): must be`, `prefix 2 ("a.example/b/"): must be`}},
		{"a prefix overlapping ccmkit's", loadbalancer.Aliases{Prefixes: []string{prefix, "loadbalancer.ccmkit.io/old-"}},
			[]string{`prefix 0 ("loadbalancer.ccmkit.io/"): overlaps`, `prefix 1 ("loadbalancer.ccmkit.io/old-"): overlaps`}},
		{"a prefix declared twice", loadbalancer.Aliases{Prefixes: []string{legacy, legacy}}, []string{`prefix 1 ("lb.legacy.example/"): declared twice`}},
		{"every problem at once", loadbalancer.Aliases{Prefixes: []string{prefix}, Keys: []loadbalancer.Alias{ok, ok, {Key: legacy + "x", Name: "sise"}}},
			[]string{"overlaps", "declared twice", `"sise" is neither`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.aliases.Validate(prefix, testSettings())
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

	t.Run("against the configured prefix and the settings", func(t *testing.T) {
		as := loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: "lb.example.com/size", Name: "size"}}}
		require.NoError(t, as.Validate(prefix, testSettings()))
		assert.ErrorContains(t, as.Validate("lb.example.com/", testSettings()), "under ccmkit's annotation prefix")
		assert.ErrorContains(t, as.Validate(prefix, nil), `"size" is neither`)
	})
}

func TestNewRefusesBadAliases(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, nil)
	api, _ := e.cloud.LoadBalancers()
	_, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: mustFormat(t),
		Aliases: loadbalancer.Aliases{Keys: []loadbalancer.Alias{{Key: legacy + "size", Name: "size"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `annotation aliases: annotation alias 0 ("lb.legacy.example/size"): "size" is neither`)
}

// TestLegacyAnnotationReadsAsItsTarget: a Service with a legacy key alone gets the load
// balancer it would get with the annotation it stands for and the converted value.
func TestLegacyAnnotationReadsAsItsTarget(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		target, as       string // the annotation it stands for under the prefix, and its value
		check            func(t *testing.T, spec cloudapi.LoadBalancerSpec)
	}{
		{"a boolean", legacy + "uses-proxyprotocol", "true", loadbalancer.AnnotationProxyProtocol, "true",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.True(t, s.ProxyProtocol) }},
		{"a negated boolean", legacy + "public", "false", loadbalancer.AnnotationInternal, "true",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.True(t, s.Internal) }},
		{"a duration converted", legacy + "health-check-interval", " 15 ", loadbalancer.AnnotationHealthCheckInterval, "15s",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) {
				assert.Equal(t, 15*time.Second, s.HealthCheck.Interval)
			}},
		{"a list", legacy + "ipv4", "203.0.113.77", loadbalancer.AnnotationIPAddresses, "203.0.113.77",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) {
				assert.Equal(t, []string{"203.0.113.77"}, s.RequestedIPs)
			}},
		{"a protocol converted", legacy + "protocol", "http", loadbalancer.AnnotationProtocol, "HTTP",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) {
				assert.Equal(t, cloudapi.AppProtocolHTTP, s.Listeners[0].AppProtocol)
			}},
		{"a setting with Values", legacy + "type", "LARGE", "size", "large",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.Equal(t, "large", s.SettingValues["size"]) }},
		{"a second legacy key of that setting", "old.legacy.example/size", "medium", "size", "medium",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.Equal(t, "medium", s.SettingValues["size"]) }},
		{"a setting with Parse", legacy + "idle-timeout", "060", "idle-timeout", "60",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) {
				assert.Equal(t, "60", s.SettingValues["idle-timeout"])
			}},
		{"a name", legacy + "name", "old-web", loadbalancer.AnnotationName, "old-web",
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.Equal(t, "old-web", s.Name) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			old := newEnvWith(t, fake.Config{}, withAliases(rec))
			svc := newService("web", withKey(tc.key, tc.value))
			old.ensure(t, svc, old.nodes)
			got := old.only(t).Spec
			tc.check(t, got)
			assert.Empty(t, events(rec), "no warning")
			assert.Equal(t, got.Name, old.lb.GetLoadBalancerName(t.Context(), "c", svc))

			own := newEnvWith(t, fake.Config{}, withAliases(nil))
			own.ensure(t, newService("web", withAnnotation(tc.target, tc.as)), own.nodes)
			assert.Equal(t, own.only(t).Spec, got, "exactly as with %s%s: %s", prefix, tc.target, tc.as)

			before := old.cloud.Calls()
			old.ensure(t, svc, old.nodes)
			assert.Empty(t, old.cloud.Calls().Sub(before), "converged: no call")
		})
	}
}

// TestMalformedLegacyValue: the error names the legacy key, its value as written, and
// what the legacy key takes; nothing is written.
func TestMalformedLegacyValue(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, withAliases(nil))
	e.ensure(t, newService("web"), e.nodes)
	for _, tc := range []struct{ key, value, allowed, msg string }{
		{legacy + "uses-proxyprotocol", "yes", "true, false", "not a boolean"},
		{legacy + "public", "maybe", "true, false", "not a boolean"},
		{legacy + "health-check-interval", "600", "whole seconds from 1 to 300", `read as "600s": not a duration from 1s to 5m`},
		{legacy + "type", "huge", "small, medium, large", "not an allowed value"},
		{legacy + "idle-timeout", "forever", "whole seconds from 1 to 3600", "not a whole number of seconds"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			bad := newService("web", withKey(tc.key, tc.value))
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", bad, e.nodes)
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, tc.key, aerr.Key)
			assert.Equal(t, tc.value, aerr.Value)
			assert.Equal(t, tc.allowed, aerr.Allowed)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	}
}

// TestSpellingsThatAgree: an annotation set under the prefix and by an alias (or two
// aliases) is fine when the values agree once converted and read.
func TestSpellingsThatAgree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		svc   []func(*corev1.Service)
		check func(t *testing.T, s cloudapi.LoadBalancerSpec)
	}{
		{"a negated boolean", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationInternal, "TRUE"), withKey(legacy+"public", "false")},
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.True(t, s.Internal) }},
		{"a duration in two syntaxes", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "15000ms"), withKey(legacy+"health-check-interval", "15")},
			func(t *testing.T, s cloudapi.LoadBalancerSpec) {
				assert.Equal(t, 15*time.Second, s.HealthCheck.Interval)
			}},
		{"a setting in two spellings by two aliases", []func(*corev1.Service){withKey(legacy+"type", "Large"), withKey("old.legacy.example/size", "large"), withAnnotation("size", " LARGE")},
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.Equal(t, "large", s.SettingValues["size"]) }},
		{"a node selector", []func(*corev1.Service){withNodeSelector("pool in (a,web)"), withKey(legacy+"node-selector", "pool in (web, a)")},
			func(t *testing.T, s cloudapi.LoadBalancerSpec) { assert.Equal(t, []string{"i-0"}, s.Targets) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			e := newEnvWith(t, fake.Config{}, withAliases(rec))
			e.ensure(t, newService("web", tc.svc...), e.labelled("web"))
			tc.check(t, e.only(t).Spec)
			assert.Empty(t, events(rec))
		})
	}
}

// TestSpellingsThatDisagree: the sync is refused with an error naming both keys and both
// values, a Warning event ConflictingAnnotations says so once per change, and nothing is
// written to the cloud; never a guess which one wins.
func TestSpellingsThatDisagree(t *testing.T) {
	for _, tc := range []struct {
		name     string
		svc      []func(*corev1.Service)
		key      string   // the key of the error
		mentions []string // in the error and the event
	}{
		{"ccmkit's key and an alias", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationProxyProtocol, "true"), withKey(legacy+"uses-proxyprotocol", "false")},
			legacy + "uses-proxyprotocol", []string{`annotation lb.legacy.example/uses-proxyprotocol: "false": conflicting annotations: annotation loadbalancer.ccmkit.io/proxy-protocol is "true"`}},
		{"a negated alias", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationInternal, "true"), withKey(legacy+"public", "true")},
			legacy + "public", []string{`lb.legacy.example/public: "true"`, `loadbalancer.ccmkit.io/internal is "true"`}},
		{"two aliases of a setting", []func(*corev1.Service){withKey(legacy+"type", "large"), withKey("old.legacy.example/size", "small")},
			"old.legacy.example/size", []string{`old.legacy.example/size: "small"`, `lb.legacy.example/type is "large"`, "both set loadbalancer.ccmkit.io/size"}},
		{"a hostname", []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHostname, "a.example.org"), withKey(legacy+"hostname", "b.example.org")},
			legacy + "hostname", []string{`"b.example.org"`, `"a.example.org"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			e := newEnvWith(t, fake.Config{}, withAliases(rec))
			e.ensure(t, newService("web"), e.nodes)
			was := e.only(t)
			events(rec)

			svc := newService("web", tc.svc...)
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
			require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
			var aerr *loadbalancer.AnnotationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, tc.key, aerr.Key)
			got := events(rec)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], "Warning ConflictingAnnotations Not syncing the load balancer until these annotations agree: ")
			for _, m := range tc.mentions {
				assert.Contains(t, err.Error(), m)
				assert.Contains(t, got[0], m)
			}
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "nothing is written")
			assert.Equal(t, was, e.only(t))

			_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
			require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
			assert.Empty(t, events(rec), "once per change")
		})
	}

	t.Run("GetLoadBalancerName guesses no name", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		both := newService("web", withKey(legacy+"name", "web-a"), withAnnotation(loadbalancer.AnnotationName, "web-b"))
		assert.Equal(t, e.lb.GetLoadBalancerName(t.Context(), "c", newService("web")), e.lb.GetLoadBalancerName(t.Context(), "c", both),
			"the default name, as for a malformed one")
	})

	t.Run("a new Service: nothing is created", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		before := e.cloud.Calls()
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationName, "a"), withKey(legacy+"name", "b")), e.nodes)
		require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
		assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		assert.Empty(t, e.cloud.Inventory().LoadBalancers)
	})

	t.Run("node selectors that disagree keep the targets", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		nodes := e.labelled("web", "web", "db")
		svc := newService("web", withNodeSelector("pool=web"))
		e.ensure(t, svc, nodes)
		require.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets)
		both := newService("web", withNodeSelector("pool=web"), withKey(legacy+"node-selector", "pool=db"))
		before := e.cloud.Calls()
		err := e.lb.UpdateLoadBalancer(t.Context(), "c", both, e.labelled("db", "web", "db"))
		require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
		assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		assert.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets, "kept, as for a malformed selector")
	})

	t.Run("keep-on-delete that disagrees deletes nothing", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		svc := newService("web")
		e.ensure(t, svc, e.nodes)
		both := newService("web", withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"), withKey(legacy+"keep", "false"))
		before := e.cloud.Calls()
		err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", both)
		require.ErrorIs(t, err, loadbalancer.ErrConflictingAnnotations)
		assert.Empty(t, e.cloud.Calls().Sub(before), "not a call")
		e.only(t)
	})
}

// TestUnknownLegacyKey: a key under a legacy prefix that no alias declares is reported as
// one under ccmkit's prefix; declared keys, and keys under other prefixes, are not.
func TestUnknownLegacyKey(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withAliases(rec))
	svc := newService("web", withKey(legacy+"uses-proxy-protocol", "true"), withKey(legacy+"type", "large"),
		withKey("old.legacy.example/other", "x"), withKey("example.com/anything", "x"), withAnnotation("sise", "large"))
	e.ensure(t, svc, e.nodes)
	got := events(rec)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "Warning UnknownAnnotation Ignoring annotation lb.legacy.example/uses-proxy-protocol, loadbalancer.ccmkit.io/sise: "+
		"neither ccmkit nor the cloud's adapter reads it under the prefix loadbalancer.ccmkit.io/ or lb.legacy.example/")
	assert.Equal(t, "large", e.only(t).Spec.SettingValues["size"], "never a failed sync")
}

// TestAliasesOutsideTheSpec: the readers of single annotations outside the spec see the
// aliases too: keep-on-delete, load-balancer-id, hostname and node-selector.
func TestAliasesOutsideTheSpec(t *testing.T) {
	t.Run("keep-on-delete", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		svc := newService("web", withKey(legacy+"keep", "true"))
		e.ensure(t, svc, e.nodes)
		require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		lb := e.only(t)
		assert.Empty(t, lb.Spec.Tags[cloudapi.TagService], "released, not deleted")

		t.Run("load-balancer-id adopts it", func(t *testing.T) {
			other := newService("other", withKey(legacy+"id", lb.ID))
			e.ensure(t, other, e.nodes)
			adopted := e.only(t)
			assert.Equal(t, lb.ID, adopted.ID)
			assert.Equal(t, string(other.UID), adopted.Spec.Tags[cloudapi.TagService])

			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("other", withKey(legacy+"id", lb.ID), withKey(legacy+"public", "false")), e.nodes)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "is public, but annotation lb.legacy.example/public asks for internal: a load balancer named by annotation lb.legacy.example/id is never replaced; "+
				"set lb.legacy.example/public to the value that means loadbalancer.ccmkit.io/internal false", "advice in the legacy key's terms")
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
		})
	})

	t.Run("a malformed keep-on-delete holds the deletion, naming the legacy key", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		svc := newService("web")
		e.ensure(t, svc, e.nodes)
		err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", newService("web", withKey(legacy+"keep", "sure")))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `annotation lb.legacy.example/keep: "sure"`)
		e.only(t)
	})

	t.Run("hostname", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		st := e.ensure(t, newService("web", withKey(legacy+"hostname", "web.example.org")), e.nodes)
		assert.Equal(t, []corev1.LoadBalancerIngress{{Hostname: "web.example.org"}}, st.Ingress)
	})

	t.Run("node-selector: a label change reaches the targets", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		svc := newService("web", withKey(legacy+"node-selector", "pool=web"))
		e.ensure(t, svc, e.labelled("web", "db"))
		require.Equal(t, []string{"i-0"}, e.only(t).Spec.Targets)
		require.NoError(t, e.lb.SyncNodeLabels(t.Context(), e.labelled("web", "web")))
		assert.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets)
	})

	t.Run("errors about several annotations name the keys the Service has", func(t *testing.T) {
		e := newEnvWith(t, fake.Config{}, withAliases(nil))
		e.ensure(t, newService("web"), e.nodes)
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withKey(legacy+"public", "false"), withKey(legacy+"keep", "true")), e.nodes)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "and annotation lb.legacy.example/public asks for internal")
		assert.Contains(t, err.Error(), `set annotation lb.legacy.example/keep to "false" to replace it, or set lb.legacy.example/public back`)
	})
}

func TestAliasesReference(t *testing.T) {
	as := loadbalancer.Aliases{
		Prefixes: []string{legacy, "old.legacy.example/"},
		Keys: []loadbalancer.Alias{
			{Key: legacy + "uses-proxyprotocol", Name: loadbalancer.AnnotationProxyProtocol},
			{Key: legacy + "public", Name: loadbalancer.AnnotationInternal, Convert: negate, Allowed: "true, false (the negation of internal)"},
			{Key: legacy + "type", Name: "size"},
		},
	}
	assert.Equal(t, "| annotation | values | default | what it does |\n|---|---|---|---|\n"+
		"| `lb.legacy.example/uses-proxyprotocol` | true, false | that of lb.example.com/proxy-protocol | Read as lb.example.com/proxy-protocol; set both only alike. |\n"+
		"| `lb.legacy.example/public` | true, false (the negation of internal) | that of lb.example.com/internal | Read as lb.example.com/internal, its value converted; set both only alike. |\n"+
		"| `lb.legacy.example/type` | small, medium, large | that of lb.example.com/size | Read as lb.example.com/size; set both only alike. |\n"+
		"\nAny other key under `lb.legacy.example/`, `old.legacy.example/` is reported as unknown (a Warning event UnknownAnnotation).\n",
		as.Reference("lb.example.com/", testSettings()))
	assert.Contains(t, loadbalancer.Aliases{Keys: as.Keys[:1]}.Reference("", nil), "Read as "+prefix+"proxy-protocol")
}
