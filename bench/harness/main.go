package harness

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/provider"
)

// config is what a run measures.
type config struct {
	nodes    int           // N
	services int           // S
	pageSize int           // the cloud's page size and ccmkit's cloudAPI.pageSize
	notReady int           // NotReady Nodes in P1_outage
	minutes  int           // virtual minutes simulated for P1
	latency  time.Duration // per cloud call in P3
	p3Subset int           // Nodes a peer's P3 pass is timed on
	qps      float64       // ccmkit's cloudAPI.qps
	quiet    time.Duration // how long the cloud sees no call before the controllers count as synced
	// nodeRepeats is how many times node_add and node_delete run; their seconds are the
	// median (a config of the tests, whose zero counts as 1; the flag refuses below 1).
	nodeRepeats int
	klog        bool    // keep the controllers' logs
	trace       *tracer // -trace, -cpuprofile; nil: none
	// noBaseline skips the baseline: its figures are zero and the report says so (the
	// sweep's sizes above -sweep-baseline-nodes).
	noBaseline bool
}

// repeats is cfg.nodeRepeats, at least 1.
func (c config) repeats() int { return max(c.nodeRepeats, 1) }

// Main is `make bench`: it parses the command line (see the bench command's doc), runs
// ccmkit, the baseline and peers side by side and prints the report, or with -sweep the
// cost curve of ccmkit and the baseline (the peers are not run there). It exits on an
// error.
func Main(peers ...Column) {
	var cfg config
	var jsonPath, sweepNodes, sweepDir, only, timeline, profile, traced string
	var sweepBaselineNodes int
	var sweepMode bool
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.StringVar(&jsonPath, "json", "", "also write the figures as JSON to `FILE`")
	fs.BoolVar(&sweepMode, "sweep", false, "run at each size of -sweep-nodes with a fifth as many Services (-nodes and -services are ignored), print each size's table and the cost curve, and write it to -sweep-dir")
	fs.StringVar(&sweepNodes, "sweep-nodes", defaultSweepNodes, "the sweep's sizes in Nodes, comma-separated, increasing")
	fs.IntVar(&sweepBaselineNodes, "sweep-baseline-nodes", defaultSweepBaselineNodes, "run the baseline only at the sweep's sizes up to `N` Nodes (0: at every size; at 20,000 Nodes, building its cluster and a Node added are 4,000 load balancer writes of 20,000 targets each, 16 times their several minutes at 5,000 Nodes)")
	fs.StringVar(&sweepDir, "sweep-dir", "docs/benchmarks", "the `DIR` -sweep writes "+sweepFile+" to (hack/benchplot draws the plots from it)")
	fs.IntVar(&cfg.nodes, "nodes", 5000, "Nodes (N)")
	fs.IntVar(&cfg.services, "services", 1000, "LoadBalancer Services (S)")
	fs.IntVar(&cfg.pageSize, "page-size", 500, "list page size of the fake cloud, and ccmkit's cloudAPI.pageSize")
	fs.IntVar(&cfg.notReady, "not-ready", -1, "NotReady Nodes in P1_outage; -1: a third of them (a zone)")
	fs.IntVar(&cfg.minutes, "minutes", 10, "virtual minutes simulated for P1 and P1_outage")
	fs.DurationVar(&cfg.latency, "latency", 100*time.Millisecond, "latency added to every cloud call in P3")
	fs.IntVar(&cfg.p3Subset, "p3-subset", 50, "Nodes a peer's P3 pass is timed on, then scaled to all Nodes (and at most the NotReady Nodes of P1_outage of a peer that waits in real time per call)")
	fs.Float64Var(&cfg.qps, "qps", math.Inf(1), "ccmkit's cloudAPI.qps (+Inf: cloudAPI.unlimited, no client-side limit, as the baseline has none; 0: ccmkit's default)")
	fs.IntVar(&cfg.nodeRepeats, "node-repeats", 1, "run node_add and node_delete `N` times and report the median of their seconds (their calls are the first time's)")
	fs.DurationVar(&cfg.quiet, "quiet", 500*time.Millisecond, "how long the cloud must see no call before the controllers count as synced")
	fs.BoolVar(&cfg.klog, "klog", false, "show the controllers' and the provider's logs on stderr")
	fs.StringVar(&timeline, "trace", "", "write to `FILE` the timeline of the scenarios of -trace-scenarios, each column's: every call the controllers make to the provider (start, duration, error; the Nodes it is given), the scenario's Node as the informers see it change (provider ID, taints, Ready), the cloud's calls by operation every 100 ms")
	fs.StringVar(&profile, "cpuprofile", "", "write a CPU profile of each scenario of -trace-scenarios in each column, to `FILE` with .column.scenario before its extension (go tool pprof reads it)")
	fs.StringVar(&traced, "trace-scenarios", strings.Join(traceScenarios, ","), "the scenarios -trace and -cpuprofile cover, comma-separated")
	fs.StringVar(&only, "peers", "", "run only these peer columns, comma-separated names (empty: every peer; \"none\": no peer)")
	_ = fs.Parse(os.Args[1:])
	peers, err := choosePeers(peers, only)
	if err == nil && cfg.nodeRepeats < 1 {
		err = fmt.Errorf("-node-repeats %d: node_add and node_delete run at least once", cfg.nodeRepeats)
	}
	if err == nil {
		cfg.trace, err = newTracer(timeline, profile, traced)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	err = runMain(cfg, peers, sweepMode, sweepNodes, sweepBaselineNodes, sweepDir, jsonPath)
	if cerr := cfg.trace.close(); cerr != nil && err == nil {
		err = fmt.Errorf("-trace: %w", cerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runMain is Main once the flags are parsed: the sweep, or one run, its table and JSON.
func runMain(cfg config, peers []Column, sweepMode bool, sweepNodes string, sweepBaselineNodes int, sweepDir, jsonPath string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if sweepMode {
		return runSweep(ctx, cfg, sweepNodes, sweepBaselineNodes, sweepDir)
	}
	rep, err := run(ctx, cfg, os.Stderr, peers)
	if err != nil {
		return err
	}
	rep.printTable(os.Stdout)
	if jsonPath != "" {
		return rep.writeJSON(jsonPath)
	}
	return nil
}

// choosePeers returns the peers named in only (comma-separated, in that order; empty: all
// of them; "none": none), or an error naming a name that is no peer's.
func choosePeers(peers []Column, only string) ([]Column, error) {
	if only == "" {
		return peers, nil
	}
	var names []string
	for _, p := range peers {
		names = append(names, p.Name())
	}
	var out []Column
	seen := map[string]bool{}
	for name := range strings.SplitSeq(only, ",") {
		name = strings.TrimSpace(name)
		i := slices.Index(names, name)
		switch {
		case name == "none":
		case i < 0:
			return nil, fmt.Errorf("-peers: %q is not a peer column (the peers: %s, or none)", name, strings.Join(names, ", "))
		case seen[name]:
			return nil, fmt.Errorf("-peers: %q is named twice", name)
		default:
			seen[name] = true
			out = append(out, peers[i])
		}
	}
	return out, nil
}

// runSweep is -sweep: the side-by-side at each size, then the cost curve on stdout and
// in dir.
func runSweep(ctx context.Context, cfg config, nodes string, baselineNodes int, dir string) error {
	sizes, err := parseSweepNodes(nodes)
	if err != nil {
		return err
	}
	sr, err := sweep(ctx, cfg, sizes, baselineNodes, dir, os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	sr.print(os.Stdout)
	return nil
}

// smallConfig is the whole benchmark at a size that runs in seconds.
func smallConfig() config {
	return config{
		nodes: 60, services: 12, pageSize: 10, notReady: -1, minutes: 2,
		latency: 5 * time.Millisecond, p3Subset: 20, qps: math.Inf(1), quiet: 100 * time.Millisecond,
		nodeRepeats: 2, // a repetition puts the world back as each one found it
	}
}

// SmallServices is how many Services RunSmall's cluster has.
const SmallServices = 6

// RunSmall runs every measurement of ccmkit, the baseline and peer at a size that runs in
// a minute (30 Nodes, SmallServices Services, page size 10, 2 virtual minutes, 5 Nodes in
// a peer's subsets), for the peer's test t, which fails if the run does; the run's log
// goes to t when t fails. It returns the figures as the JSON report has them (by figure
// key, each column's value under its name, and the unit, goal and note), value, the
// peer's value of a figure, failing t when the report has no such figure, and the log.
func RunSmall(t testing.TB, peer Column) (figures map[string]map[string]any, value func(key string) any, log string) {
	t.Helper()
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	cfg := smallConfig()
	cfg.nodes, cfg.services, cfg.p3Subset, cfg.quiet = 30, SmallServices, 5, 300*time.Millisecond
	rep, err := run(context.Background(), cfg, &logs, []Column{peer})
	if err != nil {
		t.Fatalf("the small run: %v", err)
	}
	figures = rep.jsonFigures()
	value = func(key string) any {
		t.Helper()
		f, ok := figures[key]
		if !ok {
			t.Fatalf("the report has no figure %s", key)
		}
		return f[peer.Name()]
	}
	return figures, value, logs.String()
}

// run measures ccmkit, the baseline and the peers and returns the report; progress goes
// to stderr.
func run(ctx context.Context, cfg config, stderr io.Writer, peers []Column) (*report, error) {
	if cfg.notReady < 0 {
		cfg.notReady = ceilDiv(cfg.nodes, 3)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !cfg.klog {
		silenceKlog()
	}
	log := &progress{w: stderr, start: time.Now()}
	columns := append([]Column{fakeColumn{kind: kindCcmkit}, fakeColumn{kind: kindBaseline}}, peers...)
	results := make([]*result, len(columns))
	ran := make([]bool, len(columns))
	for i, col := range columns {
		if col.Name() == string(kindBaseline) && cfg.noBaseline {
			log.printf("baseline: not run at this size")
			results[i] = &result{}
			continue
		}
		r, err := measure(ctx, cfg, col, log)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			if err := measureGroups(ctx, cfg, r, log); err != nil {
				return nil, err
			}
		}
		results[i], ran[i] = r, true
	}
	log.printf("done")
	return newReport(cfg, columns, results, ran), nil
}

// cloudConfig is what a column's cloud is built for at this size.
func (c config) cloudConfig() CloudConfig {
	api := provider.CloudAPIConfig{PageSize: c.pageSize, QPS: c.qps}
	if math.IsInf(api.QPS, 1) {
		api.QPS, api.Unlimited = 0, true // -qps +Inf: no client-side limit
	}
	return CloudConfig{Nodes: c.nodes, PageSize: c.pageSize, CloudAPI: api}
}

func (c config) validate() error {
	var errs []error
	if c.nodes < 1 || c.services < 1 || c.pageSize < 1 {
		errs = append(errs, errors.New("-nodes, -services and -page-size must be at least 1"))
	}
	if c.notReady > c.nodes {
		errs = append(errs, fmt.Errorf("-not-ready %d is more than -nodes %d", c.notReady, c.nodes))
	}
	if c.minutes < 1 {
		errs = append(errs, errors.New("-minutes must be at least 1"))
	}
	if c.p3Subset < 1 {
		errs = append(errs, errors.New("-p3-subset must be at least 1"))
	}
	if c.quiet <= 0 {
		errs = append(errs, errors.New("-quiet must be positive"))
	}
	if c.qps < 0 {
		errs = append(errs, errors.New("-qps must not be negative"))
	}
	return errors.Join(errs...)
}

// silenceKlog drops the controllers' logs: the route controller alone logs a line per
// Node per reconcile.
func silenceKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// progress prints timestamped progress lines.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = fmt.Fprintf(p.w, "bench %7.1fs  %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}
