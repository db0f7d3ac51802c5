package lbclass

// With adds the class controller to the controllers of a cloud-controller-manager built on
// k8s.io/cloud-provider/app; NewInitFunc is its entry there.

import (
	"context"
	"fmt"
	"maps"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

const (
	// ControllerName is the class controller's name among the cloud-controller-manager's
	// controllers: what --controllers enables or disables ("*" includes it;
	// "-service-lb-class-controller" leaves it out), and its event source.
	ControllerName = "service-lb-class-controller"
	// ClientName is the identity the class controller calls the API server as: the
	// upstream service controller's, because it needs exactly that controller's
	// permissions (patch services/status for the finalizer and the status; events).
	// With --use-service-account-credentials it is the ServiceAccount
	// kube-system/service-controller, which deploy/ and the Helm chart already bind.
	ClientName = "service-controller"
)

// Cloud is a cloud provider that serves a load balancer class. ccmkit's provider
// (*provider.Cloud) is one: its class is the cloud config's loadBalancer.class.
type Cloud interface {
	// LoadBalancerClass returns the load balancer class the provider serves and the
	// LoadBalancer that serves Services of that class; ok is false when it serves none.
	LoadBalancerClass() (class string, lb cloudprovider.LoadBalancer, ok bool)
}

// With returns a copy of constructors, the cloud-controller-manager's controllers by
// name (usually app.DefaultInitFuncConstructors), with the class controller added as
// ControllerName under the identity ClientName. constructors is not changed. A CCM's
// main.go passes the result to app.NewCloudControllerManagerCommand:
//
//	command := app.NewCloudControllerManagerCommand(opts, initCloud,
//		lbclass.With(app.DefaultInitFuncConstructors), names.CCMControllerAliases(),
//		cliflag.NamedFlagSets{}, wait.NeverStop)
func With(constructors map[string]app.ControllerInitFuncConstructor) map[string]app.ControllerInitFuncConstructor {
	out := maps.Clone(constructors)
	if out == nil {
		out = map[string]app.ControllerInitFuncConstructor{}
	}
	out[ControllerName] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: ClientName},
		Constructor: NewInitFunc,
	}
	return out
}

// NewInitFunc is the class controller's app.InitFuncConstructor. The InitFunc it returns
// starts the controller when the cloud provider serves a class (see Cloud), and otherwise
// starts nothing and reports the controller as not started (the cloud-controller-manager
// logs `Skipping "service-lb-class-controller"`). The controller runs with
// --concurrent-service-syncs workers and --cluster-name, and calls the API server as
// initContext.ClientName. It cleans up after Services without a class only when the
// upstream service controller does not serve them: when the provider's LoadBalancer
// answers (nil, false) (ccmkit's does with loadBalancer.serveUnclassed: false) or
// --controllers disables service-lb-controller.
func NewInitFunc(initContext app.ControllerInitContext, completed *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, controllerContext genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
		classed, ok := cloud.(Cloud)
		if !ok {
			logger.Info("The cloud provider serves no load balancer class; not starting", "provider", cloud.ProviderName())
			return nil, false, nil
		}
		class, lb, ok := classed.LoadBalancerClass()
		if !ok {
			logger.Info("No load balancer class configured (loadBalancer.class); not starting")
			return nil, false, nil
		}
		kube, err := completed.ClientBuilder.Client(initContext.ClientName)
		if err != nil {
			return nil, false, fmt.Errorf("%s: a client for %q: %w", ControllerName, initContext.ClientName, err)
		}
		_, unclassedLBs := cloud.LoadBalancer()
		upstreamRuns := genericcontrollermanager.IsControllerEnabled(names.ServiceLBController,
			app.ControllersDisabledByDefault, completed.ComponentConfig.Generic.Controllers)
		informers := completed.SharedInformers.Core().V1()
		ctrl, err := New(lb, kube, informers.Services(), informers.Nodes(), Options{
			Class:           class,
			UnclassedServed: unclassedLBs && upstreamRuns,
			ClusterName:     completed.ComponentConfig.KubeCloudShared.ClusterName,
		})
		if err != nil {
			return nil, false, err
		}
		logger.Info("Serving a load balancer class", "class", class, "unclassedServedByServiceController", unclassedLBs && upstreamRuns)
		go ctrl.Run(ctx, int(completed.ComponentConfig.ServiceController.ConcurrentServiceSyncs), controllerContext.ControllerManagerMetrics)
		return nil, true, nil
	}
}
