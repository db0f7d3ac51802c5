package cloudclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// start is the time on the fake clock of every Client under test when it is made.
var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// env is a Client under test over gomock mocks, with a fake clock and its own registry.
type env struct {
	// ctx logs to the test.
	ctx    context.Context
	client *cloudclient.Client
	clock  *clocktest.Clock
	reg    metrics.KubeRegistry
	mocks  *mocks
}

// newEnv returns a Client over fresh mocks whose options are the test defaults (provider
// "test", no jitter, a fake clock that ends every wait at once, own registry) changed by
// tweaks.
func newEnv(t *testing.T, tweaks ...func(*cloudclient.Options)) *env {
	t.Helper()
	m := newMocks(t)
	clk := clocktest.NewStepping(start)
	reg := metrics.NewKubeRegistry()
	opts := cloudclient.Options{
		ProviderName: "test",
		Registry:     reg,
		Clock:        clk,
		Rand:         func() float64 { return 0 },
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	c, err := cloudclient.New(m.client, opts)
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	return &env{ctx: ctx, client: c, clock: clk, reg: reg, mocks: m}
}

// cancelDuringWait makes call with a context that ends once the call waits on the
// Client's clock, and returns the call's error. From then on the clock holds its waits
// until the test steps it.
func (e *env) cancelDuringWait(t *testing.T, call func(ctx context.Context) error) error {
	t.Helper()
	e.clock.SetStepping(false)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	started := e.clock.Started()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	require.NoError(t, e.clock.AwaitWaits(t.Context(), started+1))
	cancel()
	return <-done
}

// counter returns the value of a counter of the "test" provider with the given labels.
func (e *env) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return counterValue(t, e.reg, "cloudprovider_test_api_"+name, labels)
}

// counterValue returns the sum of the series of the counter name that match labels.
func counterValue(t *testing.T, g metrics.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if testutil.LabelsMatch(m, labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// histogram returns the number of samples and their sum in the histogram name of the
// "test" provider that match labels (nil: all).
func (e *env) histogram(t *testing.T, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	vec, err := testutil.GetHistogramVecFromGatherer(e.reg, "cloudprovider_test_api_"+name, labels)
	require.NoError(t, err)
	return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
}

// mocks is a gomock cloud with every capability; a call that a test did not expect fails
// it.
type mocks struct {
	client *cloudapimock.MockClient
	in     *cloudapimock.MockInstanceAPI
	lb     *cloudapimock.MockLoadBalancerAPI
	rt     *cloudapimock.MockRouteAPI
}

func newMocks(t *testing.T) *mocks {
	t.Helper()
	c := cloudapimock.NewCloud(gomock.NewController(t))
	return &mocks{client: c.Client, in: c.Instances, lb: c.LoadBalancers, rt: c.Routes}
}

// opCase makes one operation's call through a cloudapi.Client and programs the inner mock
// for it.
type opCase struct {
	op cloudapi.Operation
	// expect makes the inner mock expect the call: the first answers with errs[0], the
	// next with errs[1], and so on (nil: success). It returns the successful result, if
	// any (nil for deletes).
	expect func(m *mocks, errs ...error) any
	// call makes the call and returns its result and error.
	call func(ctx context.Context, c cloudapi.Client) (any, error)
}

var (
	listOpts = cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}, PageSize: 7, PageToken: "p2"}
	lbSpec   = cloudapi.LoadBalancerSpec{Name: "web", Tags: map[string]string{cloudapi.TagCluster: "c1"}}
	// lbStale is what a read returns before a retried update: it differs from lbSpec in
	// its name, which is what lbUpdate.Changes says.
	lbStale  = cloudapi.LoadBalancerSpec{Name: "web-old", Tags: lbSpec.Tags}
	lbUpdate = cloudapi.LoadBalancerUpdate{Spec: lbSpec, Changes: cloudapi.LoadBalancerChanges{Name: true}}
	rtSpec   = cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-1"}
)

// inOrder programs n calls made by expect1 in order.
func inOrder[C any](errs []error, expect1 func(err error) C) {
	calls := make([]any, 0, len(errs))
	for _, err := range errs {
		calls = append(calls, expect1(err))
	}
	if len(calls) > 1 {
		gomock.InOrder(calls...)
	}
}

// opCases returns one case per operation, in cloudapi.Operations order.
func opCases() []opCase {
	return []opCase{
		{
			op: cloudapi.OpGetInstance,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.Instance{ID: "i-1"}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, err)
					}
					return m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				return c.Instances().GetInstance(ctx, "i-1")
			},
		},
		{
			op: cloudapi.OpListInstances,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.InstancePage{Items: []cloudapi.Instance{{ID: "i-1"}}}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.in.EXPECT().ListInstances(gomock.Any(), listOpts).Return(nil, err)
					}
					return m.in.EXPECT().ListInstances(gomock.Any(), listOpts).Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				return c.Instances().ListInstances(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpGetLoadBalancer,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.LoadBalancer{ID: "lb-1"}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(nil, err)
					}
					return m.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lbs, _ := c.LoadBalancers()
				return lbs.GetLoadBalancer(ctx, "lb-1")
			},
		},
		{
			op: cloudapi.OpListLoadBalancers,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.LoadBalancerPage{Items: []cloudapi.LoadBalancer{{ID: "lb-1"}}}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.lb.EXPECT().ListLoadBalancers(gomock.Any(), listOpts).Return(nil, err)
					}
					return m.lb.EXPECT().ListLoadBalancers(gomock.Any(), listOpts).Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lbs, _ := c.LoadBalancers()
				return lbs.ListLoadBalancers(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpListRoutes,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.RoutePage{Items: []cloudapi.Route{{ID: "r-1"}}}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.rt.EXPECT().ListRoutes(gomock.Any(), listOpts).Return(nil, err)
					}
					return m.rt.EXPECT().ListRoutes(gomock.Any(), listOpts).Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rts, _ := c.Routes()
				return rts.ListRoutes(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpCreateLoadBalancer,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.LoadBalancer{ID: "lb-1"}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.lb.EXPECT().CreateLoadBalancer(gomock.Any(), lbSpec).Return(nil, err)
					}
					return m.lb.EXPECT().CreateLoadBalancer(gomock.Any(), lbSpec).Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lbs, _ := c.LoadBalancers()
				return lbs.CreateLoadBalancer(ctx, lbSpec)
			},
		},
		{
			op: cloudapi.OpUpdateLoadBalancer,
			expect: func(m *mocks, errs ...error) any {
				// After an attempt of unknown outcome, the retry reads the load balancer
				// first; the read says the change is still to be made, and is the retry's
				// Current.
				res := &cloudapi.LoadBalancer{ID: "lb-1"}
				var calls []any
				update := lbUpdate
				for i, err := range errs {
					if i > 0 && (errors.Is(errs[i-1], cloudapi.ErrTransient) || cloudapi.ClassOf(errs[i-1]) == nil) {
						reread := &cloudapi.LoadBalancer{ID: "lb-1", Spec: lbStale}
						calls = append(calls, m.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(reread, nil))
						update.Current = reread
					}
					if err != nil {
						calls = append(calls, m.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), "lb-1", update).Return(nil, err))
					} else {
						calls = append(calls, m.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), "lb-1", update).Return(res, nil))
					}
				}
				if len(calls) > 1 {
					gomock.InOrder(calls...)
				}
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lbs, _ := c.LoadBalancers()
				return lbs.UpdateLoadBalancer(ctx, "lb-1", lbUpdate)
			},
		},
		{
			op: cloudapi.OpDeleteLoadBalancer,
			expect: func(m *mocks, errs ...error) any {
				inOrder(errs, func(err error) any {
					return m.lb.EXPECT().DeleteLoadBalancer(gomock.Any(), "lb-1").Return(err)
				})
				return nil
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lbs, _ := c.LoadBalancers()
				return nil, lbs.DeleteLoadBalancer(ctx, "lb-1")
			},
		},
		{
			op: cloudapi.OpCreateRoute,
			expect: func(m *mocks, errs ...error) any {
				res := &cloudapi.Route{ID: "r-1", RouteSpec: rtSpec}
				inOrder(errs, func(err error) any {
					if err != nil {
						return m.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).Return(nil, err)
					}
					return m.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).Return(res, nil)
				})
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rts, _ := c.Routes()
				return rts.CreateRoute(ctx, rtSpec)
			},
		},
		{
			op: cloudapi.OpDeleteRoute,
			expect: func(m *mocks, errs ...error) any {
				inOrder(errs, func(err error) any {
					return m.rt.EXPECT().DeleteRoute(gomock.Any(), "r-1").Return(err)
				})
				return nil
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rts, _ := c.Routes()
				return nil, rts.DeleteRoute(ctx, "r-1")
			},
		},
	}
}

// repeat returns n copies of err.
func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}
