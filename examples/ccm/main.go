// Command ccm is a complete cloud-controller-manager built on ccmkit: the upstream
// controllers of k8s.io/cloud-provider, with the ccmkit provider linked in by a blank
// import. A cloud team's own CCM is this file with its adapter's import path instead.
//
// controllers.With adds ccmkit's controllers to the upstream ones: the load balancer class
// controller (package lbclass), which starts only when the cloud config names a
// loadBalancer.class, and the sweeper of orphaned load balancers, routes and target
// groups (package sweeper), which starts only when the cloud config says
// sweeper.enabled: true.
//
//	go run ./examples/ccm --cloud-provider=ccmkit --cloud-config=cloud.yaml --kubeconfig=...
//
// `ccm teardown` lists every load balancer, route and target group of the cloud config's
// cluster, and with --delete deletes them (sweeper.Teardown), for a cluster that is gone:
//
//	go run ./examples/ccm teardown --cloud-config=cloud.yaml [--cluster-id=ID] [--delete]
//
// `ccm admission-policy` prints the ValidatingAdmissionPolicies that make the API server
// refuse malformed load balancer annotations of the cloud config's prefix and class
// (provider.RunAdmissionPolicyCommand):
//
//	go run ./examples/ccm admission-policy --cloud-config=cloud.yaml | kubectl apply -f -
//
// `ccm plan` prints what the manager would do when it starts, writing nothing
// (provider.RunPlanCommand); `ccm --help` lists the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric on /metrics
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/controllers"
	"github.com/ccmkit/ccmkit/provider"
	_ "github.com/ccmkit/ccmkit/provider/builtin" // registers the "ccmkit" cloud provider over the fake cloud
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == TeardownCommand {
		os.Exit(teardownMain(os.Args[2:]))
	}
	if code, ok := provider.RunSubcommand(provider.DefaultProviderName, os.Args[1:], os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.ErrorS(err, "Unable to initialize command options")
		os.Exit(1)
	}
	// SIGTERM (the kubelet stopping the Pod) and SIGINT stop the command, which then
	// returns, so the process exits 0 instead of dying by the signal. A leader does not
	// give its lease up: a standby takes over once the lease expires.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	command := app.NewCloudControllerManagerCommand(opts, initCloud, controllers.With(app.DefaultInitFuncConstructors),
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, ctx.Done())
	// --help lists the subcommands too.
	command.Long += "\n\n" + provider.SubcommandsHelp + "\n  " + TeardownCommand + "          list (and with --delete delete) what the cloud config's cluster left in the cloud"
	code := cli.Run(command)
	stop()
	os.Exit(code)
}

// initCloud builds the provider named by --cloud-provider from --cloud-config.
func initCloud(cfg *config.CompletedConfig) cloudprovider.Interface {
	shared := cfg.ComponentConfig.KubeCloudShared
	cloud, err := cloudprovider.InitCloudProvider(shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile)
	if err != nil {
		klog.ErrorS(err, "Cloud provider could not be initialized")
		os.Exit(1)
	}
	if cloud == nil {
		klog.ErrorS(nil, "No cloud provider: set --cloud-provider", "cloudProvider", shared.CloudProvider.Name)
		os.Exit(1)
	}
	if !cloud.HasClusterID() {
		if !shared.AllowUntaggedCloud {
			klog.ErrorS(nil, "No cluster ID: set cluster.id in the cloud config (or pass --allow-untagged-cloud)")
			os.Exit(1)
		}
		klog.InfoS("No cluster ID configured; load balancers and routes are disabled")
	}
	return cloud
}
