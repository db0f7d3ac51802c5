package provider

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/docgen"
)

// TestDocsConfigReference keeps docs/reference/config.md's tables equal to Config's doc
// comments (`make docs` rewrites them).
func TestDocsConfigReference(t *testing.T) {
	ref, err := docgen.ConfigReference(".", "Config", "")
	require.NoError(t, err)
	docgen.Check(t, "../docs/reference/config.md", "provider.Config", ref)
}

// recordingRegistry is a metrics registry that remembers what was registered with it.
type recordingRegistry struct {
	metrics.KubeRegistry
	registered []metrics.Registerable
}

func (r *recordingRegistry) Register(m metrics.Registerable) error {
	if err := r.KubeRegistry.Register(m); err != nil {
		return err
	}
	r.registered = append(r.registered, m)
	return nil
}

func (r *recordingRegistry) MustRegister(ms ...metrics.Registerable) {
	r.KubeRegistry.MustRegister(ms...)
	r.registered = append(r.registered, ms...)
}

// descPattern reads prometheus.Desc's String form, the one public view of a descriptor's
// help and variable labels; fields between help and variableLabels (client_golang added
// unit in the versions Kubernetes 1.37 uses) are skipped.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), (?:[a-zA-Z]+: (?:"(?:[^"\\]|\\.)*"|\{[^}]*\}), )*variableLabels: \{([^}]*)\}\}$`)

// metricsReference returns the table of every metric a provider with every part on
// registers, read from the registered descriptors, the provider name as <p>.
func metricsReference(t *testing.T) string {
	reg := &recordingRegistry{KubeRegistry: metrics.NewKubeRegistry()}
	on := true
	cloud, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}})
	require.NoError(t, err)
	cfg := Config{Cluster: ClusterConfig{ID: "c"}, Enable: EnableConfig{Routes: &on}, Sweeper: SweeperConfig{Enabled: true}}
	_, err = New(cfg, cloud, Options{Metrics: reg})
	require.NoError(t, err)

	var rows [][]string
	for _, m := range reg.registered {
		var kind string
		switch m.(type) {
		case *metrics.Counter, *metrics.CounterVec:
			kind = "counter"
		case *metrics.Histogram, *metrics.HistogramVec:
			kind = "histogram"
		case *metrics.Gauge, *metrics.GaugeVec:
			kind = "gauge"
		default:
			t.Fatalf("metric %s: a %T, which the reference does not know", m.FQName(), m)
		}
		descs := make(chan *prometheus.Desc, 8)
		m.Describe(descs)
		close(descs)
		for d := range descs {
			match := descPattern.FindStringSubmatch(d.String())
			require.NotNil(t, match, "a descriptor's String form changed: %s", d.String())
			name, err := strconv.Unquote(match[1])
			require.NoError(t, err)
			help, err := strconv.Unquote(match[2])
			require.NoError(t, err)
			help = strings.TrimPrefix(help, "[ALPHA] ")
			var labels []string
			for _, l := range strings.Split(match[3], ",") {
				if l != "" {
					labels = append(labels, "`"+l+"`")
				}
			}
			name = strings.Replace(name, "cloudprovider_"+DefaultProviderName+"_", "cloudprovider_<p>_", 1)
			rows = append(rows, []string{"`" + name + "`", kind, strings.Join(labels, ", "), help})
		}
	}
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	require.NotEmpty(t, rows)
	return docgen.Table([]string{"metric", "type", "labels", "help"}, rows)
}

// TestDocsMetricsReference keeps docs/reference/metrics.md's table equal to the metrics
// a provider registers (`make docs` rewrites it).
func TestDocsMetricsReference(t *testing.T) {
	docgen.Check(t, "../docs/reference/metrics.md", "provider metrics", metricsReference(t))
}

// TestDescPattern: the descriptor's String form of the client_golang versions of every
// supported Kubernetes minor (unit appeared with the one 1.37 uses) is read.
func TestDescPattern(t *testing.T) {
	for _, s := range []string{
		`Desc{fqName: "cloudprovider_p_api_retries_total", help: "[ALPHA] Retries, \"quoted\".", constLabels: {}, variableLabels: {operation}}`,
		`Desc{fqName: "cloudprovider_p_api_retries_total", help: "[ALPHA] Retries.", unit: "", constLabels: {}, variableLabels: {operation}}`,
	} {
		m := descPattern.FindStringSubmatch(s)
		require.NotNil(t, m, s)
		assert.Equal(t, `"cloudprovider_p_api_retries_total"`, m[1])
		assert.Equal(t, "operation", m[3])
	}
}
