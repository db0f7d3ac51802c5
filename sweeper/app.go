package sweeper

// With adds the sweeper to the controllers of a cloud-controller-manager built on
// k8s.io/cloud-provider/app; NewInitFunc is its entry there.

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
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

const (
	// ControllerName is the sweeper's name among the cloud-controller-manager's
	// controllers: what --controllers enables or disables ("*" includes it;
	// "-ccmkit-sweeper" leaves it out), and the source of its events.
	ControllerName = "ccmkit-sweeper"
	// ClientName is the identity the sweeper calls the API server as. With
	// --use-service-account-credentials it is the ServiceAccount kube-system/ccmkit-sweeper,
	// which needs get on services and nodes (the live reads) and create, patch and update
	// on events (in every namespace for Services, in default for Nodes).
	ClientName = "ccmkit-sweeper"
)

// Target is what a cloud provider hands the sweeper: its cloud APIs (through the same
// client decorator as every other call: rate limit, retries, metrics) and the options,
// which carry the target group API when groups are swept (Options.TargetGroups).
type Target struct {
	// LoadBalancers are swept when not nil.
	LoadBalancers cloudapi.LoadBalancerAPI
	// Routes are swept when not nil.
	Routes cloudapi.RouteAPI
	// Options configure the sweeper; Recorder is set by NewInitFunc.
	Options Options
}

// Cloud is a cloud provider that offers a sweeper. ccmkit's provider (*provider.Cloud)
// is one: the cloud config's sweeper section switches it on.
type Cloud interface {
	// Sweeper returns what the sweeper sweeps and how; ok is false when it is off.
	Sweeper() (target Target, ok bool)
}

// With returns a copy of constructors, the cloud-controller-manager's controllers by
// name (usually app.DefaultInitFuncConstructors, or lbclass.With's answer), with the
// sweeper added as ControllerName under the identity ClientName. constructors is not
// changed. A CCM's main.go passes the result to app.NewCloudControllerManagerCommand:
//
//	command := app.NewCloudControllerManagerCommand(opts, initCloud,
//		sweeper.With(lbclass.With(app.DefaultInitFuncConstructors)), names.CCMControllerAliases(),
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

// NewInitFunc is the sweeper's app.InitFuncConstructor. The InitFunc it returns starts
// the sweeper when the cloud provider offers one (see Cloud), and otherwise starts
// nothing and reports the controller as not started (the cloud-controller-manager logs
// `Skipping "ccmkit-sweeper"`). It runs only in the leader, as every controller.
func NewInitFunc(initContext app.ControllerInitContext, completed *config.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
	return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
		c, ok := cloud.(Cloud)
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
			return nil, false, fmt.Errorf("%s: a client for %q: %w", ControllerName, initContext.ClientName, err)
		}
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartStructuredLogging(3)
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		target.Options.Recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})
		informers := completed.SharedInformers.Core().V1()
		s, err := New(target.LoadBalancers, target.Routes, kube, informers.Services(), informers.Nodes(), target.Options)
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
