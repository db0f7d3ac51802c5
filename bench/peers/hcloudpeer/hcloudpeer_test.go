package hcloudpeer

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// TestColumnSmall runs the whole benchmark with the Hetzner-shaped column at a small size:
// ccmkit with the hcloud adapter under the upstream controllers, every figure taken,
// requests counted at the mock.
func TestColumnSmall(t *testing.T) {
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	figures, err := harness.RunSmall(context.Background(), &logs, Column())
	require.NoError(t, err)
	hc := func(key string) any {
		t.Helper()
		f, ok := figures[key]
		require.True(t, ok, key)
		return f[Name]
	}
	const services = 6
	for _, key := range []string{"P1", "P1_outage", "P4_reads", "P3", "P6"} {
		assert.Positive(t, hc(key), key)
	}
	for _, key := range []string{"P2_ensure_reads", "P2_ensure_writes", "P2_update_writes", "P3_node_writes", "P4_writes"} {
		assert.Equal(t, 0.0, hc(key), "%s: converged, nothing to read or write", key)
	}
	assert.Equal(t, float64(services), hc("node_add_writes"), "one add_target per load balancer")
	assert.Equal(t, float64(services), hc("node_add_lbs"), "every load balancer has the new server")
	assert.Nil(t, hc("P2_settings_calls"), "Hetzner has no client-IP session affinity: n/a")
	assert.Contains(t, figures["P2_settings_calls"]["note"], Name+" refuses the Service")
	assert.NotEqual(t, Name, figures["P1"]["best_peer"], "ccmkit over Hetzner is no peer of ccmkit")
	assert.Contains(t, logs.String(), "GET /servers", "the requests by route")
}
