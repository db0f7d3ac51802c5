package controllers

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
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

	"github.com/ccmkit/ccmkit/lbclass"
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
	return out
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
