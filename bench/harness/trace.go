package harness

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// traceScenarios are the scenarios -trace and -cpuprofile can cover: those that time a
// Node's way into or out of every load balancer.
var traceScenarios = []string{"node_add", "node_add_groups", "node_delete"}

// tracer is -trace and -cpuprofile: for each traced scenario of each column, a timeline
// of what the controllers asked the provider (each call's start and end since the
// scenario began, its arguments in short, its error), how the scenario's Node changed
// (as the informers saw it: provider ID, taints, Ready), the cloud's calls by operation
// every tenth of a second, and the scenario's own marks; and a CPU profile of the same
// span, one file per column and scenario. A nil tracer traces nothing. It is safe for
// concurrent use.
type tracer struct {
	scenarios map[string]bool
	profile   string // the -cpuprofile FILE; empty: none

	mu      sync.Mutex
	out     *bufio.Writer // nil: no timeline
	file    io.Closer
	label   string    // "column scenario" of the span under way; empty: none
	start   time.Time // the span's start
	profOut *os.File  // the span's CPU profile, while one is written
}

// newTracer returns the tracer of -trace FILE (empty: no timeline), -cpuprofile FILE
// (empty: no profile) and -trace-scenarios (comma-separated names of traceScenarios), or
// nil when neither file is asked for.
func newTracer(timeline, profile, scenarios string) (*tracer, error) {
	if timeline == "" && profile == "" {
		return nil, nil
	}
	t := &tracer{scenarios: map[string]bool{}, profile: profile}
	for name := range strings.SplitSeq(scenarios, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(traceScenarios, name) {
			return nil, fmt.Errorf("-trace-scenarios: %q is not a traced scenario (%s)", name, strings.Join(traceScenarios, ", "))
		}
		t.scenarios[name] = true
	}
	if timeline != "" {
		f, err := os.Create(timeline)
		if err != nil {
			return nil, fmt.Errorf("-trace: %w", err)
		}
		t.out, t.file = bufio.NewWriter(f), f
	}
	return t, nil
}

// close flushes and closes the timeline.
func (t *tracer) close() error {
	if t == nil || t.file == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.out.Flush()
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// begin starts the span of scenario in column's world, when scenario is traced: the
// timeline's clock starts, the CPU profile too, and the cloud's calls are sampled every
// 100 ms. The returned function ends the span (it must be called; a no-op when nothing
// is traced).
func (t *tracer) begin(w *world, scenario string) (end func()) {
	if t == nil || !t.scenarios[scenario] {
		return func() {}
	}
	t.mu.Lock()
	t.label, t.start = w.name+" "+scenario, time.Now()
	t.mu.Unlock()
	if t.profile != "" {
		if err := t.startProfile(w.name, scenario); err != nil {
			t.eventf("no CPU profile: %v", err)
		}
	}
	t.eventf("begin (%d Nodes, %d Services)", len(w.nodes), len(w.services))
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		last := w.cloud.Calls()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			now := w.cloud.Calls()
			if d := now.Sub(last); d.Total() > 0 {
				t.eventf("cloud calls in the last 100ms: %v", d)
			}
			last = now
		}
	}()
	return func() {
		close(stop)
		<-sampled
		t.eventf("end")
		t.stopProfile()
		t.mu.Lock()
		t.label = ""
		t.mu.Unlock()
	}
}

// startProfile starts the CPU profile of column's scenario: FILE with ".column.scenario"
// before its extension.
func (t *tracer) startProfile(column, scenario string) error {
	ext := filepath.Ext(t.profile)
	name := fmt.Sprintf("%s.%s.%s%s", strings.TrimSuffix(t.profile, ext), strings.ReplaceAll(column, "+", "-"), scenario, ext)
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	t.mu.Lock()
	t.profOut = f
	t.mu.Unlock()
	return nil
}

func (t *tracer) stopProfile() {
	t.mu.Lock()
	f := t.profOut
	t.profOut = nil
	t.mu.Unlock()
	if f == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		t.eventf("CPU profile: %v", err)
	}
}

// on reports whether a span is under way.
func (t *tracer) on() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.label != ""
}

// eventf writes one line of the timeline: the time since the span began, the span's
// label, the event. Nothing outside a span.
func (t *tracer) eventf(format string, args ...any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.label == "" || t.out == nil {
		return
	}
	_, _ = fmt.Fprintf(t.out, "%10.4fs  %s  %s\n", time.Since(t.start).Seconds(), t.label, fmt.Sprintf(format, args...))
}

// call traces a call to the provider: the returned function, called with the call's
// error when it returns, writes its start, duration and error. Outside a span it does
// nothing.
func (t *tracer) call(format string, args ...any) (done func(err error)) {
	if !t.on() {
		return func(error) {}
	}
	t.mu.Lock()
	began := time.Since(t.start)
	t.mu.Unlock()
	what := fmt.Sprintf(format, args...)
	return func(err error) {
		d := time.Since(t.start) - began
		if err != nil {
			t.eventf("%s: began at %.4fs, took %v: %v", what, began.Seconds(), d, err)
			return
		}
		t.eventf("%s: began at %.4fs, took %v", what, began.Seconds(), d)
	}
}

// watchNodes traces the Nodes' changes that decide whether the service controller
// includes them and where: creation, provider ID, taints, Ready, deletion.
func (t *tracer) watchNodes(informer cache.SharedIndexInformer) error {
	if t == nil {
		return nil
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok && t.on() {
				t.eventf("informer: Node %s added: %s", n.Name, nodeTraits(n))
			}
		},
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			if ok1 && ok2 && t.on() && nodeTraits(o) != nodeTraits(n) {
				t.eventf("informer: Node %s updated: %s", n.Name, nodeTraits(n))
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok && t.on() {
				t.eventf("informer: Node %s deleted", n.Name)
			}
		},
	})
	return err
}

// nodeTraits is what of a Node the timeline shows.
func nodeTraits(n *corev1.Node) string {
	var taints []string
	for _, tt := range n.Spec.Taints {
		taints = append(taints, tt.Key)
	}
	return fmt.Sprintf("providerID %q, taints %v, ready %v", n.Spec.ProviderID, taints, isReady(n))
}

// nodesInShort is a node set as a traced call shows it: how many, and how many of them
// have no provider ID yet.
func nodesInShort(nodes []*corev1.Node) string {
	without := 0
	for _, n := range nodes {
		if n.Spec.ProviderID == "" {
			without++
		}
	}
	return fmt.Sprintf("%d Nodes, %d without provider ID", len(nodes), without)
}
