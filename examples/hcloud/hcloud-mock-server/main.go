// Command hcloud-mock-server serves package hcloudmock, the mock of the Hetzner Cloud API,
// as a process of its own, so that a person can point a cloud-controller-manager or the
// hcloud CLI at it:
//
//	go run ./hcloud-mock-server --seed=seed.yaml --listen=127.0.0.1:8080
//	HCLOUD_ENDPOINT=http://127.0.0.1:8080/v1 HCLOUD_TOKEN=any hcloud server list
//
// The API is served under /v1, as the real one is. Flags:
//
//	--listen ADDR            where the API listens (default 127.0.0.1:8080)
//	--seed FILE              YAML or JSON of hcloudmock.Config: servers, networks and
//	                         certificates in the API's own form, loadBalancers as the
//	                         API's create requests (and an optional id), ipv4Pool,
//	                         ipv6Pool, rateLimit {limit, perSecond}, actionPolls; unknown
//	                         keys are an error
//	--rate-limit N           the token bucket's size (overrides the seed; default 3600)
//	--rate-per-second F      requests the bucket gains back per second (default 1)
//	--action-polls N         reads of an action that still answer running
//	--action-duration D      how long an action runs at least
//
// SIGTERM or SIGINT stops it gracefully: no new connections, the requests under way
// finish (at most shutdownTimeout), exit 0. A bad flag or seed exits 2.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/examples/hcloud/hcloudmock"
)

const (
	defaultListen   = "127.0.0.1:8080"
	shutdownTimeout = 10 * time.Second
	exitFailed      = 1
	exitBadUsage    = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run serves until ctx ends; listening, when not nil, receives the address it listens on.
func run(ctx context.Context, args []string, stderr io.Writer, listening chan<- string) int {
	cfg, listen, err := parse(args, stderr)
	if err != nil {
		say(stderr, "%v", err)
		return exitBadUsage
	}
	m, err := hcloudmock.New(cfg)
	if err != nil {
		say(stderr, "%v", err)
		return exitBadUsage
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		say(stderr, "%v", err)
		return exitFailed
	}
	say(stderr, "serving the API at http://%s/v1", ln.Addr())
	if listening != nil {
		listening <- ln.Addr().String()
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.StripPrefix("/v1", m))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		say(stderr, "%v", err)
		return exitFailed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		say(stderr, "stopping: %v", err)
		return exitFailed
	}
	return 0
}

// say writes a line to stderr; a failed write has nowhere to be reported.
func say(stderr io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(stderr, "hcloud-mock-server: "+format+"\n", args...)
}

// parse reads the flags and the seed file; flags given override the seed.
func parse(args []string, usage io.Writer) (hcloudmock.Config, string, error) {
	var cfg hcloudmock.Config
	fs := flag.NewFlagSet("hcloud-mock-server", flag.ContinueOnError)
	fs.SetOutput(usage)
	listen := fs.String("listen", defaultListen, "address the API listens on")
	seed := fs.String("seed", "", "YAML or JSON file of servers, networks, certificates, load balancers (hcloudmock.Config)")
	limit := fs.Int("rate-limit", 0, fmt.Sprintf("size of the rate limit's token bucket (default %d)", hcloudmock.DefaultRateLimit.Limit))
	perSecond := fs.Float64("rate-per-second", 0, fmt.Sprintf("requests the bucket gains back per second (default %g)", hcloudmock.DefaultRateLimit.PerSecond))
	polls := fs.Int("action-polls", 0, "reads of an action that still answer running (overrides the seed)")
	duration := fs.Duration("action-duration", 0, "how long an action runs at least")
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *seed != "" {
		b, err := os.ReadFile(*seed)
		if err != nil {
			return cfg, "", err
		}
		if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
			return cfg, "", fmt.Errorf("seed %s: %w", *seed, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["rate-limit"] || set["rate-per-second"]) && cfg.RateLimit == (hcloudmock.RateLimit{}) {
		cfg.RateLimit = hcloudmock.DefaultRateLimit
	}
	if set["rate-limit"] {
		cfg.RateLimit.Limit = *limit
	}
	if set["rate-per-second"] {
		cfg.RateLimit.PerSecond = *perSecond
	}
	if set["action-polls"] {
		cfg.ActionPolls = *polls
	}
	cfg.ActionDuration = *duration
	return cfg, *listen, nil
}
