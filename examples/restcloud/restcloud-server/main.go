// Command restcloud-server serves the restcloud API (package server) over ccmkit's fake
// cloud as a process of its own: a local cloud that several cloud-controller-managers
// share (two leader-elected replicas of examples/restcloud, for one), beside a kind or
// dev cluster, or under a test. It is an example and a test tool, not a production cloud.
//
//	go run ./examples/restcloud/restcloud-server --cloud-config=cloud.yaml \
//	    --state-file=/tmp/restcloud.json --listen=127.0.0.1:8080 --token-file=token
//
// Flags:
//
//	--cloud-config FILE    a cloud config whose fake: section seeds the cloud (required);
//	                       its other keys are ignored, so the built-in provider's cloud
//	                       config serves as it is
//	--state-file FILE      keep the cloud in FILE (fake.Open): it survives restarts of
//	                       the server, and other processes may open it too; overrides
//	                       the section's stateFile
//	--listen ADDR          where the API listens (default 127.0.0.1:8080)
//	--token-file FILE      the bearer token every request must carry; without it the
//	                       server accepts requests with any token or none
//	--debug-listen ADDR    where the debug endpoints listen (off by default; see below)
//	--fault-seed N         the seed of the injected faults (cloudapi/faultinject)
//	--fault-error-rate P   share of calls answered 503 without reaching the cloud
//	--fault-throttle-rate P  share of calls answered 429 with Retry-After
//	--fault-retry-after D  the Retry-After of those 429s (default 1s; whole seconds on
//	                       the wire)
//	--fault-lost-write-rate P  share of writes applied, then answered 503: the answer of
//	                       a write that was made is lost
//	--fault-qps Q, --fault-burst B  a token bucket over all calls; a call beyond it is
//	                       answered 429 with Retry-After
//
// The debug endpoints, on their own listener and only with --debug-listen, tell a test or
// an operator what the cloud saw, without a token; never expose them beyond the host:
//
//	GET /debug/calls        {"calls": {operation: n}, "reads": n, "writes": n,
//	                        "faults": {operation: {"calls", "passed", "rateLimited",
//	                        "faults": {"Throttle": n, ...}}}}
//	                        calls are those that reached the cloud; faults counts every
//	                        call and what the fault injector did with it
//	GET /debug/history      every write to a load balancer since the server started,
//	                        oldest first: [{"Op", "ID", "Spec", ...}] (fake.Event)
//	GET /debug/inventory    everything the cloud holds (fake.Inventory)
//
// SIGTERM or SIGINT stops the server gracefully: it stops accepting connections, lets
// the requests under way finish (at most ShutdownTimeout), and exits 0. A bad flag or
// cloud config is reported on stderr with every problem at once, and the exit code is 2.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}
