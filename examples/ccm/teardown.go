package main

// ccm teardown: list, and with --delete delete, every load balancer, route and target
// group of a cluster (sweeper.Teardown) with the provider and cloud config the CCM itself
// uses.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/sweeper"
)

// TeardownCommand is the first argument that makes the command tear a cluster down
// instead of running the cloud-controller-manager.
const TeardownCommand = "teardown"

// teardownCloud is what the teardown needs of a provider: ccmkit's *provider.Cloud.
type teardownCloud interface {
	CloudClient() cloudapi.Client
	Config() provider.Config
}

// runTeardown runs `ccm teardown [flags]` with args (after "teardown") and returns the
// exit code: 0 when everything found was listed (dry run) or deleted, 1 on any failure,
// 2 on bad flags.
func runTeardown(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(TeardownCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	providerName := fs.String("cloud-provider", provider.DefaultProviderName, "the cloud provider, as the CCM's --cloud-provider")
	cloudConfig := fs.String("cloud-config", "", "the cloud config file, as the CCM's --cloud-config (required)")
	clusterID := fs.String("cluster-id", "", "the cluster whose resources to tear down (default: the cloud config's cluster.id)")
	del := fs.Bool("delete", false, "delete what is found; without it, only print what would be deleted")
	fs.Usage = func() {
		printf(stderr, "Usage: %s %s --cloud-config=FILE [--cloud-provider=NAME] [--cluster-id=ID] [--delete]\n\n", os.Args[0], TeardownCommand)
		printf(stderr, "Lists every load balancer, route and target group tagged with the cluster's ID and, with --delete,\n")
		printf(stderr, "deletes them (target groups last; one still in use is kept and reported).\n")
		printf(stderr, "Nothing without that tag is touched. Run it once the cluster's CCM is stopped for good.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cloudConfig == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cloud, err := cloudprovider.InitCloudProvider(*providerName, *cloudConfig)
	if err != nil {
		printf(stderr, "teardown: %v\n", err)
		return 1
	}
	c, ok := cloud.(teardownCloud)
	if cloud == nil || !ok {
		printf(stderr, "teardown: provider %q is not a ccmkit provider\n", *providerName)
		return 1
	}
	id := *clusterID
	if id == "" {
		id = c.Config().Cluster.ID
	}
	if id == "" {
		printf(stderr, "teardown: no cluster ID: set cluster.id in the cloud config or pass --cluster-id\n")
		return 2
	}
	found, err := sweeper.Teardown(ctx, c.CloudClient(), id, sweeper.TeardownOptions{Delete: *del, PageSize: c.Config().CloudAPI.PageSize})
	verb := "would delete"
	if *del {
		verb = "deleted"
	}
	for _, r := range found {
		status := verb
		if r.Err != nil {
			status = "FAILED"
		}
		printf(stdout, "%-12s %-14s %-24s %-30s owner=%s\n", status, r.Kind, r.ID, r.Name, r.Owner)
	}
	printf(stdout, "%d resource(s) of cluster %q %s\n", len(found), id, verb)
	if err != nil {
		for _, e := range unjoin(err) {
			printf(stderr, "%v\n", e)
		}
		return 1
	}
	return 0
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		return joined.Unwrap()
	}
	return []error{err}
}

// teardownMain runs the teardown subcommand until it ends or SIGINT.
func teardownMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runTeardown(ctx, args, os.Stdout, os.Stderr)
}

// printf writes to the command's output; a failed write to stdout or stderr has nowhere
// to be reported.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
