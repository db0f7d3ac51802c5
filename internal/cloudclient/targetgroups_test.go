package cloudclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// groupClient is a mock cloud that also offers target groups.
type groupClient struct {
	*cloudapimock.MockClient
	groups *cloudapimock.MockTargetGroupAPI
}

func (g groupClient) TargetGroups() (cloudapi.TargetGroupAPI, bool) { return g.groups, true }

// TestTargetGroupsPassThrough: the Client offers target groups exactly when the inner
// client does, and retries their operations by the policy table: reads and deletes after
// a transient failure, creates and updates only after a throttled answer.
func TestTargetGroupsPassThrough(t *testing.T) {
	without, err := cloudclient.New(cloudapimock.NewCloud(gomock.NewController(t)).Client, withRegistry(cloudclient.Options{ProviderName: "test"}))
	require.NoError(t, err)
	_, ok := cloudapi.TargetGroups(without)
	assert.False(t, ok, "an inner client without target groups")

	transient := cloudapi.NewError(cloudapi.ErrTransient, "", "", errors.New("503"))
	throttled := cloudapi.Throttled("", 0, errors.New("429"))
	spec := cloudapi.TargetGroupSpec{Name: "g", Targets: []string{"i-1"}}
	update := cloudapi.TargetGroupUpdate{Spec: spec, AddTargets: []string{"i-1"}}
	tests := []struct {
		op       cloudapi.Operation
		err      error
		attempts int
		expect   func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call
		call     func(ctx context.Context, api cloudapi.TargetGroupAPI) error
	}{
		{cloudapi.OpListTargetGroups, transient, 3, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.ListTargetGroups(gomock.Any(), listOpts).Return(nil, err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			_, err := api.ListTargetGroups(ctx, listOpts)
			return err
		}},
		{cloudapi.OpCreateTargetGroup, transient, 1, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.CreateTargetGroup(gomock.Any(), spec).Return(nil, err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			_, err := api.CreateTargetGroup(ctx, spec)
			return err
		}},
		{cloudapi.OpCreateTargetGroup, throttled, 3, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.CreateTargetGroup(gomock.Any(), spec).Return(nil, err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			_, err := api.CreateTargetGroup(ctx, spec)
			return err
		}},
		{cloudapi.OpUpdateTargetGroup, transient, 1, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.UpdateTargetGroup(gomock.Any(), "tg-1", update).Return(nil, err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			_, err := api.UpdateTargetGroup(ctx, "tg-1", update)
			return err
		}},
		{cloudapi.OpUpdateTargetGroup, throttled, 3, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.UpdateTargetGroup(gomock.Any(), "tg-1", update).Return(nil, err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			_, err := api.UpdateTargetGroup(ctx, "tg-1", update)
			return err
		}},
		{cloudapi.OpDeleteTargetGroup, transient, 3, func(m *cloudapimock.MockTargetGroupAPIMockRecorder, err error) *gomock.Call {
			return m.DeleteTargetGroup(gomock.Any(), "tg-1").Return(err).Call
		}, func(ctx context.Context, api cloudapi.TargetGroupAPI) error {
			return api.DeleteTargetGroup(ctx, "tg-1")
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.op)+"/"+cloudapi.ClassOf(tt.err).Error(), func(t *testing.T) {
			ctrl := gomock.NewController(t)
			inner := groupClient{MockClient: cloudapimock.NewCloud(ctrl).Client, groups: cloudapimock.NewMockTargetGroupAPI(ctrl)}
			c, err := cloudclient.New(inner, cloudclient.Options{
				ProviderName: "test", Registry: metrics.NewKubeRegistry(), Clock: clocktest.NewStepping(start),
				Rand: func() float64 { return 0 }, Retry: cloudclient.RetryPolicy{MaxAttempts: 3},
			})
			require.NoError(t, err)
			api, ok := cloudapi.TargetGroups(c)
			require.True(t, ok)
			tt.expect(inner.groups.EXPECT(), tt.err).Times(tt.attempts) // gomock fails on any other count
			_, ctx := ktesting.NewTestContext(t)
			err = tt.call(ctx, api)
			require.ErrorIs(t, err, cloudapi.ClassOf(tt.err))
		})
	}
}
