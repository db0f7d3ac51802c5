package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

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

func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("servers: []\nvolumes: []\n"), 0o600))
	tests := []struct {
		name string
		args []string
	}{
		{"unknown flag", []string{"--nope"}},
		{"missing seed", []string{"--seed", filepath.Join(dir, "absent.yaml")}},
		{"unknown seed key", []string{"--seed", unknown}},
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
