package deploy

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/metricsref"
)

// grafanaVariables are the values the dashboard's queries are checked with: Grafana's
// own variables, and the provider variable by its default.
func grafanaVariables(provider string) *strings.Replacer {
	return strings.NewReplacer(
		"${provider}", provider, "$provider", provider,
		"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	)
}

// dashboardQueries returns the expr of every target of every panel of the dashboard,
// nested in rows or not; it fails on a target without one.
func dashboardQueries(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if targets, ok := x["targets"].([]any); ok {
			for _, target := range targets {
				expr, _ := field(t, target, "expr").(string)
				require.NotEmpty(t, expr, "a target without a query: %v", target)
				out = append(out, expr)
			}
		}
		for k, child := range x {
			if k != "targets" {
				out = append(out, dashboardQueries(t, child)...)
			}
		}
	case []any:
		for _, child := range x {
			out = append(out, dashboardQueries(t, child)...)
		}
	}
	return out
}

// TestHelmDashboardAndAlerts renders ci/dashboards-values.yaml and checks that the
// dashboard and the alerts query only the metrics a provider of that name registers
// (internal/metricsref, the metrics reference's source), with only their labels.
func TestHelmDashboardAndAlerts(t *testing.T) {
	values := ciFile(t, "dashboards-values.yaml")
	v := readValues(t, values)
	require.NotEmpty(t, v.CloudProvider)
	metricsProvider := strings.NewReplacer("-", "_", ".", "_").Replace(v.CloudProvider)
	registered, err := metricsref.Provider(v.CloudProvider)
	require.NoError(t, err)
	known := seriesLabels(registered)
	for name := range known {
		require.True(t, strings.HasPrefix(name, "cloudprovider_"+metricsProvider+"_"), "%s: the chart reduces the provider name as ccmkit does", name)
	}

	t.Run("off by default", func(t *testing.T) {
		r := render(t)
		assert.Empty(t, r.configMaps)
		assert.Empty(t, r.monitors)
	})

	r := render(t, "--values", values)

	t.Run("dashboard", func(t *testing.T) {
		require.Len(t, r.configMaps, 1)
		cm := r.configMaps[0]
		g := v.Metrics.GrafanaDashboard
		assert.Equal(t, g.Namespace, cm.Namespace)
		assert.Equal(t, g.LabelValue, cm.Labels[g.Label], "the sidecar's label")
		assert.Equal(t, g.Annotations, cm.Annotations)
		require.Len(t, cm.Data, 1)
		var dashboard map[string]any
		for key, data := range cm.Data {
			assert.True(t, strings.HasSuffix(key, ".json"), key)
			require.NoError(t, json.Unmarshal([]byte(data), &dashboard), key)
		}

		vars, _ := field(t, dashboard, "templating", "list").([]any)
		i := slices.IndexFunc(vars, func(v any) bool { m, _ := v.(map[string]any); return m["name"] == "provider" })
		require.GreaterOrEqual(t, i, 0, "no variable provider")
		assert.Equal(t, metricsProvider, field(t, vars[i], "query"), "the provider variable's default is the release's")
		assert.Equal(t, metricsProvider, field(t, vars[i], "current", "value"))

		queries := dashboardQueries(t, dashboard["panels"])
		require.NotEmpty(t, queries)
		used := map[string]bool{}
		subst := grafanaVariables(metricsProvider)
		for _, q := range queries {
			expr := subst.Replace(q)
			assert.NoError(t, checkPromQL(expr, known), "query %s", q)
			refs, _ := parsePromQL(expr)
			for _, s := range refs.selectors {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s.metric, "_bucket"), "_count"), "_sum")] = true
			}
		}
		for _, m := range registered {
			assert.True(t, used[m.Name], "the dashboard shows no %s", m.Name)
		}
	})

	t.Run("alerts", func(t *testing.T) {
		i := slices.IndexFunc(r.monitors, func(m map[string]any) bool { return m["kind"] == "PrometheusRule" })
		require.GreaterOrEqual(t, i, 0, "no PrometheusRule")
		rule := r.monitors[i]
		assert.Equal(t, "monitoring.coreos.com/v1", rule["apiVersion"])
		assert.Equal(t, releaseNamespace, field(t, rule, "metadata", "namespace"))
		assert.True(t, isSubset(v.Metrics.PrometheusRule.Labels, stringMap(t, field(t, rule, "metadata", "labels"))), "labels from the values")

		operating, err := os.ReadFile("../docs/operating.md")
		require.NoError(t, err)
		groups, _ := field(t, rule, "spec", "groups").([]any)
		require.NotEmpty(t, groups)
		var alerts int
		anchors := map[string]bool{}
		for _, group := range groups {
			rules, _ := field(t, group, "rules").([]any)
			require.NotEmpty(t, rules)
			for _, r := range rules {
				name, _ := field(t, r, "alert").(string)
				require.NotEmpty(t, name)
				alerts++
				expr, _ := field(t, r, "expr").(string)
				assert.NoError(t, checkPromQL(expr, known), "alert %s: %s", name, expr)
				assert.Contains(t, []any{"critical", "warning", "info"}, field(t, r, "labels", "severity"), name)
				annotations := stringMap(t, field(t, r, "annotations"))
				assert.NotEmpty(t, annotations["summary"], name)
				assert.NotEmpty(t, annotations["description"], name)
				url, anchor, ok := strings.Cut(annotations["runbook_url"], "#")
				require.True(t, ok, "%s: runbook_url %q has no anchor", name, annotations["runbook_url"])
				assert.True(t, strings.HasSuffix(url, "/docs/operating.md"), "%s: runbook_url %s", name, url)
				assert.True(t, strings.Contains(string(operating), `<a id="`+anchor+`"></a>`), "%s: docs/operating.md has no anchor %s", name, anchor)
				assert.False(t, anchors[anchor], "%s: two alerts with the runbook %s", name, anchor)
				anchors[anchor] = true
			}
		}
		assert.Equal(t, 5, alerts, "refused gone checks, creations held, throttling, sweeper failures, load balancer sync failures")
	})
}
