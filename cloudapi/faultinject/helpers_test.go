package faultinject_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/internal/clocktest"
)

// mocks is a gomock cloud: a Client whose sub-APIs are mocks with no expectations, so
// that any inner call a test did not expect fails it.
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

// opCase makes one operation's call through a cloudapi.Client and programs the inner
// mock for it.
type opCase struct {
	op cloudapi.Operation
	// id is the resource ID the call names, empty for creates and lists.
	id string
	// expect makes the inner mock expect the call times times, answering err, or a new
	// result when err is nil. It returns that result (nil when err is not nil).
	expect func(m *mocks, times int, err error) any
	// call makes the call and returns its result and error.
	call func(ctx context.Context, c cloudapi.Client) (any, error)
}

var (
	listOpts = cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}, PageSize: 7, PageToken: "p2"}
	lbSpec   = cloudapi.LoadBalancerSpec{Name: "web", Tags: map[string]string{cloudapi.TagCluster: "c1"}}
	lbUpdate = cloudapi.LoadBalancerUpdate{Spec: lbSpec, Changes: cloudapi.LoadBalancerChanges{Tags: true}}
	rtSpec   = cloudapi.RouteSpec{DestinationCIDR: "10.244.1.0/24", TargetInstanceID: "i-1"}
)

// resultOf returns a new result, or nil when err is not nil.
func resultOf[T any](err error, v T) *T {
	if err != nil {
		return nil
	}
	return &v
}

// allOps returns one opCase per operation, reads first.
func allOps() []opCase {
	return []opCase{
		{
			op: cloudapi.OpGetInstance, id: "i-1",
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.Instance{ID: "i-1"})
				m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				return c.Instances().GetInstance(ctx, "i-1")
			},
		},
		{
			op: cloudapi.OpListInstances,
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.InstancePage{NextPageToken: "p3"})
				m.in.EXPECT().ListInstances(gomock.Any(), listOpts).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				return c.Instances().ListInstances(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpGetLoadBalancer, id: "lb-1",
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.LoadBalancer{ID: "lb-1"})
				m.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lb, _ := c.LoadBalancers()
				return lb.GetLoadBalancer(ctx, "lb-1")
			},
		},
		{
			op: cloudapi.OpListLoadBalancers,
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.LoadBalancerPage{NextPageToken: "p3"})
				m.lb.EXPECT().ListLoadBalancers(gomock.Any(), listOpts).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lb, _ := c.LoadBalancers()
				return lb.ListLoadBalancers(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpListRoutes,
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.RoutePage{NextPageToken: "p3"})
				m.rt.EXPECT().ListRoutes(gomock.Any(), listOpts).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rt, _ := c.Routes()
				return rt.ListRoutes(ctx, listOpts)
			},
		},
		{
			op: cloudapi.OpCreateLoadBalancer,
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.LoadBalancer{ID: "lb-new", Spec: lbSpec})
				m.lb.EXPECT().CreateLoadBalancer(gomock.Any(), lbSpec).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lb, _ := c.LoadBalancers()
				return lb.CreateLoadBalancer(ctx, lbSpec)
			},
		},
		{
			op: cloudapi.OpUpdateLoadBalancer, id: "lb-1",
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.LoadBalancer{ID: "lb-1", Spec: lbSpec})
				m.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), "lb-1", lbUpdate).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lb, _ := c.LoadBalancers()
				return lb.UpdateLoadBalancer(ctx, "lb-1", lbUpdate)
			},
		},
		{
			op: cloudapi.OpDeleteLoadBalancer, id: "lb-1",
			expect: func(m *mocks, n int, err error) any {
				m.lb.EXPECT().DeleteLoadBalancer(gomock.Any(), "lb-1").Return(err).Times(n)
				return nil
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				lb, _ := c.LoadBalancers()
				return nil, lb.DeleteLoadBalancer(ctx, "lb-1")
			},
		},
		{
			op: cloudapi.OpCreateRoute,
			expect: func(m *mocks, n int, err error) any {
				res := resultOf(err, cloudapi.Route{ID: "rt-new", RouteSpec: rtSpec})
				m.rt.EXPECT().CreateRoute(gomock.Any(), rtSpec).Return(res, err).Times(n)
				return res
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rt, _ := c.Routes()
				return rt.CreateRoute(ctx, rtSpec)
			},
		},
		{
			op: cloudapi.OpDeleteRoute, id: "rt-1",
			expect: func(m *mocks, n int, err error) any {
				m.rt.EXPECT().DeleteRoute(gomock.Any(), "rt-1").Return(err).Times(n)
				return nil
			},
			call: func(ctx context.Context, c cloudapi.Client) (any, error) {
				rt, _ := c.Routes()
				return nil, rt.DeleteRoute(ctx, "rt-1")
			},
		},
	}
}

// stubCloud is a tiny, fast in-test backend for loops of thousands of calls: every call
// succeeds and is counted.
type stubCloud struct {
	calls atomic.Int64
}

func (s *stubCloud) Instances() cloudapi.InstanceAPI                 { return s }
func (s *stubCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return nil, false }
func (s *stubCloud) Routes() (cloudapi.RouteAPI, bool)               { return nil, false }

func (s *stubCloud) GetInstance(_ context.Context, id string) (*cloudapi.Instance, error) {
	s.calls.Add(1)
	return &cloudapi.Instance{ID: id}, nil
}

func (s *stubCloud) ListInstances(context.Context, cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	s.calls.Add(1)
	return &cloudapi.InstancePage{}, nil
}

// t0 is the time on the fake clocks of the tests when they begin.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newClock returns a fake clock for Config.Clock that ends every wait at once and
// records it.
func newClock() *clocktest.Clock { return clocktest.NewStepping(t0) }

// outcome classifies the answer of a call for sequence comparisons.
func outcome(err error) faultinject.Kind {
	switch {
	case err == nil:
		return faultinject.None
	case errors.Is(err, cloudapi.ErrThrottled):
		return faultinject.Throttle
	case errors.Is(err, context.DeadlineExceeded):
		return faultinject.Timeout
	case errors.Is(err, cloudapi.ErrTransient):
		return faultinject.Transient
	}
	return faultinject.Kind(-1)
}
