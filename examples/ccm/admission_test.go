package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/provider"
)

// TestAdmissionPolicyCommand runs `ccm admission-policy` over the built-in provider: it
// prints the policy of the cloud config's annotation prefix.
func TestAdmissionPolicyCommand(t *testing.T) {
	config := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(config, []byte("cluster: {id: c1}\nloadBalancer: {annotationPrefix: lb.example.com/}\n"), 0o600))
	var out, errOut bytes.Buffer
	code := provider.RunAdmissionPolicyCommand(provider.DefaultProviderName, []string{"--cloud-config=" + config}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "kind: ValidatingAdmissionPolicyBinding")
	assert.Contains(t, out.String(), `"lb.example.com/internal" in variables.a`)

	errOut.Reset()
	assert.Equal(t, 2, provider.RunAdmissionPolicyCommand(provider.DefaultProviderName, []string{"--cloud-config=" + config, "extra"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "Usage: admission-policy")
	errOut.Reset()
	assert.Equal(t, 1, provider.RunAdmissionPolicyCommand("nosuchprovider", []string{"--cloud-config=" + config}, &out, &errOut))
	assert.Contains(t, errOut.String(), "admission-policy: ")
}
