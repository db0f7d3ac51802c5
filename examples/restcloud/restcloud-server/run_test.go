package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/examples/restcloud/adapter"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

const cloudYAML = `# a cloud config of the built-in provider: only fake: is read
backend: fake
region: eu-1
fake:
  pageSize: 10
  instances:
    - {id: i-1, name: node-a, zone: eu-1a, addresses: [{type: InternalIP, address: 10.0.0.1}]}
`

const token = "srv-token-31"

// writeFile writes content into a file of t's temporary folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// TestBadUsage checks that every bad flag and cloud config ends the command with a
// non-zero exit code and a message naming what is wrong, before it listens.
func TestBadUsage(t *testing.T) {
	good := writeFile(t, "cloud.yaml", cloudYAML)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"no cloud config", []string{"--listen=127.0.0.1:0"}, exitBadUsage, []string{"--cloud-config: required"}},
		{"unknown flag", []string{"--cloud-config=" + good, "--port=80"}, exitBadUsage, []string{"flag provided but not defined: -port"}},
		{"argument", []string{"--cloud-config=" + good, "serve"}, exitBadUsage, []string{"unexpected arguments", "serve"}},
		{"every flag problem at once", []string{"--listen=", "--fault-error-rate=1.5", "--fault-throttle-rate=-1", "--fault-qps=5", "--fault-burst=0"},
			exitBadUsage, []string{"--cloud-config: required", "--listen: required", "probability 1.5 is outside [0, 1]", "probability -1 is outside [0, 1]", "burst 0 is below 1"}},
		{"missing cloud config", []string{"--cloud-config=/nonexistent/cloud.yaml"}, exitBadUsage, []string{"--cloud-config: open /nonexistent/cloud.yaml"}},
		{"no fake section", []string{"--cloud-config=" + writeFile(t, "nofake.yaml", "region: eu-1\n")}, exitBadUsage, []string{"fake", "section: it describes the cloud to serve"}},
		{"misspelt key", []string{"--cloud-config=" + writeFile(t, "typo.yaml", "fake:\n  pagesize: 10\n")}, exitBadUsage, []string{"line 2", "pagesize"}},
		{"invalid cloud", []string{"--cloud-config=" + writeFile(t, "bad.yaml", "fake:\n  instances:\n    - {id: i-1}\n    - {id: i-1}\n")}, exitBadUsage, []string{"i-1"}},
		{"empty token file", []string{"--cloud-config=" + good, "--token-file=" + writeFile(t, "token", "\n")}, exitBadUsage, []string{"--token-file", "the file is empty"}},
		{"state file in a missing folder", []string{"--cloud-config=" + good, "--state-file=/nonexistent/state.json"}, exitFailed, []string{"/nonexistent/state.json"}},
		{"address taken", []string{"--cloud-config=" + good, "--listen=256.0.0.1:1"}, exitFailed, []string{"Serving failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stderr)
			assert.Equal(t, tc.wantCode, code, "stderr:\n%s", stderr.String())
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
			assert.NotContains(t, stderr.String(), "Serving the restcloud API")
		})
	}
}

// TestFaultConfig checks that the --fault-* flags become the fault injector's rules: lost
// answers only for writes, and no rule for a rate of zero.
func TestFaultConfig(t *testing.T) {
	o, err := parseFlags([]string{"--cloud-config=x", "--fault-seed=7", "--fault-lost-write-rate=0.1", "--fault-throttle-rate=0.05",
		"--fault-retry-after=2s", "--fault-qps=20", "--fault-burst=5"}, &bytes.Buffer{})
	require.NoError(t, err)
	cfg := o.faults.config()
	assert.Equal(t, int64(7), cfg.Seed)
	assert.Equal(t, 2*time.Second, cfg.ThrottleRetryAfter)
	require.NotNil(t, cfg.RateLimit)
	assert.Equal(t, 20.0, cfg.RateLimit.QPS)
	assert.Equal(t, 5, cfg.RateLimit.Burst)
	require.Len(t, cfg.Rules, 2, "no rule for --fault-error-rate=0")
	assert.Equal(t, 0.1, cfg.Rules[0].Probability)
	assert.NotEmpty(t, cfg.Rules[0].Ops)
	for _, op := range cfg.Rules[0].Ops {
		assert.True(t, op.IsWrite(), "lost answers only for writes, not %s", op)
	}
	assert.Equal(t, 0.05, cfg.Rules[1].Probability)
	assert.Empty(t, cfg.Rules[1].Ops, "throttling for every operation")

	o, err = parseFlags([]string{"--cloud-config=x"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Empty(t, o.faults.config().Rules, "no fault without a --fault-* flag")
	assert.Nil(t, o.faults.config().RateLimit)
}

// running is a run of the command in this process.
type running struct {
	api, debug string
	code       chan int
	stop       context.CancelFunc
}

// syncBuffer is the command's stderr, read while it writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var addressRE = regexp.MustCompile(`"Serving the (restcloud API|debug endpoints)" address="(http://[^"]+)"`)

// start runs the command with args, on free ports, and waits until it serves.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &running{code: make(chan int, 1), stop: cancel}
	var stderr syncBuffer
	go func() {
		s.code <- run(ctx, append([]string{"--listen=127.0.0.1:0", "--debug-listen=127.0.0.1:0"}, args...), &stderr)
	}()
	require.Eventually(t, func() bool {
		for _, m := range addressRE.FindAllStringSubmatch(stderr.String(), -1) {
			if m[1] == "restcloud API" {
				s.api = m[2]
			} else {
				s.debug = m[2]
			}
		}
		return s.api != "" && s.debug != ""
	}, 10*time.Second, 10*time.Millisecond, "the server's log:\n%s", &stderr)
	t.Cleanup(func() {
		s.stop()
		<-s.code
	})
	return s
}

// shutdown stops the server as SIGTERM does and returns its exit code.
func (s *running) shutdown() int {
	s.stop()
	code := <-s.code
	s.code <- code
	return code
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a local server
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

// TestServesTheCloudFromItsStateFile runs the command, creates a load balancer through
// the restcloud adapter, reads the debug endpoints, stops the command gracefully (exit
// 0), and runs it again over the same state file: the load balancer is still there with
// its address, and the new server's counts start at zero.
func TestServesTheCloudFromItsStateFile(t *testing.T) {
	cfg := writeFile(t, "cloud.yaml", cloudYAML)
	state := filepath.Join(t.TempDir(), "state.json")
	tokenFile := writeFile(t, "token", token+"\n")
	s := start(t, "--cloud-config="+cfg, "--state-file="+state, "--token-file="+tokenFile)

	ctx := t.Context()
	client := adapter.New(s.api, provider.Secret(token), nil)
	inst, err := client.GetInstance(ctx, "i-1")
	require.NoError(t, err)
	assert.Equal(t, "node-a", inst.Name, "the cloud config's instance")
	_, err = adapter.New(s.api, provider.Secret("wrong"), nil).GetInstance(ctx, "i-1")
	require.ErrorIs(t, err, cloudapi.ErrInvalidRequest, "a wrong token is refused")
	lb, err := client.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "web", Targets: []string{"i-1"},
		Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}})
	require.NoError(t, err)
	require.NotEmpty(t, lb.Addresses)

	var calls debugCalls
	getJSON(t, s.debug+"/debug/calls", &calls)
	assert.Equal(t, fake.Calls{cloudapi.OpGetInstance: 1, cloudapi.OpCreateLoadBalancer: 1}, calls.Calls, "the refused call never reached the cloud")
	assert.Equal(t, int64(1), calls.Reads)
	assert.Equal(t, int64(1), calls.Writes)
	var history []fake.Event
	getJSON(t, s.debug+"/debug/history", &history)
	require.Len(t, history, 1)
	assert.Equal(t, cloudapi.OpCreateLoadBalancer, history[0].Op)
	assert.Equal(t, lb.ID, history[0].ID)
	assert.Equal(t, 0, s.shutdown(), "a graceful stop exits 0")

	s = start(t, "--cloud-config="+cfg, "--state-file="+state, "--token-file="+tokenFile)
	again, err := adapter.New(s.api, provider.Secret(token), nil).GetLoadBalancer(ctx, lb.ID)
	require.NoError(t, err, "the load balancer survives a restart")
	assert.Equal(t, lb.Addresses, again.Addresses)
	var inv fake.Inventory
	getJSON(t, s.debug+"/debug/inventory", &inv)
	assert.Len(t, inv.LoadBalancers, 1)
	calls = debugCalls{} // Decode would add to the maps
	getJSON(t, s.debug+"/debug/calls", &calls)
	assert.Equal(t, fake.Calls{cloudapi.OpGetLoadBalancer: 1}, calls.Calls, "counts are the running server's")
	assert.Equal(t, 0, s.shutdown())
}

// TestInjectsFaults runs the command with every call throttled, and with every write's
// answer lost: a throttled call is 429 with the Retry-After of the flag and never reaches
// the cloud; a write whose answer is lost was made, and the client sees a transient error.
func TestInjectsFaults(t *testing.T) {
	cfg := writeFile(t, "cloud.yaml", cloudYAML)
	ctx := t.Context()

	s := start(t, "--cloud-config="+cfg, "--fault-throttle-rate=1", "--fault-retry-after=3s")
	_, err := adapter.New(s.api, "any", nil).GetInstance(ctx, "i-1")
	require.ErrorIs(t, err, cloudapi.ErrThrottled)
	wait, ok := cloudapi.RetryAfter(err)
	require.True(t, ok)
	assert.Equal(t, 3*time.Second, wait)
	var calls debugCalls
	getJSON(t, s.debug+"/debug/calls", &calls)
	assert.Empty(t, calls.Calls, "a throttled call never reaches the cloud")
	assert.Equal(t, debugFaults{Calls: 1, Faults: map[string]int{"Throttle": 1}}, calls.Faults[cloudapi.OpGetInstance])
	assert.Equal(t, 0, s.shutdown())

	s = start(t, "--cloud-config="+cfg, "--fault-lost-write-rate=1")
	client := adapter.New(s.api, "any", nil)
	_, err = client.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "web", Targets: []string{"i-1"},
		Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}})
	require.ErrorIs(t, err, cloudapi.ErrTransient, "the answer of the create is lost")
	page, err := client.ListLoadBalancers(ctx, cloudapi.ListOptions{})
	require.NoError(t, err, "reads pass")
	require.Len(t, page.Items, 1, "the create was made")
	calls = debugCalls{} // Decode would add to the maps
	getJSON(t, s.debug+"/debug/calls", &calls)
	assert.Equal(t, fake.Calls{cloudapi.OpCreateLoadBalancer: 1, cloudapi.OpListLoadBalancers: 1}, calls.Calls)
	assert.Equal(t, map[string]int{"Ambiguous": 1}, calls.Faults[cloudapi.OpCreateLoadBalancer].Faults)
	assert.Equal(t, 0, s.shutdown())
}
