package harness

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// result is every figure of one provider.
type result struct {
	p1, p1Outage        float64 // cloud calls per virtual minute
	p1Calls, p1OutCalls Calls
	p1KubeWrites        int64
	p2EnsureReads       int64
	p2EnsureWrites      int64
	p2UpdateWrites      int64
	p3                  float64 // seconds
	p3Note              string  // how P3 was obtained when not measured directly
	p1OutageNote        string  // how P1_outage was obtained when not measured directly
	p3NoLatency         float64 // seconds, the same pass without latency
	p3Patches           int64   // Node writes by the passes over all Nodes
	p4Reads, p4Writes   int64
	p4Calls             Calls
	p5                  float64 // MB (10^6 bytes)
	p6NsPerOp           float64
	p6AllocsPerOp       float64
	p6CPUNsPerOp        float64 // the process's CPU time per op of P6 (processCPU)
	p6SortedNsPerOp     float64 // the same with the Nodes sorted by name
	p2SettingsCalls     int64   // cloud calls of a converged EnsureLoadBalancer of settingsService
	p6SettingsNsPerOp   float64 // P6 of settingsService
	p6SettingsAllocs    float64
	settingsRefused     string // the provider's error for settingsService; its figures are n/a
	nodeAddWrites       int64
	nodeAddSeconds      float64
	nodeAddRuns         []float64 // the seconds of each run, in order (nodeAddSeconds is their median)
	nodeAddLBs          int       // load balancers that have the new Node's instance at the end
	nodeAddCalls        Calls
	nodeAddKubeWrites   int64
	nodeDeleteWrites    int64
	nodeDeleteSeconds   float64
	nodeDeleteRuns      []float64 // the seconds of each run, in order (nodeDeleteSeconds is their median)
	nodeDeleteLBs       int       // load balancers that still have the deleted Node's instance at the end
	nodeDeleteCalls     Calls
	setup, total        time.Duration

	// node_add_groups, ccmkit's only (measureGroups); groups says it was measured.
	groups                   bool
	nodeAddGroupsCalls       Calls
	nodeAddGroupsSeconds     float64
	nodeAddGroupsLBs         int // load balancers that reach the new Node's instance at the end
	groupedLBs, groupsBefore int // load balancers that name a target group, and groups, before the Node
	groupsSetup, groupsTotal time.Duration
}

// measure builds col's world and takes every figure in turn.
func measure(ctx context.Context, cfg config, col Column, log *progress) (*result, error) {
	start := time.Now()
	k := col.Name()
	log.printf("%s: building the converged cluster: %d Nodes, %d Services, page size %d", k, cfg.nodes, cfg.services, cfg.pageSize)
	w, err := newWorld(ctx, cfg, col, log)
	if err != nil {
		return nil, fmt.Errorf("%s: setting up: %w", k, err)
	}
	r := &result{setup: time.Since(start)}
	steps := []struct {
		name string
		run  func(context.Context, *world, *result, *progress) error
	}{
		{"P4, P2, P6, P5 (restart)", restart},
		{"P1 (quiet cluster)", quiet},
		{"P1_outage", outage},
		{"P3 (node status pass)", statusPass},
		{"node_add", nodeAdd},
		{"node_delete", nodeDelete},
	}
	for _, s := range steps {
		log.printf("%s: %s", k, s.name)
		if err := s.run(ctx, w, r, log); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", k, s.name, err)
		}
	}
	r.total = time.Since(start)
	return r, nil
}

// restart measures P4: a new provider and new controllers over the converged cluster,
// every cloud call until each controller has synced everything once; then, on that
// provider alone, P2 and P6; then P5, the heap the provider retains.
func restart(ctx context.Context, w *world, r *result, log *progress) error {
	before := w.cloud.Calls()
	s, err := w.start(ctx, newKube(w.nodes, 0), parts{nodeController: true, lifecycle: true, service: true})
	if err != nil {
		return err
	}
	if err := s.gate.pass(ctx); err != nil {
		s.stop()
		return err
	}
	n := int64(len(w.nodes))
	if err := waitFor(ctx, func() bool { return s.obs.metadata.Load() >= n }); err != nil {
		s.stop()
		return fmt.Errorf("waiting for the node status pass: %w", err)
	}
	if err := s.waitSynced(ctx, true); err != nil {
		s.stop()
		return err
	}
	r.p4Calls = w.cloud.Calls().Sub(before)
	r.p4Reads, r.p4Writes = r.p4Calls.Reads(), r.p4Calls.Writes()
	log.printf("%s: P4 restart: %d reads, %d writes %v; %d kube writes", w.name, r.p4Reads, r.p4Writes, r.p4Calls, s.kube.writes.Load())
	p, k := s.provider, s.kube
	s.stop()
	s = nil // the stopped session refers to the provider: P5 must see only p
	// The provider holds the session's client (Initialize) as a CCM's holds its client of
	// the API server, which is no part of the provider's heap: keep it alive past P5.
	defer runtime.KeepAlive(k)

	if err := converged(ctx, w, p, r, log); err != nil {
		return err
	}
	r.p5 = retainedMB(&p)
	log.printf("%s: P5 retained heap: %.2f MB", w.name, r.p5)
	return nil
}

// converged measures P2 and P6 on a provider that has synced the cluster.
func converged(ctx context.Context, w *world, p cloudprovider.Interface, r *result, log *progress) error {
	lb, ok := p.LoadBalancer()
	if !ok {
		return fmt.Errorf("the provider offers no LoadBalancer")
	}
	svc := w.services[0]
	// The service controller passes the Nodes in its lister's order, which is a map's:
	// shuffle them (with a fixed seed), or sorting the targets would cost nothing.
	nodes := slices.Clone(w.nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	before := w.cloud.Calls()
	if _, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
		return fmt.Errorf("P2 EnsureLoadBalancer: %w", err)
	}
	d := w.cloud.Calls().Sub(before)
	r.p2EnsureReads, r.p2EnsureWrites = d.Reads(), d.Writes()
	before = w.cloud.Calls()
	if err := lb.UpdateLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
		return fmt.Errorf("P2 UpdateLoadBalancer: %w", err)
	}
	r.p2UpdateWrites = w.cloud.Calls().Sub(before).Writes()
	log.printf("%s: P2 converged EnsureLoadBalancer: %d reads, %d writes; UpdateLoadBalancer: %d writes", w.name, r.p2EnsureReads, r.p2EnsureWrites, r.p2UpdateWrites)

	res, cpu, err := benchmarkEnsure(ctx, lb, svc, nodes)
	if err != nil {
		return fmt.Errorf("P6 EnsureLoadBalancer: %w", err)
	}
	r.p6NsPerOp, r.p6AllocsPerOp, r.p6CPUNsPerOp = float64(res.NsPerOp()), float64(res.AllocsPerOp()), float64(cpu.Nanoseconds())
	log.printf("%s: P6 converged EnsureLoadBalancer with %d Nodes in lister order: %s, %v CPU/op", w.name, len(nodes), res.String()+res.MemString(), cpu)
	res, _, err = benchmarkEnsure(ctx, lb, svc, w.nodes)
	if err != nil {
		return fmt.Errorf("P6 EnsureLoadBalancer: %w", err)
	}
	r.p6SortedNsPerOp = float64(res.NsPerOp())
	log.printf("%s: P6 converged EnsureLoadBalancer with %d Nodes sorted by name: %s", w.name, len(w.nodes), res.String()+res.MemString())
	return convergedSettings(ctx, w, lb, nodes, r, log)
}

// convergedSettings measures P2 and P6 of settingsService: it creates its load balancer,
// counts the calls of the next EnsureLoadBalancer, benchmarks it, and deletes the load
// balancer again.
func convergedSettings(ctx context.Context, w *world, lb cloudprovider.LoadBalancer, nodes []*corev1.Node, r *result, log *progress) error {
	svc := settingsService()
	if _, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
		if w.name == string(kindCcmkit) {
			return fmt.Errorf("creating the load balancer of a Service with every setting: %w", err)
		}
		// A peer that does not support a setting (session affinity, say) refuses the
		// Service: its figures read n/a and the report quotes its error.
		r.settingsRefused = err.Error()
		log.printf("%s: P2, P6 with every setting: the provider refuses the Service: %v", w.name, err)
		return nil
	}
	if c, ok := w.cloud.(*fakeCloud); ok && c.col.kind == kindCcmkit {
		if err := c.checkSettings(svc); err != nil {
			return err
		}
	}
	before := w.cloud.Calls()
	if _, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
		return fmt.Errorf("P2 EnsureLoadBalancer with every setting: %w", err)
	}
	r.p2SettingsCalls = w.cloud.Calls().Sub(before).Total()
	res, _, err := benchmarkEnsure(ctx, lb, svc, nodes)
	if err != nil {
		return fmt.Errorf("P6 EnsureLoadBalancer with every setting: %w", err)
	}
	r.p6SettingsNsPerOp, r.p6SettingsAllocs = float64(res.NsPerOp()), float64(res.AllocsPerOp())
	log.printf("%s: P2, P6 converged EnsureLoadBalancer with every setting: %d calls; %s", w.name, r.p2SettingsCalls, res.String()+res.MemString())
	if err := lb.EnsureLoadBalancerDeleted(ctx, clusterName, svc); err != nil {
		return fmt.Errorf("deleting the load balancer of a Service with every setting: %w", err)
	}
	return nil
}

// benchmarkEnsure runs EnsureLoadBalancer of a converged Service under testing.Benchmark.
// Besides the benchmark's result it returns the process's CPU time (user and system, see
// processCPU) per call over the benchmark's last, longest round: the controllers are
// stopped, so that is the call's own CPU and the garbage collection it causes.
func benchmarkEnsure(ctx context.Context, lb cloudprovider.LoadBalancer, svc *corev1.Service, nodes []*corev1.Node) (testing.BenchmarkResult, time.Duration, error) {
	var benchErr error
	var cpuPerOp time.Duration
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		start, ops := processCPU(), 0
		for b.Loop() {
			if _, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
				benchErr = err
				b.FailNow()
			}
			ops++
		}
		if ops > 0 {
			cpuPerOp = (processCPU() - start) / time.Duration(ops)
		}
	})
	return res, cpuPerOp, benchErr
}

// retainedMB returns the heap that only *p keeps alive: the heap after a GC with the
// provider, minus the heap after a GC without it. The fake cloud, the world's objects and
// everything else stay referenced by the caller; the controllers have been stopped.
func retainedMB(p *cloudprovider.Interface) float64 {
	with := heapAfterGC()
	runtime.KeepAlive(*p)
	*p = nil
	without := heapAfterGC()
	return float64(int64(with)-int64(without)) / 1e6
}

// collectGarbage runs a garbage collection before a timed window, as a Go benchmark does
// before its runs: the garbage of the controllers' start (informer lists, the service
// controller's first sync) is then not collected inside the window, in whichever column
// happens to cross the collector's threshold there. What the window allocates itself is
// still collected in it, at its own cost.
func collectGarbage() { runtime.GC() }

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// quiet measures P1 with every Node Ready.
func quiet(ctx context.Context, w *world, r *result, log *progress) error {
	calls, _, writes, err := simulate(ctx, w, 0, log)
	if err != nil {
		return err
	}
	r.p1Calls, r.p1KubeWrites = calls, writes
	r.p1 = float64(calls.Total()) / float64(w.cfg.minutes)
	log.printf("%s: P1 %.1f calls/min %v; %d kube writes", w.name, r.p1, calls, writes)
	return nil
}

// outage measures P1_outage: the same with a zone's Nodes NotReady.
func outage(ctx context.Context, w *world, r *result, log *progress) error {
	notReady := w.cfg.notReady
	if rt, ok := w.col.(RealTimer); ok {
		notReady = min(notReady, realTimeSubset(w.cfg, rt))
	}
	calls, monitor, writes, err := simulate(ctx, w, notReady, log)
	if err != nil {
		return err
	}
	if notReady < w.cfg.notReady {
		// MonitorNodes asks the cloud about each NotReady Node: its calls scale with them.
		scale := float64(w.cfg.notReady) / float64(notReady)
		for op, n := range monitor {
			calls[op] += int64(math.Round(float64(n)*scale)) - n
		}
		r.p1OutageNote = fmt.Sprintf("extrapolated: %d of %d Nodes NotReady, the MonitorNodes passes' %d calls scaled linearly to %d", notReady, w.cfg.notReady, monitor.Total(), int64(math.Round(float64(monitor.Total())*scale)))
	}
	r.p1OutCalls = calls
	r.p1Outage = float64(calls.Total()) / float64(w.cfg.minutes)
	log.printf("%s: P1_outage %.1f calls/min %v; %d kube writes", w.name, r.p1Outage, calls, writes)
	return nil
}

// realTimeSubset is how many NotReady Nodes P1_outage has for a column that waits in real
// time per call: -p3-subset, or fewer, as many as one MonitorNodes pass (two calls per
// NotReady Node) asks about in a second of wall time, so that its 120 passes of 10
// virtual minutes take minutes.
func realTimeSubset(cfg config, rt RealTimer) int {
	perPass := int(time.Second / (2 * max(rt.WaitsPerCall(), time.Millisecond)))
	return max(1, min(cfg.p3Subset, perPass))
}

// simulate runs the controllers' periodic passes over cfg.minutes of virtual time at the
// upstream default periods, in time order, moving the provider's clock to each pass's
// time: the cloud node controller's UpdateNodeStatus every 5 min, the node lifecycle
// controller's MonitorNodes every 5 s and a route reconcile every 10 s, each first at
// time 0. The service controller runs and has synced before; nothing changes a Service.
// It returns the cloud calls of the passes, those of the MonitorNodes passes among them,
// and the Kubernetes writes.
func simulate(ctx context.Context, w *world, notReady int, log *progress) (all, monitor Calls, writes int64, err error) {
	s, err := w.start(ctx, newKube(w.nodes, notReady), parts{service: true})
	if err != nil {
		return nil, nil, 0, err
	}
	defer s.stop()
	if err := s.waitSynced(ctx, true); err != nil {
		return nil, nil, 0, err
	}
	type ticker struct {
		period time.Duration
		next   time.Duration
		pass   func() error
	}
	monitor = Calls{}
	tickers := []*ticker{
		{period: nodeStatusUpdateFrequency, pass: func() error { return s.node.UpdateNodeStatus(s.ctx) }},
		{period: nodeMonitorPeriod, pass: func() error {
			before := w.cloud.Calls()
			s.life.MonitorNodes(s.ctx)
			for op, n := range w.cloud.Calls().Sub(before) {
				monitor[op] += n
			}
			return nil
		}},
		{period: routeReconcilePeriod, pass: func() error { return s.gate.pass(s.ctx) }},
	}
	window := time.Duration(w.cfg.minutes) * time.Minute
	origin := w.clock.Now()
	before, writesBefore := w.cloud.Calls(), s.kube.writes.Load()
	lastMinute := time.Duration(-1)
	for {
		t := slices.MinFunc(tickers, func(a, b *ticker) int { return int(a.next - b.next) }).next
		if t >= window {
			break
		}
		w.clock.SetTime(origin.Add(t))
		for _, tk := range tickers {
			if tk.next == t {
				if err := tk.pass(); err != nil {
					return nil, nil, 0, err
				}
				tk.next += tk.period
			}
		}
		if m := t.Truncate(time.Minute); m != lastMinute && m > 0 {
			lastMinute = m
			log.printf("%s: virtual %v: %d calls so far", w.name, m, w.cloud.Calls().Sub(before).Total())
		}
	}
	w.clock.SetTime(origin.Add(window))
	return w.cloud.Calls().Sub(before), monitor, s.kube.writes.Load() - writesBefore, nil
}

// statusPass measures P3: the wall time of one UpdateNodeStatus over every Node with
// cfg.latency added to each cloud call, on a snapshot as old as the pass period; and the
// same pass without latency, with the Node writes it made. A peer's pass over many
// Nodes at that latency takes Nodes × latency, so a peer's (every column but ccmkit's) is
// timed on cfg.p3Subset Nodes and scaled linearly.
func statusPass(ctx context.Context, w *world, r *result, log *progress) error {
	k := newKube(w.nodes, 0)
	s, err := w.start(ctx, k, parts{})
	if err != nil {
		return err
	}
	defer s.stop()

	w.cloud.SetLatency(0)
	start := time.Now()
	if err := s.node.UpdateNodeStatus(ctx); err != nil {
		return err
	}
	r.p3NoLatency = time.Since(start).Seconds()
	r.p3Patches = k.writes.Load()
	log.printf("%s: P3 pass without latency: %.4fs, %d Node writes", w.name, r.p3NoLatency, r.p3Patches)

	passNodes := w.nodes
	if !w.ccmkit() && w.cfg.p3Subset < len(w.nodes) {
		passNodes = w.nodes[:w.cfg.p3Subset]
	}
	sub := s
	if len(passNodes) < len(w.nodes) {
		if sub, err = w.start(ctx, newKube(passNodes, 0), parts{}); err != nil {
			return err
		}
		defer sub.stop()
	}
	w.clock.Step(nodeStatusUpdateFrequency)
	w.cloud.SetLatency(w.cfg.latency)
	defer w.cloud.SetLatency(0)
	before := w.cloud.Calls()
	start = time.Now()
	if err := sub.node.UpdateNodeStatus(ctx); err != nil {
		return err
	}
	elapsed := time.Since(start).Seconds()
	calls := w.cloud.Calls().Sub(before).Total()
	r.p3 = elapsed
	if len(passNodes) < len(w.nodes) {
		r.p3 = elapsed * float64(len(w.nodes)) / float64(len(passNodes))
		r.p3Note = fmt.Sprintf("extrapolated: %.2fs measured over %d of %d Nodes (%d calls), scaled linearly", elapsed, len(passNodes), len(w.nodes), calls)
	}
	log.printf("%s: P3 pass with %v per call over %d Nodes: %.2fs, %d cloud calls", w.name, w.cfg.latency, len(passNodes), elapsed, calls)
	return nil
}

// nodeAdd measures node_add (addNode) cfg.nodeRepeats times: the cloud writes, the time
// until every load balancer has the new instance (the median of the repetitions), and the
// load balancers that have it at the end. Before each repetition but the first, the
// instance the last one added leaves the cloud; the next one's controllers start on the
// world's Nodes and take it out of every load balancer before it is added again. The
// calls, the writes and the load balancers are the first repetition's (each one's are in
// the progress log: a provider may make more writes one time than another).
func nodeAdd(ctx context.Context, w *world, r *result, log *progress) error {
	i := len(w.nodes)
	runs, err := repeated(w.cfg.repeats(), func() error { return w.cloud.RemoveInstance(i) }, func(rep int) (float64, error) {
		a, err := addNode(ctx, w, "node_add")
		if err != nil {
			return 0, err
		}
		writes := a.calls.Writes()
		log.printf("%s: node_add %d of %d: %d cloud writes in %.2fs %v; %d of %d load balancers have %s; %d kube writes",
			w.name, rep+1, w.cfg.repeats(), writes, a.seconds, a.calls, a.lbs, len(w.services), a.instance, a.kubeWrites)
		if rep == 0 {
			r.nodeAddCalls, r.nodeAddLBs, r.nodeAddKubeWrites, r.nodeAddWrites = a.calls, a.lbs, a.kubeWrites, writes
		}
		return a.seconds, nil
	})
	r.nodeAddRuns, r.nodeAddSeconds = runs, median(runs)
	return err
}

// repeated runs run n times (rep 0 to n-1), restore before each run but the first, and
// returns the seconds the runs return, in order.
func repeated(n int, restore func() error, run func(rep int) (seconds float64, err error)) ([]float64, error) {
	var seconds []float64
	for rep := range n {
		if rep > 0 {
			if err := restore(); err != nil {
				return nil, err
			}
		}
		s, err := run(rep)
		if err != nil {
			return nil, err
		}
		seconds = append(seconds, s)
	}
	return seconds, nil
}

// median returns the median of xs (the mean of the middle two of an even count; 0 for
// none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// nodeDelete measures node_delete: with the service controller running and synced, the
// world's last instance is deleted in the cloud and its Node goes NotReady (its kubelet
// stopped with it); the node lifecycle controller's passes, every 5 s of virtual time, find
// the instance gone and delete the Node, and the service controller takes it out of every
// load balancer. It counts the cloud calls from the instance's deletion until the cloud is
// quiet, times the Node's NotReady until every load balancer was written without the
// instance, and counts the load balancers that still have it at the end.
//
// It runs cfg.nodeRepeats times, with the median time: before each repetition but the first,
// the instance is back in the cloud, and the next one's controllers start on the world's
// Nodes and put it back into every load balancer before it is deleted again. The calls,
// the writes and the load balancers are the first repetition's, as in nodeAdd.
func nodeDelete(ctx context.Context, w *world, r *result, log *progress) error {
	i := len(w.nodes) - 1
	runs, err := repeated(w.cfg.repeats(), func() error { return w.cloud.AddInstance(i) }, func(rep int) (float64, error) {
		d, err := deleteNode(ctx, w, i)
		if err != nil {
			return 0, err
		}
		writes := d.calls.Writes()
		log.printf("%s: node_delete %d of %d: %d cloud writes in %.2fs %v; %d of %d load balancers still have %s",
			w.name, rep+1, w.cfg.repeats(), writes, d.seconds, d.calls, d.lbs, len(w.services), w.cloud.ProviderID(i))
		if rep == 0 {
			r.nodeDeleteCalls, r.nodeDeleteLBs, r.nodeDeleteWrites = d.calls, d.lbs, writes
		}
		return d.seconds, nil
	})
	r.nodeDeleteRuns, r.nodeDeleteSeconds = runs, median(runs)
	return err
}

// nodeDeleted is what deleteNode found.
type nodeDeleted struct {
	calls   Calls   // every cloud call from the instance's deletion until the cloud is quiet
	seconds float64 // from the Node's NotReady until every load balancer was written without it
	lbs     int     // the cluster's load balancers that still reach the instance at the end
}

// deleteNode runs node_delete once, on the world's instance i.
func deleteNode(ctx context.Context, w *world, i int) (*nodeDeleted, error) {
	k := newKube(w.nodes, 0)
	s, err := w.start(ctx, k, parts{service: true, lifecycleOnce: true})
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.waitSynced(ctx, true); err != nil {
		return nil, err
	}
	done := w.cloud.Watch(i, len(w.services), true)
	collectGarbage()
	before := w.cloud.Calls()
	endTrace := w.cfg.trace.begin(w, "node_delete")
	defer endTrace()
	w.cfg.trace.eventf("deleting instance %s", w.cloud.ProviderID(i))
	if err := w.cloud.RemoveInstance(i); err != nil {
		return nil, err
	}
	name := w.nodes[i].Name
	n, err := k.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for j := range n.Status.Conditions {
		if c := &n.Status.Conditions[j]; c.Type == corev1.NodeReady {
			c.Status, c.Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		}
	}
	seen, err := s.seeNotReady(ctx, name)
	if err != nil {
		return nil, err
	}
	w.cfg.trace.eventf("Node %s NotReady", name)
	start := time.Now()
	if _, err := k.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	if err := waitOn(ctx, seen); err != nil {
		return nil, fmt.Errorf("waiting for the informer to see Node %s NotReady: %w", name, err)
	}
	deleted := false
	for pass := 0; pass < 120 && !deleted; pass++ { // 10 virtual minutes
		s.life.MonitorNodes(s.ctx)
		_, err := k.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			deleted = true
		case err != nil:
			return nil, err
		default:
			w.clock.Step(nodeMonitorPeriod)
		}
	}
	if !deleted {
		return nil, fmt.Errorf("the Node %s of the deleted instance %s is still there after 10 virtual minutes of the lifecycle controller", name, w.cloud.ProviderID(i))
	}
	if err := waitOn(ctx, done); err != nil {
		return nil, fmt.Errorf("the deleted Node left only some load balancers: %w", err)
	}
	d := &nodeDeleted{seconds: time.Since(start).Seconds()}
	w.cfg.trace.eventf("every load balancer was written without %s", w.cloud.ProviderID(i))
	if err := w.waitQuiet(ctx); err != nil {
		return nil, err
	}
	w.cfg.trace.eventf("the cloud is quiet")
	d.calls = w.cloud.Calls().Sub(before)
	if d.lbs, err = w.cloud.Reaching(i); err != nil {
		return nil, err
	}
	return d, nil
}

// isReady reports whether the Node's Ready condition is True.
func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// measureGroups measures node_add_groups into r, ccmkit's result: it builds ccmkit's world
// again over a fake cloud with target groups, so that the load balancers are created in
// their groups, and adds a Node as nodeAdd does.
func measureGroups(ctx context.Context, cfg config, r *result, log *progress) error {
	col := fakeColumn{kind: kindCcmkitGroups}
	k := col.Name()
	start := time.Now()
	log.printf("%s: building the converged cluster: %d Nodes, %d Services, page size %d, target groups", k, cfg.nodes, cfg.services, cfg.pageSize)
	w, err := newWorld(ctx, cfg, col, log)
	if err != nil {
		return fmt.Errorf("%s: setting up: %w", k, err)
	}
	inv := w.cloud.(*fakeCloud).cloud.Inventory()
	r.groupsSetup = time.Since(start)
	r.groupsBefore = len(inv.TargetGroups)
	for _, lb := range inv.LoadBalancers {
		if lb.Spec.TargetGroup != "" {
			r.groupedLBs++
		}
	}
	log.printf("%s: %d of %d load balancers name one of %d target groups", k, r.groupedLBs, len(inv.LoadBalancers), r.groupsBefore)
	log.printf("%s: node_add_groups", k)
	a, err := addNode(ctx, w, "node_add_groups")
	if err != nil {
		return fmt.Errorf("%s: node_add_groups: %w", k, err)
	}
	r.groups, r.nodeAddGroupsCalls, r.nodeAddGroupsSeconds, r.nodeAddGroupsLBs = true, a.calls, a.seconds, a.lbs
	log.printf("%s: node_add_groups: %d cloud calls in %.2fs %v; %d of %d load balancers reach %s; %d kube writes",
		k, a.calls.Total(), a.seconds, a.calls, a.lbs, len(w.services), a.instance, a.kubeWrites)
	r.groupsTotal = time.Since(start)
	return nil
}

// nodeAdded is what addNode found.
type nodeAdded struct {
	instance   string  // the new instance's provider ID
	calls      Calls   // every cloud call from the Node's creation until the cloud is quiet
	seconds    float64 // from the Node's creation until every load balancer reaches it
	lbs        int     // the cluster's load balancers that reach the instance at the end
	kubeWrites int64
}

// addNode runs node_add in w: with the cloud node and service controllers running and
// synced, a new instance appears and its kubelet registers a Node (cloud taint, no provider
// ID); the cloud node controller initializes it and the service controller adds it to
// every load balancer, or to the target groups they name. It counts the cloud calls until
// the cloud is quiet and times the Node's creation until every load balancer reaches the
// instance (through its own targets or its group's, as the tap sees the writes), then
// counts the cloud's load balancers that reach it. scenario names it for -trace.
func addNode(ctx context.Context, w *world, scenario string) (*nodeAdded, error) {
	k := newKube(w.nodes, 0)
	s, err := w.start(ctx, k, parts{nodeController: true, service: true})
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.waitSynced(ctx, true); err != nil {
		return nil, err
	}
	i := len(w.nodes)
	if err := w.cloud.AddInstance(i); err != nil {
		return nil, err
	}
	// The kubelet registers the Node a moment after the instance appeared, later than the
	// provider's last instance list (the node controller's status pass at start): move the
	// provider's clock on as real time would, or a lookup by name would trust that list.
	w.clock.Step(time.Second)
	done := w.cloud.Watch(i, len(w.services), false)
	collectGarbage()
	before, writesBefore := w.cloud.Calls(), k.writes.Load()
	endTrace := w.cfg.trace.begin(w, scenario)
	defer endTrace()
	w.cfg.trace.eventf("creating Node %s", w.cloud.NodeName(i))
	start := time.Now()
	if _, err := k.CoreV1().Nodes().Create(ctx, w.registeredNode(i), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := waitOn(ctx, done); err != nil {
		return nil, fmt.Errorf("the new Node reached only some load balancers: %w", err)
	}
	a := &nodeAdded{instance: w.cloud.ProviderID(i), seconds: time.Since(start).Seconds()}
	w.cfg.trace.eventf("every load balancer reaches %s", a.instance)
	if err := w.waitQuiet(ctx); err != nil {
		return nil, err
	}
	w.cfg.trace.eventf("the cloud is quiet")
	a.calls = w.cloud.Calls().Sub(before)
	a.kubeWrites = k.writes.Load() - writesBefore
	if a.lbs, err = w.cloud.Reaching(i); err != nil {
		return nil, err
	}
	return a, nil
}
