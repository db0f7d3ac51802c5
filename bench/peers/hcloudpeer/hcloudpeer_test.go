package hcloudpeer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// TestColumnSmall runs the whole benchmark with the Hetzner-shaped column at a small size:
// ccmkit with the hcloud adapter under the upstream controllers, every figure taken,
// requests counted at the mock.
func TestColumnSmall(t *testing.T) {
	figures, hc, logs := harness.RunSmall(t, Column())
	const services = harness.SmallServices
	for _, key := range []string{"P1", "P1_outage", "P4_reads", "P3", "P6"} {
		assert.Positive(t, hc(key), key)
	}
	for _, key := range []string{"P2_ensure_reads", "P2_ensure_writes", "P2_update_writes", "P3_node_writes", "P4_writes"} {
		assert.Equal(t, 0.0, hc(key), "%s: converged, nothing to read or write", key)
	}
	assert.Equal(t, float64(services), hc("node_add_writes"), "one add_target per load balancer")
	assert.Equal(t, float64(services), hc("node_add_lbs"), "every load balancer has the new server")
	assert.Equal(t, float64(services), hc("node_delete_writes"), "one remove_target per load balancer")
	assert.Equal(t, 0.0, hc("node_delete_lbs"), "no load balancer keeps the deleted server")
	assert.Nil(t, hc("P2_settings_calls"), "Hetzner has no client-IP session affinity: n/a")
	assert.Contains(t, figures["P2_settings_calls"]["note"], Name+" refuses the Service")
	assert.NotEqual(t, Name, figures["P1"]["best_peer"], "ccmkit over Hetzner is no peer of ccmkit")
	assert.Contains(t, logs, "GET /servers", "the requests by route")
}

// TestWatch counts a load balancer created with the watched server among its targets and
// one that had it added, each once, and nothing for another server's; watching for the
// server's removal, only a remove_target of it.
func TestWatch(t *testing.T) {
	hc, err := Column().NewCloud(harness.CloudConfig{Nodes: 2})
	require.NoError(t, err)
	c := hc.(*cloud)
	done := c.Watch(1, 2, false)
	c.written("/load_balancers", []byte(`{"name":"a","targets":[{"type":"server","server":{"id":1000}}]}`))
	c.written("/load_balancers/7/actions/add_target", []byte(`{"type":"server","server":{"id":1000}}`))
	c.written("/load_balancers/7/actions/add_target", []byte(`{"type":"server","server":{"id":1001}}`))
	c.written("/load_balancers/7/actions/add_target", []byte(`{"type":"server","server":{"id":1001}}`))
	assert.False(t, closed(done), "done with one load balancer of two")
	c.written("/load_balancers", []byte(`{"name":"b","targets":[{"type":"server","server":{"id":1000}},{"type":"server","server":{"id":1001}}]}`))
	assert.True(t, closed(done), "not done with two load balancers")

	gone := c.Watch(1, 1, true)
	c.written("/load_balancers/7/actions/add_target", []byte(`{"type":"server","server":{"id":1001}}`))
	c.written("/load_balancers/7/actions/remove_target", []byte(`{"type":"server","server":{"id":1000}}`))
	assert.False(t, closed(gone), "done with another server removed")
	c.written("/load_balancers/7/actions/remove_target", []byte(`{"type":"server","server":{"id":1001}}`))
	assert.True(t, closed(gone), "not done with the server removed")
}

// closed reports whether ch is closed (or has a value ready).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
