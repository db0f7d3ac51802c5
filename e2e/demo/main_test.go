package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs the whole demo against the real control plane and checks that it tells
// the story it promises and ends with its summary.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), nil, &out)
	t.Log(out.String())
	require.NoError(t, err)
	for _, want := range []string{
		regexp.QuoteMeta(`node-a initialized: providerID ccmkit://i-0001, m5.large, zone eu-1a, region eu-1`),
		regexp.QuoteMeta(`route in the cloud: 10.244.1.0/24 → i-0001 (Node node-a)`),
		`web EXTERNAL-IP 203\.0\.113\.\d+ \(ipMode VIP\)`,
		`node-c has taint node.cloudprovider.kubernetes.io/shutdown`,
		`node-b deleted by the node lifecycle controller`,
		`the load balancer is gone from the cloud`,
		`(?m)^\s+total\s+\d+\s+\d+$`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), out.String())
	}
}

// TestDemoStopsWhenInterrupted cancels the demo as Ctrl-C does, right after the control
// plane is up: it must return context.Canceled, having stopped what it started.
func TestDemoStopsWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	out := &cancelOnWrite{after: "cloud-controller-manager started", cancel: cancel}
	err := run(ctx, nil, out)
	require.ErrorIs(t, err, context.Canceled)
}

// cancelOnWrite cancels a context when the demo prints a line containing after.
type cancelOnWrite struct {
	bytes.Buffer
	after  string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.after)) {
		w.cancel()
	}
	return w.Buffer.Write(p)
}
