package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServesSeedUnderV1(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(seed, []byte(`
servers:
- id: 1
  name: node-1
  labels: {role: worker}
  public_net: {ipv4: {ip: 198.51.100.1}}
networks:
- {id: 10, name: k8s, ip_range: 10.0.0.0/16}
`), 0o600))
	ctx, stop := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		exited <- run(ctx, []string{"--seed", seed, "--listen", "127.0.0.1:0", "--rate-limit", "100"}, &stderr, listening)
	}()
	addr := <-listening

	c := hcloud.NewClient(hcloud.WithEndpoint("http://"+addr+"/v1"), hcloud.WithToken("t"))
	srv, resp, err := c.Server.GetByName(ctx, "node-1")
	require.NoError(t, err)
	assert.Equal(t, "198.51.100.1", srv.PublicNet.IPv4.IP.String())
	assert.Equal(t, 100, resp.Meta.Ratelimit.Limit)
	stop()
	assert.Equal(t, 0, <-exited, "a graceful stop")
}

// TestSeedsLoadBalancers: a JSON seed's loadBalancers, each the API's create request, are
// served as the API answers them: with their addresses and the API's defaults.
func TestSeedsLoadBalancers(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(seed, []byte(`{
  "servers": [{"id": 1, "name": "node-1"}],
  "loadBalancers": [{
    "name": "a5f0c7b6e1d2a4c3b9e8f0a1b2c3d4e5f",
    "labels": {"hcloud-ccm/service-uid": "5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"},
    "load_balancer_type": "lb11", "location": "nbg1",
    "targets": [{"type": "server", "server": {"id": 1}}],
    "services": [{"protocol": "tcp", "listen_port": 80, "destination_port": 30080,
      "health_check": {"protocol": "tcp", "port": 30080}}]
  }]
}`), 0o600))
	ctx, stop := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { exited <- run(ctx, []string{"--seed", seed, "--listen", "127.0.0.1:0"}, &stderr, listening) }()
	addr := <-listening

	c := hcloud.NewClient(hcloud.WithEndpoint("http://"+addr+"/v1"), hcloud.WithToken("t"))
	lbs, err := c.LoadBalancer.AllWithOpts(ctx, hcloud.LoadBalancerListOpts{ListOpts: hcloud.ListOpts{
		LabelSelector: "hcloud-ccm/service-uid=5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"}})
	require.NoError(t, err)
	require.Len(t, lbs, 1)
	lb := lbs[0]
	assert.Equal(t, "a5f0c7b6e1d2a4c3b9e8f0a1b2c3d4e5f", lb.Name)
	assert.Equal(t, int64(2), lb.ID, "the next free ID")
	assert.Equal(t, "203.0.113.1", lb.PublicNet.IPv4.IP.String())
	assert.Equal(t, "nbg1", lb.Location.Name)
	require.Len(t, lb.Services, 1)
	assert.Equal(t, hcloud.LoadBalancerServiceHealthCheck{Protocol: hcloud.LoadBalancerServiceProtocolTCP, Port: 30080,
		Interval: 15 * time.Second, Timeout: 10 * time.Second, Retries: 3}, lb.Services[0].HealthCheck)
	require.Len(t, lb.Targets, 1)
	assert.Equal(t, int64(1), lb.Targets[0].Server.Server.ID)
	stop()
	assert.Equal(t, 0, <-exited, "a graceful stop")
}

func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("servers: []\nvolumes: []\n"), 0o600))
	refused := filepath.Join(dir, "refused.yaml")
	require.NoError(t, os.WriteFile(refused, []byte("loadBalancers: [{name: a, load_balancer_type: lb11, location: nowhere}]\n"), 0o600))
	tests := []struct {
		name string
		args []string
	}{
		{"unknown flag", []string{"--nope"}},
		{"missing seed", []string{"--seed", filepath.Join(dir, "absent.yaml")}},
		{"unknown seed key", []string{"--seed", unknown}},
		{"load balancer the API would refuse", []string{"--seed", refused}},
		{"bad rate", []string{"--rate-per-second", "0"}},
		{"negative polls", []string{"--action-polls", "-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, exitBadUsage, run(context.Background(), tt.args, &stderr, nil), stderr.String())
		})
	}
}
