package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/provider"
)

// fakeCloudPackages are the packages a cloud's production binary must not link: the
// in-memory cloud, the built-in provider that serves it, and the test kits around it.
var fakeCloudPackages = []string{
	"github.com/ccmkit/ccmkit/fake",
	"github.com/ccmkit/ccmkit/provider/builtin",
	"github.com/ccmkit/ccmkit/provider/providertest",
	"github.com/ccmkit/ccmkit/cloudapi/faultinject",
}

// TestOffersOnlyItsOwnProvider checks the cloud providers this binary registers (the
// test binary links what the command links): restcloud, and not the built-in "ccmkit"
// provider over the fake cloud.
func TestOffersOnlyItsOwnProvider(t *testing.T) {
	assert.True(t, cloudprovider.IsCloudProvider("restcloud"), "the adapter's blank import registers restcloud")
	assert.False(t, cloudprovider.IsCloudProvider(provider.DefaultProviderName),
		"an adapter's binary offers --cloud-provider=%s: something links package builtin", provider.DefaultProviderName)
}

// TestLinksNoFakeCloud lists the packages the command links and finds none of the fake
// cloud's; the same listing of examples/ccm, the built-in provider's command, finds them,
// so the check sees them where they are.
func TestLinksNoFakeCloud(t *testing.T) {
	deps := func(pkg string) map[string]bool {
		t.Helper()
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		require.NoError(t, err, "go list -deps %s", pkg)
		set := map[string]bool{}
		for line := range strings.Lines(string(out)) {
			set[strings.TrimSpace(line)] = true
		}
		return set
	}
	restcloud := deps(".")
	require.True(t, restcloud["github.com/ccmkit/ccmkit/provider"], "the listing covers the command's dependencies")
	for _, pkg := range fakeCloudPackages {
		assert.False(t, restcloud[pkg], "the restcloud command links %s", pkg)
	}
	builtin := deps("../ccm")
	assert.True(t, builtin["github.com/ccmkit/ccmkit/fake"], "examples/ccm, over the built-in provider, links the fake cloud")
	assert.True(t, builtin["github.com/ccmkit/ccmkit/provider/builtin"], "examples/ccm links the built-in provider")
}

// TestAdmissionPolicyCommand runs `restcloud admission-policy`: the policy checks
// restcloud's declared size setting, and building the provider calls no cloud.
func TestAdmissionPolicyCommand(t *testing.T) {
	config := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(config, []byte("cluster: {id: c1}\ncredentials: {token: t}\nrestcloud: {endpoint: \"http://127.0.0.1:1\"}\n"), 0o600))
	var out, errOut bytes.Buffer
	code := provider.RunAdmissionPolicyCommand("restcloud", []string{"--cloud-config=" + config}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), `"loadbalancer.ccmkit.io/size" in variables.a`)
	assert.Contains(t, out.String(), `(?i)^(?:small|medium|large)$`)
}
