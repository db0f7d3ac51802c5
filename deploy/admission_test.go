package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ccmkit/ccmkit/internal/docgen"
	"github.com/ccmkit/ccmkit/provider"
)

// chartPolicy is the admission policy the chart installs by default.
const chartPolicy = chartDir + "/files/admission-policy.yaml"

// TestDocsHelmAdmissionPolicy keeps the chart's admission policy equal to what the
// built-in provider's `admission-policy` command prints for the chart's default cloud
// config (`make docs` rewrites it).
func TestDocsHelmAdmissionPolicy(t *testing.T) {
	config := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(config, []byte(readValues(t, filepath.Join(chartDir, "values.yaml")).CloudConfig.Content), 0o600))
	var out, errOut bytes.Buffer
	code := provider.RunAdmissionPolicyCommand(provider.DefaultProviderName, []string{"--cloud-config=" + config}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	docgen.CheckFile(t, chartPolicy, out.String())
}

// TestHelmAdmissionPolicy checks that the chart installs its policy by default, another
// one from admissionPolicy.manifest, and none when admissionPolicy.enabled is false.
func TestHelmAdmissionPolicy(t *testing.T) {
	shipped, err := os.ReadFile(chartPolicy)
	require.NoError(t, err)
	want := decodeAll(t, shipped)
	require.Len(t, want, 4, "two policies and their bindings")

	assert.ElementsMatch(t, want, render(t).admission, "the shipped policy by default")
	assert.Empty(t, render(t, "--set", "admissionPolicy.enabled=false").admission)

	custom := bytes.ReplaceAll(shipped, []byte("loadbalancer.ccmkit.io/"), []byte("lb.example.com/"))
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, custom, 0o600))
	assert.ElementsMatch(t, decodeAll(t, custom), render(t, "--set-file", "admissionPolicy.manifest="+file).admission, "the manifest given")
}

// decodeAll decodes every object of data strictly.
func decodeAll(t *testing.T, data []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for i, doc := range splitDocuments(t, data) {
		obj, err := decodeStrict(doc)
		require.NoError(t, err, "document %d", i+1)
		objs = append(objs, obj)
	}
	return objs
}
