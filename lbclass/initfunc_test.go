//go:build !race

// The controller's InitFunc, through controllers.With: these tests link
// k8s.io/cloud-provider/app, which `make unit` compiles without the race detector only
// (the lbclass tests run under -race without this file, then all of them without -race).

package lbclass_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	fakecloud "k8s.io/cloud-provider/fake"
	"k8s.io/cloud-provider/names"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	genericcontrollermanager "k8s.io/controller-manager/app"

	"github.com/ccmkit/ccmkit/controllers"
	"github.com/ccmkit/ccmkit/lbclass"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// initFunc is the class controller's InitFunc as controllers.With gives it to the
// cloud-controller-manager, with --controllers set to enabled, one Service worker and the
// test's cluster name.
func initFunc(kube kubernetes.Interface, factory informers.SharedInformerFactory, cloud cloudprovider.Interface, enabled ...string) app.InitFunc {
	cfg := &config.Config{ClientBuilder: &providertest.ClientBuilder{Kube: kube}, SharedInformers: factory}
	cfg.ComponentConfig.Generic.Controllers = enabled
	cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs = 1
	cfg.ComponentConfig.KubeCloudShared.ClusterName = providertest.DefaultClusterID
	ctor := controllers.With(nil)[lbclass.ControllerName]
	return ctor.Constructor(ctor.InitContext, cfg.Complete(), cloud)
}

func controllerContext() genericcontrollermanager.ControllerContext {
	return genericcontrollermanager.ControllerContext{ControllerManagerMetrics: controllersmetrics.NewControllerManagerMetrics("test")}
}

// TestInitFuncWithoutClass: without a class the controller is not started and asks for
// no informer.
func TestInitFuncWithoutClass(t *testing.T) {
	t.Parallel()
	for name, cloud := range map[string]cloudprovider.Interface{
		"ccmkit without loadBalancer.class": providertest.New(t).Provider,
		"a provider that serves no class":   &fakecloud.Cloud{},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kube := kubefake.NewClientset()
			factory := informers.NewSharedInformerFactory(kube, 0)
			ctrl, started, err := initFunc(kube, factory, cloud, "*")(t.Context(), controllerContext())
			require.NoError(t, err)
			assert.False(t, started)
			assert.Nil(t, ctrl)
			assert.Empty(t, factory.WaitForCacheSync(t.Context().Done()), "no informer asked for")
		})
	}
}

// TestInitFuncServesTheClass: with a class the controller serves it, and cleans up after
// a Service without a class (provably its own) only when the upstream service controller
// does not serve those: the provider offers it no LoadBalancer, or --controllers leaves
// it out.
func TestInitFuncServesTheClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		serveUnclassed bool
		controllers    []string
		cleansUp       bool
	}{
		{"service controller serves unclassed", true, []string{"*"}, false},
		{"service controller serves unclassed by name", true, []string{names.ServiceLBController, lbclass.ControllerName}, false},
		{"serveUnclassed false", false, []string{"*"}, true},
		{"service controller disabled", true, []string{"*", "-" + names.ServiceLBController}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cloud := classCloud(t, tt.serveUnclassed)
			// "old", without a class, holds the finalizer and a load balancer of this
			// cluster's in the cloud, and is being deleted.
			old := newService("old", withFinalizer, markedDeleted)
			_, lb, _ := cloud.Provider.LoadBalancerClass()
			_, err := lb.EnsureLoadBalancer(context.Background(), providertest.DefaultClusterID, old, nil)
			require.NoError(t, err)
			var started bool
			c := startCluster(t, cloud, func(ctx context.Context, kube *kubefake.Clientset, factory informers.SharedInformerFactory) {
				var err error
				_, started, err = initFunc(kube, factory, cloud.Provider, tt.controllers...)(ctx, controllerContext())
				if err != nil {
					t.Error(err)
					return
				}
				factory.Start(ctx.Done())
				<-ctx.Done()
			}, old)
			assert.True(t, started)

			c.create(newService("web", withClass(class)))
			eventually(t, func() bool { return c.hasIngress("web") }, "web gets its load balancer")
			if tt.cleansUp {
				eventually(t, func() bool { return len(c.get("old").Finalizers) == 0 && len(c.lbs("old")) == 0 }, "old is cleaned up")
				return
			}
			// One worker takes keys in order, and old came first.
			assert.Zero(t, c.patches("old"), "old is the service controller's")
			assert.Len(t, c.lbs("old"), 1)
			assert.Equal(t, []string{finalizer}, c.get("old").Finalizers)
		})
	}
}

func markedDeleted(s *corev1.Service) {
	now := s.CreationTimestamp
	now.Time = now.Add(1)
	s.DeletionTimestamp = &now
}
