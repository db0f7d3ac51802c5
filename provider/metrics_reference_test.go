package provider_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/docgen"
	"github.com/ccmkit/ccmkit/internal/metricsref"
	"github.com/ccmkit/ccmkit/provider"
)

// TestDocsMetricsReference keeps docs/reference/metrics.md's table equal to the metrics
// a provider with every part on registers, the provider name as <p> (`make docs`
// rewrites it).
func TestDocsMetricsReference(t *testing.T) {
	ms, err := metricsref.Provider(provider.DefaultProviderName)
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	var rows [][]string
	for _, m := range ms {
		var labels []string
		for _, l := range m.Labels {
			labels = append(labels, "`"+l+"`")
		}
		name := strings.Replace(m.Name, "cloudprovider_"+provider.DefaultProviderName+"_", "cloudprovider_<p>_", 1)
		rows = append(rows, []string{"`" + name + "`", m.Kind, strings.Join(labels, ", "), m.Help})
	}
	docgen.Check(t, "../docs/reference/metrics.md", "provider metrics", docgen.Table([]string{"metric", "type", "labels", "help"}, rows))
}
