// Command ccm is the cloud-controller-manager of Hetzner Cloud built on ccmkit: the
// upstream controllers of k8s.io/cloud-provider, with the hcloud adapter linked in by a
// blank import of its package, which registers the "hcloud" cloud provider, and ccmkit's
// controllers (package controllers): the load balancer class controller, which starts
// when the cloud config names a loadBalancer.class, and the sweeper, which starts when
// the cloud config says sweeper.enabled: true. It is examples/ccm with the adapter's
// import path instead of provider/builtin, without examples/ccm's teardown subcommand.
//
//	go run ./ccm --cloud-provider=hcloud --cloud-config=cloud.yaml --kubeconfig=...
//
// `ccm admission-policy --cloud-config=cloud.yaml` prints the ValidatingAdmissionPolicy
// that refuses malformed load balancer annotations at `kubectl apply`, Hetzner's own CCM's
// keys included (provider.RunAdmissionPolicyCommand). `ccm plan --cloud-config=cloud.yaml
// --kubeconfig=...` prints what the CCM would do when it starts, writing nothing: per
// Service the load balancer it keeps, adopts or takes over from Hetzner's own CCM (or
// creates, with a new address) and what it would change, per Node the labels it would set
// otherwise (provider.RunPlanCommand). `ccm --help` lists both.
//
// The cloud config's `hcloud:` section names the API's endpoint (empty: the real API),
// the location of load balancers, the private network and whether targets are reached
// over it; the credentials section holds the API token (README.md has an example that
// runs against hcloud-mock-server).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
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
	"github.com/ccmkit/ccmkit/examples/hcloud/adapter" // registers the "hcloud" cloud provider
	"github.com/ccmkit/ccmkit/provider"
)

func main() {
	if code, ok := provider.RunSubcommand(adapter.ProviderName, os.Args[1:], os.Stdout, os.Stderr); ok {
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
	code := cli.Run(newCommand(opts, ctx.Done()))
	stop()
	os.Exit(code)
}

// newCommand is the manager's command, its --help listing the subcommands too.
func newCommand(opts *options.CloudControllerManagerOptions, stop <-chan struct{}) *cobra.Command {
	command := app.NewCloudControllerManagerCommand(opts, initCloud, controllers.With(app.DefaultInitFuncConstructors),
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, stop)
	command.Long += "\n\n" + provider.SubcommandsHelp
	return command
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
