package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// TestDemo runs the whole demo against the real control plane and checks that it tells
// the story it promises and ends with its summary.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), nil, nil, &out)
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
	err := run(ctx, nil, nil, out)
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

// TestDemoKeepSurvivesACCMRestart runs the demo with -keep: once the cluster is handed over
// to examples/ccm as its own process, it creates a LoadBalancer Service as a user would
// with kubectl, presses Enter (the CCM is killed with SIGKILL and started again) and
// checks that the Service kept its address and the state file holds its one load balancer.
func TestDemoKeepSurvivesACCMRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in, press := io.Pipe()
	out := &lines{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-keep"}, in, out) }()
	defer func() {
		cancel()
		_ = press.Close()
		require.NoError(t, <-done)
		t.Log(out.String())
	}()

	text := out.await(t, done, "Press Enter to kill it")
	kubeconfig := regexp.MustCompile(`kubectl --kubeconfig (\S+) get nodes`).FindStringSubmatch(text)
	require.Len(t, kubeconfig, 2)
	cloudConfig := regexp.MustCompile(`--cloud-config=(\S+)`).FindStringSubmatch(text)
	require.Len(t, cloudConfig, 2)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig[1])
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: metav1.NamespaceDefault},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	_, err = client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	var ip string
	require.NoError(t, harness.Eventually(ctx, 2*time.Minute, "kept's address from the CCM process", func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ip = s.Status.LoadBalancer.Ingress[0].IP
		return true, nil
	}))

	_, err = press.Write([]byte("\n"))
	require.NoError(t, err)
	text = out.await(t, done, "every Service kept its address")
	assert.Regexp(t, `default/kept\s+`+regexp.QuoteMeta(ip)+`\s+`+regexp.QuoteMeta(ip)+`\s+lb-\d+ `+regexp.QuoteMeta(ip), text)
	s, err := client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, s.Status.LoadBalancer.Ingress, 1)
	assert.Equal(t, ip, s.Status.LoadBalancer.Ingress[0].IP)

	// The state file, read by a cloud of the test's own over the process's cloud config:
	// kept's one load balancer, nothing else (the story deleted its Service's).
	config, err := os.ReadFile(cloudConfig[1])
	require.NoError(t, err)
	cloud, err := harness.NewCloud(config, faultinject.Config{})
	require.NoError(t, err)
	lbs := cloud.Fake.Inventory().LoadBalancers
	require.Len(t, lbs, 1)
	assert.Equal(t, string(s.UID), lbs[0].Spec.Tags[cloudapi.TagService])
	assert.Equal(t, []string{ip}, lbs[0].Addresses)
}

// lines is the demo's output, safe to read while the demo writes it.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// await waits until the output contains want and returns it; it fails when the demo ends
// first or after five minutes (the story and building examples/ccm come first).
func (l *lines) await(t *testing.T, done <-chan error, want string) string {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for {
		if text := l.String(); strings.Contains(text, want) {
			return text
		}
		select {
		case err := <-done:
			t.Fatalf("the demo ended (%v) before it printed %q:\n%s", err, want, l.String())
		case <-deadline:
			t.Fatalf("the demo did not print %q within five minutes:\n%s", want, l.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
