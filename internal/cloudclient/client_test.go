package cloudclient_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

func TestValidate(t *testing.T) {
	valid := func(tweak func(*cloudclient.Options)) cloudclient.Options {
		o := cloudclient.Options{ProviderName: "test"}
		tweak(&o)
		return o
	}
	tests := []struct {
		name string
		opts cloudclient.Options
		want []string // every problem, in order; none: valid
	}{
		{"zero but the name", valid(func(*cloudclient.Options) {}), nil},
		{"full", valid(func(o *cloudclient.Options) {
			o.QPS, o.Burst, o.Timeout = 5, 10, time.Second
			o.Retry = cloudclient.RetryPolicy{MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: time.Second, Jitter: 1}
		}), nil},
		{"bounds", valid(func(o *cloudclient.Options) { o.QPS, o.Burst = cloudclient.MinQPS, cloudclient.MaxBurst }), nil},
		{"fast", valid(func(o *cloudclient.Options) { o.QPS = 1e12 }), nil},
		{"+Inf QPS", valid(func(o *cloudclient.Options) { o.QPS = math.Inf(1) }), []string{"QPS +Inf must be 0 (no client-side limit) or a finite rate of at least 0.001"}},
		{"negative QPS", valid(func(o *cloudclient.Options) { o.QPS = -1 }), []string{"QPS -1 must be 0 (no client-side limit) or a finite rate of at least 0.001"}},
		{"QPS below the minimum", valid(func(o *cloudclient.Options) { o.QPS = 1e-11 }), []string{"QPS 1e-11 must be 0 (no client-side limit) or a finite rate of at least 0.001"}},
		{"burst above the maximum", valid(func(o *cloudclient.Options) { o.QPS, o.Burst = 10, math.MaxInt }), []string{"burst 9223372036854775807 must be from 0 (ceil(QPS)) to 10000"}},
		{"no name", cloudclient.Options{}, []string{`provider name "" has no letter or digit`}},
		{"name without letters", cloudclient.Options{ProviderName: "-_-"}, []string{`provider name "-_-" has no letter or digit`}},
		{"everything wrong", cloudclient.Options{
			QPS: math.NaN(), Burst: -1, Timeout: -time.Second, MaxRetryAfter: -time.Minute,
			Retry: cloudclient.RetryPolicy{MaxAttempts: -1, InitialBackoff: -time.Second, MaxBackoff: -time.Second, Jitter: 1.5},
		}, []string{
			`provider name "" has no letter or digit`,
			"QPS NaN must be 0 (no client-side limit) or a finite rate of at least 0.001",
			"burst -1 must be from 0 (ceil(QPS)) to 10000",
			"negative timeout -1s",
			"negative max Retry-After -1m0s",
			"negative retry max attempts -1",
			"negative retry initial backoff -1s",
			"negative retry max backoff -1s",
			"retry jitter 1.5 is outside [0, 1]",
		}},
		{"max below initial backoff", valid(func(o *cloudclient.Options) {
			o.Retry.InitialBackoff, o.Retry.MaxBackoff = time.Second, time.Millisecond
		}), []string{"retry max backoff 1ms is below the initial backoff 1s"}},
		{"NaN jitter", valid(func(o *cloudclient.Options) { o.Retry.Jitter = math.NaN() }), []string{"retry jitter NaN is outside [0, 1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				require.NoError(t, err)
				_, err = cloudclient.New(newMocks(t).client, withRegistry(tt.opts))
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, strings.Split(err.Error(), "\n"))
			_, err = cloudclient.New(newMocks(t).client, withRegistry(tt.opts))
			require.ErrorContains(t, err, tt.want[0], "New validates")
		})
	}
}

func withRegistry(o cloudclient.Options) cloudclient.Options {
	o.Registry = metrics.NewKubeRegistry()
	return o
}

func TestNewRejectsBrokenInner(t *testing.T) {
	opts := func() cloudclient.Options { return withRegistry(cloudclient.Options{ProviderName: "test"}) }
	_, err := cloudclient.New(nil, opts())
	require.ErrorContains(t, err, "inner client is nil")

	ctrl := gomock.NewController(t)
	inner := cloudapimock.NewMockClient(ctrl)
	inner.EXPECT().Instances().Return(nil)
	inner.EXPECT().LoadBalancers().Return(nil, true)
	inner.EXPECT().Routes().Return(nil, true)
	_, err = cloudclient.New(inner, opts())
	require.Error(t, err)
	for _, want := range []string{
		"inner client returned a nil InstanceAPI",
		"inner client reported load balancers but returned a nil LoadBalancerAPI",
		"inner client reported routes but returned a nil RouteAPI",
	} {
		assert.ErrorContains(t, err, want)
	}
}

func TestCapabilitiesPassThrough(t *testing.T) {
	tests := []struct {
		name        string
		lbs, routes bool
	}{
		{"none", false, false},
		{"load balancers", true, false},
		{"routes", false, true},
		{"both", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			inner := cloudapimock.NewMockClient(ctrl)
			inner.EXPECT().Instances().Return(cloudapimock.NewMockInstanceAPI(ctrl))
			if tt.lbs {
				inner.EXPECT().LoadBalancers().Return(cloudapimock.NewMockLoadBalancerAPI(ctrl), true)
			} else {
				inner.EXPECT().LoadBalancers().Return(nil, false)
			}
			if tt.routes {
				inner.EXPECT().Routes().Return(cloudapimock.NewMockRouteAPI(ctrl), true)
			} else {
				inner.EXPECT().Routes().Return(nil, false)
			}
			c, err := cloudclient.New(inner, withRegistry(cloudclient.Options{ProviderName: "test"}))
			require.NoError(t, err)

			assert.NotNil(t, c.Instances())
			lbs, ok := c.LoadBalancers()
			assert.Equal(t, tt.lbs, ok)
			assert.Equal(t, tt.lbs, lbs != nil, "nil exactly when absent")
			rts, ok := c.Routes()
			assert.Equal(t, tt.routes, ok)
			assert.Equal(t, tt.routes, rts != nil, "nil exactly when absent")
		})
	}
}

var _ cloudapi.Client = (*cloudclient.Client)(nil)
