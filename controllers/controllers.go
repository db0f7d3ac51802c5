package controllers

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/controllers/labelwatch"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/sweeper"
)

// With returns a copy of constructors (app.DefaultInitFuncConstructors, or a map of the
// caller's) with ccmkit's controllers added under their names (see the package doc). The
// map passed in is not changed; nil is an empty map.
func With(constructors map[string]app.ControllerInitFuncConstructor) map[string]app.ControllerInitFuncConstructor {
	out := maps.Clone(constructors)
	if out == nil {
		out = map[string]app.ControllerInitFuncConstructor{}
	}
	out[lbclass.ControllerName] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: lbclass.ClientName},
		Constructor: newLBClass,
	}
	out[sweeper.ControllerName] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: sweeper.ClientName},
		Constructor: newSweeper,
	}
	// The provider's own identity, <provider>-cloud-provider, which only the provider's
	// name gives: an empty ClientName says so.
	out[NodeLabelsController] = app.ControllerInitFuncConstructor{Constructor: newNodeLabels}
	out[TargetGroupCollector] = app.ControllerInitFuncConstructor{Constructor: newGroupCollector}
	return out
}

// The names of the controllers that do a provider's load balancer work in the background
// (LoadBalancerCloud), among the cloud-controller-manager's controllers.
const (
	// NodeLabelsController watches Nodes and syncs the targets of the load balancers whose
	// Service selects Nodes by label when a Node's labels change, which the upstream
	// service controller does not do (package labelwatch). It calls the API server as the
	// provider's own identity, <provider>-cloud-provider (list and watch of Nodes).
	NodeLabelsController = "ccmkit-node-labels"
	// TargetGroupCollector deletes the cluster's target groups that no load balancer
	// names and that no call of the LoadBalancer collects, every collection period. It
	// calls only the cloud.
	TargetGroupCollector = "ccmkit-target-group-collector"
)

// LoadBalancerCloud is a cloud provider whose load balancers have background work.
// ccmkit's provider (*provider.Cloud) is one.
type LoadBalancerCloud interface {
	// LoadBalancerWork returns the LoadBalancer and how often to collect its unused
	// target groups (zero: it uses none); ok is false when it has no load balancers.
	LoadBalancerWork() (lb *loadbalancer.LoadBalancer, collectEvery time.Duration, ok bool)
}

// loadBalancerWork returns the cloud's LoadBalancerWork, and false with a log line
// saying why when there is none.
func loadBalancerWork(logger klog.Logger, cloud cloudprovider.Interface) (*loadbalancer.LoadBalancer, time.Duration, bool) {
	c, ok := cloud.(LoadBalancerCloud)
	if !ok {
		logger.Info("The cloud provider has no load balancer work; not starting", "provider", cloud.ProviderName())
		return nil, 0, false
	}
	lb, every, ok := c.LoadBalancerWork()
	if !ok {
		logger.Info("Load balancers are off; not starting")
	}
	return lb, every, ok
}

// newNodeLabels builds the InitFunc of NodeLabelsController: the watch of Node labels
// (labelwatch.Run) over the LoadBalancer's SyncNodeLabels, with a client of the
// provider's identity.
func newNodeLabels(_ app.ControllerInitContext, completed *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", NodeLabelsController)
		lb, _, ok := loadBalancerWork(logger, cloud)
		if !ok {
			return nil, false, nil
		}
		identity := cloud.ProviderName() + "-cloud-provider"
		kube, err := completed.ClientBuilder.Client(identity)
		if err != nil {
			return nil, false, fmt.Errorf("%s: a client for %q: %w", NodeLabelsController, identity, err)
		}
		go labelwatch.Run(klog.NewContext(ctx, logger), kube, lb)
		return nil, true, nil
	}
}

// newGroupCollector builds the InitFunc of TargetGroupCollector: the LoadBalancer's
// collection of unused target groups (loadbalancer.LoadBalancer.CollectGroups) every
// collection period, when it uses target groups.
func newGroupCollector(_ app.ControllerInitContext, _ *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", TargetGroupCollector)
		lb, every, ok := loadBalancerWork(logger, cloud)
		if !ok {
			return nil, false, nil
		}
		if every <= 0 {
			logger.Info("The load balancers use no target groups; not starting")
			return nil, false, nil
		}
		go wait.UntilWithContext(klog.NewContext(ctx, logger), lb.CollectGroups, every)
		return nil, true, nil
	}
}

// newLBClass builds the load balancer class controller's InitFunc: it starts when the
// cloud serves a class (lbclass.Cloud), with the service controller's worker count, and
// tells the controller whether the upstream service controller serves the Services
// without a class (it is enabled and the cloud has load balancers).
func newLBClass(initContext app.ControllerInitContext, completed *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, controllerContext genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", lbclass.ControllerName)
		classed, ok := cloud.(lbclass.Cloud)
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
			return nil, false, fmt.Errorf("%s: a client for %q: %w", lbclass.ControllerName, initContext.ClientName, err)
		}
		_, unclassedLBs := cloud.LoadBalancer()
		upstreamRuns := genericcontrollermanager.IsControllerEnabled(names.ServiceLBController,
			app.ControllersDisabledByDefault, completed.ComponentConfig.Generic.Controllers)
		informers := completed.SharedInformers.Core().V1()
		ctrl, err := lbclass.New(lb, kube, informers.Services(), informers.Nodes(), lbclass.Options{
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

// newSweeper builds the sweeper's InitFunc: it starts when the cloud offers a sweeper
// (sweeper.Cloud) that is on, with an event recorder of its own and the command's shared
// Service and Node informers.
func newSweeper(initContext app.ControllerInitContext, completed *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", sweeper.ControllerName)
		c, ok := cloud.(sweeper.Cloud)
		if !ok {
			logger.Info("The cloud provider offers no sweeper; not starting", "provider", cloud.ProviderName())
			return nil, false, nil
		}
		target, ok := c.Sweeper()
		if !ok {
			logger.Info("The sweeper is off (sweeper.enabled); not starting")
			return nil, false, nil
		}
		kube, err := completed.ClientBuilder.Client(initContext.ClientName)
		if err != nil {
			return nil, false, fmt.Errorf("%s: a client for %q: %w", sweeper.ControllerName, initContext.ClientName, err)
		}
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartStructuredLogging(3)
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		target.Options.Recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: sweeper.ControllerName})
		informers := completed.SharedInformers.Core().V1()
		s, err := sweeper.New(target.LoadBalancers, target.Routes, kube, informers.Services(), informers.Nodes(), target.Options)
		if err != nil {
			broadcaster.Shutdown()
			return nil, false, err
		}
		go func() {
			defer broadcaster.Shutdown()
			s.Run(klog.NewContext(ctx, logger))
		}()
		return nil, true, nil
	}
}
