package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/examples/hcloud/adapter"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestAdmissionPolicy checks that the admission policy of the adapter's declarations
// checks the keys of Hetzner's own cloud-controller-manager: the plain ones as the
// annotations they stand for, the converted one and those of unchecked annotations at
// sync time only, and warns of the other keys under the legacy prefix.
func TestAdmissionPolicy(t *testing.T) {
	out, err := loadbalancer.AdmissionPolicy(loadbalancer.AdmissionPolicyOptions{Settings: adapter.Settings, Aliases: adapter.Aliases})
	require.NoError(t, err)
	p := adapter.LegacyPrefix
	for _, want := range []string{
		`object.metadata.annotations.exists(k, k.startsWith("loadbalancer.ccmkit.io/") || k.startsWith("` + p + `"))`,
		"annotation " + p + "uses-proxyprotocol: malformed value (allowed: true, false)",
		"annotation " + p + "health-check-port: malformed value (allowed: 1-65535)",
		"annotation " + p + "algorithm-type: malformed value (allowed: round_robin, least_connections)",
		"annotation " + p + "protocol: conflicts with annotation loadbalancer.ccmkit.io/protocol",
		loadbalancer.AdmissionPolicySyncOnlyAnnotation + ": port-health-checks, node-selector, port-protocols, type, location, network-zone, " +
			p + "node-selector, " + p + "http-certificates, " + p + "type, " + p + "location, " + p + "network-zone",
		`k.startsWith("` + p + `") && !(k in ["` + p + `name", `,
	} {
		assert.Contains(t, string(out), want)
	}
}
