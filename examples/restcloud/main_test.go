package main

import (
	"os/exec"
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
