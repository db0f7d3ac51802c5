package cloudclient_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// An adapter that answers a call with neither a result nor an error must not hand the
// layers above a nil to dereference: every such call fails with ErrTransient (unknown
// outcome), never ErrNotFound.
func TestNilAnswerIsATransientError(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.Retry.MaxAttempts = 1 })
	m := e.mocks
	m.in.EXPECT().GetInstance(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.in.EXPECT().ListInstances(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.lb.EXPECT().GetLoadBalancer(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.lb.EXPECT().ListLoadBalancers(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.lb.EXPECT().CreateLoadBalancer(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), gomock.Any(), gomock.Any()).Return(nil, nil)
	m.rt.EXPECT().ListRoutes(gomock.Any(), gomock.Any()).Return(nil, nil)
	m.rt.EXPECT().CreateRoute(gomock.Any(), gomock.Any()).Return(nil, nil)
	lbs, ok := e.client.LoadBalancers()
	require.True(t, ok)
	rts, ok := e.client.Routes()
	require.True(t, ok)

	calls := map[cloudapi.Operation]func() (any, error){
		cloudapi.OpGetInstance:       func() (any, error) { return e.client.Instances().GetInstance(e.ctx, "i-1") },
		cloudapi.OpListInstances:     func() (any, error) { return e.client.Instances().ListInstances(e.ctx, listOpts) },
		cloudapi.OpGetLoadBalancer:   func() (any, error) { return lbs.GetLoadBalancer(e.ctx, "lb-1") },
		cloudapi.OpListLoadBalancers: func() (any, error) { return lbs.ListLoadBalancers(e.ctx, listOpts) },
		cloudapi.OpCreateLoadBalancer: func() (any, error) {
			return lbs.CreateLoadBalancer(e.ctx, lbSpec)
		},
		cloudapi.OpUpdateLoadBalancer: func() (any, error) { return lbs.UpdateLoadBalancer(e.ctx, "lb-1", lbUpdate) },
		cloudapi.OpListRoutes:         func() (any, error) { return rts.ListRoutes(e.ctx, listOpts) },
		cloudapi.OpCreateRoute:        func() (any, error) { return rts.CreateRoute(e.ctx, rtSpec) },
	}
	for op, call := range calls {
		_, err := call()
		require.Error(t, err, op)
		assert.ErrorIs(t, err, cloudapi.ErrTransient, op)
		assert.NotErrorIs(t, err, cloudapi.ErrNotFound, op)
		assert.Contains(t, err.Error(), "neither a result nor an error", op)
	}
}
