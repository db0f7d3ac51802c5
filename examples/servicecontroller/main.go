// Command servicecontroller runs only the upstream service controller of
// k8s.io/cloud-provider over ccmkit's LoadBalancer: Service load balancers inside a program
// of one's own, without a cloud-controller-manager binary and without the node, route and
// lifecycle controllers.
//
//	go run ./examples/servicecontroller --kubeconfig ~/.kube/config --cloud-config cloud.yaml
//
// It uses the provider registered as --cloud-provider (default ccmkit, the built-in one on
// the fake cloud, from the blank import of provider/builtin; a cloud team blank-imports
// its adapter instead) and stops cleanly on
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudprovider "k8s.io/cloud-provider"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/controller-manager/pkg/features/register" // the controllers' feature gates
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/controllers/labelwatch"
	"github.com/ccmkit/ccmkit/loadbalancer"
	_ "github.com/ccmkit/ccmkit/provider/builtin" // registers the "ccmkit" cloud provider over the fake cloud
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (empty: in-cluster config)")
	cloudConfig := flag.String("cloud-config", "", "the provider's cloud config file")
	providerName := flag.String("cloud-provider", "ccmkit", "the registered cloud provider to use")
	clusterName := flag.String("cluster-name", "kubernetes", "the cluster name passed to the cloud provider")
	workers := flag.Int("workers", 4, "Services synced at once")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, *kubeconfig, *cloudConfig, *providerName, *clusterName, *workers); err != nil {
		klog.ErrorS(err, "Service controller failed")
		os.Exit(1)
	}
}

func start(ctx context.Context, kubeconfig, cloudConfig, providerName, clusterName string, workers int) error {
	if cloudConfig == "" {
		return errors.New("--cloud-config is required")
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	cloud, err := cloudprovider.InitCloudProvider(providerName, cloudConfig)
	if err != nil {
		return err
	}
	if cloud == nil {
		return fmt.Errorf("no cloud provider %q is registered", providerName)
	}
	return run(ctx, kube, cloud, clusterName, workers)
}

// loadBalancerWork is a provider whose load balancers have background work, as ccmkit's
// (provider.Cloud.LoadBalancerWork).
type loadBalancerWork interface {
	LoadBalancerWork() (lb *loadbalancer.LoadBalancer, collectEvery time.Duration, ok bool)
}

// run runs the service controller over cloud's LoadBalancer until ctx ends. It calls the
// provider's Initialize, as a cloud-controller-manager does after leader election, and
// starts the load balancers' background work that a cloud-controller-manager runs as
// controllers (package controllers): the watch of Node labels (labelwatch.Run), and the
// collection of unused target groups when the load balancers use them.
func run(ctx context.Context, kube kubernetes.Interface, cloud cloudprovider.Interface, clusterName string, workers int) error {
	if _, ok := cloud.LoadBalancer(); !ok {
		return fmt.Errorf("the %q provider offers no load balancers with this cloud config", cloud.ProviderName())
	}
	cloud.Initialize(clientBuilder{kube}, ctx.Done())
	if w, ok := cloud.(loadBalancerWork); ok {
		if lb, collectEvery, ok := w.LoadBalancerWork(); ok {
			go labelwatch.Run(ctx, kube, lb)
			if collectEvery > 0 {
				go wait.UntilWithContext(ctx, lb.CollectGroups, collectEvery)
			}
		}
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	ctrl, err := servicecontroller.New(cloud, kube, factory.Core().V1().Services(), factory.Core().V1().Nodes(), clusterName, utilfeature.DefaultFeatureGate)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	klog.FromContext(ctx).Info("Running the service controller", "provider", cloud.ProviderName(), "workers", workers)
	ctrl.Run(ctx, workers, controllersmetrics.NewControllerManagerMetrics("servicecontroller"))
	factory.Shutdown()
	return nil
}
