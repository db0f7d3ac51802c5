package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2/textlogger"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/examples/restcloud/server"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Defaults of the flags.
const (
	// DefaultListen is where the API listens without --listen.
	DefaultListen = "127.0.0.1:8080"
	// ShutdownTimeout is how long a stopping server waits for the requests under way.
	ShutdownTimeout = 10 * time.Second
)

// Exit codes of run.
const (
	exitOK       = 0
	exitFailed   = 1 // the server could not start or serve
	exitBadUsage = 2 // a bad flag or cloud config
)

// options are the command's flags.
type options struct {
	cloudConfig string
	stateFile   string
	listen      string
	debugListen string
	tokenFile   string
	faults      faultOptions
}

// faultOptions are the --fault-* flags: what the fault injector in front of the cloud does.
type faultOptions struct {
	seed                                   int64
	errorRate, throttleRate, lostWriteRate float64
	retryAfter                             time.Duration
	qps                                    float64
	burst                                  int
}

// parseFlags reads args into options and checks them, reporting every problem at once.
func parseFlags(args []string, usage io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("restcloud-server", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&o.cloudConfig, "cloud-config", "", "a cloud config whose fake: section seeds the cloud (required)")
	fs.StringVar(&o.stateFile, "state-file", "", "keep the cloud in this file (fake.Open); overrides the fake: section's stateFile")
	fs.StringVar(&o.listen, "listen", DefaultListen, "address the API listens on")
	fs.StringVar(&o.debugListen, "debug-listen", "", "address of the debug endpoints /debug/calls, /debug/history, /debug/inventory (off when empty; keep it on localhost)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token requests must carry (none: any token is accepted)")
	fs.Int64Var(&o.faults.seed, "fault-seed", 1, "seed of the injected faults")
	fs.Float64Var(&o.faults.errorRate, "fault-error-rate", 0, "share of calls answered 503 without reaching the cloud, from 0 to 1")
	fs.Float64Var(&o.faults.throttleRate, "fault-throttle-rate", 0, "share of calls answered 429 with Retry-After, from 0 to 1")
	fs.DurationVar(&o.faults.retryAfter, "fault-retry-after", faultinject.DefaultThrottleRetryAfter, "Retry-After of the injected 429s (whole seconds on the wire)")
	fs.Float64Var(&o.faults.lostWriteRate, "fault-lost-write-rate", 0, "share of writes applied, then answered 503 (a lost answer), from 0 to 1")
	fs.Float64Var(&o.faults.qps, "fault-qps", 0, "token bucket over all calls: tokens per second (0: no limit)")
	fs.IntVar(&o.faults.burst, "fault-burst", 10, "token bucket over all calls: its size")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	return o, o.validate()
}

// validate reports every problem of the flags.
func (o options) validate() error {
	var errs []error
	if o.cloudConfig == "" {
		errs = append(errs, errors.New("--cloud-config: required (a cloud config with a fake: section)"))
	}
	if o.listen == "" {
		errs = append(errs, errors.New("--listen: required"))
	}
	if err := o.faults.config().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--fault-*: %w", err))
	}
	return errors.Join(errs...)
}

// config is the fault injector's configuration: the rules in the order lost writes (only
// on writes), throttling, errors.
func (f faultOptions) config() faultinject.Config {
	cfg := faultinject.Config{Seed: f.seed, ThrottleRetryAfter: f.retryAfter}
	var writes []cloudapi.Operation
	for _, op := range cloudapi.Operations() {
		if op.IsWrite() {
			writes = append(writes, op)
		}
	}
	for _, r := range []faultinject.Rule{
		{Ops: writes, Probability: f.lostWriteRate, Kind: faultinject.Ambiguous},
		{Probability: f.throttleRate, Kind: faultinject.Throttle},
		{Probability: f.errorRate, Kind: faultinject.Transient},
	} {
		if r.Probability != 0 {
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	if f.qps != 0 {
		cfg.RateLimit = &faultinject.RateLimit{QPS: f.qps, Burst: f.burst}
	}
	return cfg
}

// readCloudConfig reads the fake: section of the cloud config file, with the state file
// of --state-file, and checks it.
func readCloudConfig(o options) (fake.Config, error) {
	data, err := os.ReadFile(o.cloudConfig)
	if err != nil {
		return fake.Config{}, fmt.Errorf("--cloud-config: %w", err)
	}
	cfg, err := provider.ReadConfig(bytes.NewReader(data), provider.DefaultProviderName)
	if err != nil {
		return fake.Config{}, fmt.Errorf("--cloud-config %s: %w", o.cloudConfig, err)
	}
	section, ok, err := provider.Section[fake.Config](cfg, fake.SectionName)
	if err != nil {
		return fake.Config{}, fmt.Errorf("--cloud-config %s: %w", o.cloudConfig, err)
	}
	if !ok {
		return fake.Config{}, fmt.Errorf("--cloud-config %s: no %q section: it describes the cloud to serve (instances, address pools)", o.cloudConfig, fake.SectionName)
	}
	if section.Region == "" {
		section.Region = cfg.Region
	}
	if o.stateFile != "" {
		section.StateFile = o.stateFile
	}
	check := section
	check.SetDefaults()
	if err := check.Validate(); err != nil {
		return fake.Config{}, fmt.Errorf("--cloud-config %s: %w", o.cloudConfig, err)
	}
	return section, nil
}

// readToken reads the bearer token of --token-file: the file's content without
// surrounding white space.
func readToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("--token-file %s: the file is empty", path)
	}
	return token, nil
}

// run is the command: it reads the flags and the cloud config, opens the cloud, serves it
// until ctx ends, and returns the exit code. It reports on stderr.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(stderr)))
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		logger.Error(err, "Invalid flags")
		return exitBadUsage
	}
	section, err := readCloudConfig(o)
	if err != nil {
		logger.Error(err, "Invalid cloud config")
		return exitBadUsage
	}
	token, err := readToken(o.tokenFile)
	if err != nil {
		logger.Error(err, "Invalid token file")
		return exitBadUsage
	}
	cloud, err := fake.Open(section)
	if err != nil {
		logger.Error(err, "Opening the cloud failed")
		return exitFailed
	}
	faults := faultinject.Wrap(cloud, o.faults.config())
	if err := serve(ctx, logger, o, cloud, faults, token); err != nil {
		logger.Error(err, "Serving failed")
		return exitFailed
	}
	return exitOK
}

// serve serves the API (and the debug endpoints) until ctx ends, then shuts down.
func serve(ctx context.Context, logger logr.Logger, o options, cloud *fake.Cloud, faults *faultinject.Client, token string) error {
	if token == "" {
		logger.Info("No --token-file: requests with any token or none are accepted")
	}
	servers := []*http.Server{{Handler: server.ForClient(faults, server.Options{Token: token}), ReadHeaderTimeout: 10 * time.Second}}
	addrs := []string{o.listen}
	if o.debugListen != "" {
		servers = append(servers, &http.Server{Handler: debugHandler(cloud, faults), ReadHeaderTimeout: 10 * time.Second})
		addrs = append(addrs, o.debugListen)
	}
	listeners := make([]net.Listener, len(servers))
	for i, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, prev := range listeners[:i] {
				_ = prev.Close()
			}
			return err
		}
		listeners[i] = l
	}
	logger.Info("Serving the restcloud API", "address", "http://"+listeners[0].Addr().String(),
		"stateFile", cloud.Config().StateFile, "faultRules", len(o.faults.config().Rules))
	if len(listeners) > 1 {
		logger.Info("Serving the debug endpoints", "address", "http://"+listeners[1].Addr().String())
	}
	errc := make(chan error, len(servers))
	for i, s := range servers {
		go func() { errc <- s.Serve(listeners[i]) }()
	}
	var err error
	select {
	case <-ctx.Done():
		logger.Info("Stopping: waiting for the requests under way", "timeout", ShutdownTimeout)
	case err = <-errc: // a listener failed
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	for _, s := range servers {
		err = errors.Join(err, s.Shutdown(shutdownCtx))
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil {
		logger.Info("Stopped")
	}
	return err
}

// debugCalls is the answer of /debug/calls.
type debugCalls struct {
	Calls  fake.Calls                         `json:"calls"`
	Reads  int64                              `json:"reads"`
	Writes int64                              `json:"writes"`
	Faults map[cloudapi.Operation]debugFaults `json:"faults"`
}

// debugFaults is what the fault injector did with the calls of one operation.
type debugFaults struct {
	// Calls is every call, Passed those that reached the cloud (lost writes included).
	Calls  int `json:"calls"`
	Passed int `json:"passed"`
	// RateLimited were refused by --fault-qps; Faults are the injected faults by kind
	// (Transient, Throttle, Ambiguous).
	RateLimited int            `json:"rateLimited"`
	Faults      map[string]int `json:"faults,omitempty"`
}

// debugHandler serves what the cloud saw: its call counts, its load balancer history and
// its inventory.
func debugHandler(cloud *fake.Cloud, faults *faultinject.Client) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/calls", func(w http.ResponseWriter, _ *http.Request) {
		calls := cloud.Calls()
		out := debugCalls{Calls: calls, Reads: calls.Reads(), Writes: calls.Writes(), Faults: map[cloudapi.Operation]debugFaults{}}
		for op, c := range faults.Injected().Ops {
			f := debugFaults{Calls: c.Calls, Passed: c.Passed, RateLimited: c.RateLimited}
			for kind, n := range c.Faults {
				if f.Faults == nil {
					f.Faults = map[string]int{}
				}
				f.Faults[kind.String()] = n
			}
			out.Faults[op] = f
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /debug/history", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, cloud.LoadBalancerHistory())
	})
	mux.HandleFunc("GET /debug/inventory", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, cloud.Inventory())
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do then
}
