package metricsref

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The descriptor's String form of the client_golang versions of every supported
// Kubernetes minor (unit appeared with the one 1.37 uses) is read.
func TestParseDesc(t *testing.T) {
	for _, s := range []string{
		`Desc{fqName: "cloudprovider_p_api_retries_total", help: "[ALPHA] Retries, \"quoted\".", constLabels: {}, variableLabels: {operation}}`,
		`Desc{fqName: "cloudprovider_p_api_retries_total", help: "[ALPHA] Retries, \"quoted\".", unit: "", constLabels: {}, variableLabels: {operation}}`,
	} {
		name, help, labels, err := parseDesc(s)
		require.NoError(t, err, s)
		assert.Equal(t, "cloudprovider_p_api_retries_total", name)
		assert.Equal(t, `[ALPHA] Retries, "quoted".`, help)
		assert.Equal(t, []string{"operation"}, labels)
	}
	_, _, _, err := parseDesc(`Desc{name: "x"}`)
	assert.Error(t, err)
}

// The metrics carry the provider's name, and those of a histogram are listed once.
func TestProvider(t *testing.T) {
	ms, err := Provider("my-cloud")
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	byName := map[string]Metric{}
	for _, m := range ms {
		assert.Regexp(t, `^cloudprovider_my_cloud_`, m.Name)
		byName[m.Name] = m
	}
	assert.Equal(t, Metric{Name: "cloudprovider_my_cloud_api_request_duration_seconds", Kind: "histogram", Labels: []string{"operation"},
		Help: "Duration of one attempt of a cloud API call, by operation, whatever its outcome."},
		byName["cloudprovider_my_cloud_api_request_duration_seconds"])
}
