package cloudclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

func TestMetricsExposition(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.QPS, o.Burst = 10, 1 })
	gomock.InOrder(
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.Throttled(cloudapi.OpGetInstance, time.Second, nil)),
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetInstance, "i-1", nil)),
		e.mocks.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{ID: "i-1"}, nil),
	)
	e.mocks.rt.EXPECT().DeleteRoute(gomock.Any(), "r-1").Return(cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteRoute, "r-1", nil))

	_, err := e.client.Instances().GetInstance(e.ctx, "i-1")
	require.NoError(t, err)
	rts, _ := e.client.Routes()
	require.ErrorIs(t, rts.DeleteRoute(e.ctx, "r-1"), cloudapi.ErrNotFound)

	want := `
# HELP cloudprovider_test_api_request_errors_total [ALPHA] Attempts of cloud API calls that returned an error, by operation and error class (not_found, conflict, throttled, invalid, transient, unknown).
# TYPE cloudprovider_test_api_request_errors_total counter
cloudprovider_test_api_request_errors_total{class="not_found",operation="DeleteRoute"} 1
cloudprovider_test_api_request_errors_total{class="throttled",operation="GetInstance"} 1
cloudprovider_test_api_request_errors_total{class="transient",operation="GetInstance"} 1
# HELP cloudprovider_test_api_retries_total [ALPHA] Retries of cloud API calls (attempts after the first), by operation.
# TYPE cloudprovider_test_api_retries_total counter
cloudprovider_test_api_retries_total{operation="GetInstance"} 2
# HELP cloudprovider_test_api_throttled_total [ALPHA] Attempts of cloud API calls that the cloud refused because of its rate limit, by operation.
# TYPE cloudprovider_test_api_throttled_total counter
cloudprovider_test_api_throttled_total{operation="GetInstance"} 1
`
	require.NoError(t, testutil.GatherAndCompare(e.reg, strings.NewReader(want),
		"cloudprovider_test_api_request_errors_total", "cloudprovider_test_api_retries_total", "cloudprovider_test_api_throttled_total"))

	n, _ := e.histogram(t, "request_duration_seconds", map[string]string{"operation": "GetInstance"})
	assert.Equal(t, uint64(3), n)
	n, _ = e.histogram(t, "request_duration_seconds", map[string]string{"operation": "DeleteRoute"})
	assert.Equal(t, uint64(1), n)
	// The throttled answer halved the rate to 5/s, growing by 1/s per second. The retries
	// waited 1s (Retry-After) and 400ms (backoff), which covered their slots; the delete,
	// 1.4s after the decrease, waited one interval at 6.4/s.
	wantWaits := []time.Duration{time.Second, 400 * time.Millisecond, 156250 * time.Microsecond}
	assert.Equal(t, wantWaits, e.clock.Waits())
	n, sum := e.histogram(t, "rate_limiter_wait_seconds", nil)
	assert.Equal(t, uint64(4), n, "one sample per attempt")
	assert.InDelta(t, wantWaits[2].Seconds(), sum, 1e-9, "only the delete waited for the rate limit")
}

func TestMetricNamesAreSanitized(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := newMocks(t)
	c, err := cloudclient.New(m.client, cloudclient.Options{ProviderName: "My-Cloud.v2", Registry: reg, Clock: clocktest.NewStepping(start)})
	require.NoError(t, err)
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.NewError(cloudapi.ErrTransient, "", "", nil))
	m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(&cloudapi.Instance{}, nil)
	_, err = c.Instances().GetInstance(context.Background(), "i-1")
	require.NoError(t, err)
	assert.Equal(t, 1.0, counterValue(t, reg, "cloudprovider_my_cloud_v2_api_retries_total", nil))
}

func TestMetricsAreShared(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	var clients []*cloudclient.Client
	for range 2 {
		m := newMocks(t)
		m.in.EXPECT().GetInstance(gomock.Any(), "i-1").Return(nil, cloudapi.NewError(cloudapi.ErrNotFound, "", "", nil))
		c, err := cloudclient.New(m.client, cloudclient.Options{ProviderName: "shared", Registry: reg})
		require.NoError(t, err, "a second Client of the same provider reuses the metrics")
		clients = append(clients, c)
	}
	for _, c := range clients {
		_, err := c.Instances().GetInstance(context.Background(), "i-1")
		require.ErrorIs(t, err, cloudapi.ErrNotFound)
	}
	assert.Equal(t, 2.0, counterValue(t, reg, "cloudprovider_shared_api_request_errors_total", map[string]string{"class": "not_found"}))

	t.Run("default registry", func(t *testing.T) {
		for range 2 {
			_, err := cloudclient.New(newMocks(t).client, cloudclient.Options{ProviderName: "legacy-default"})
			require.NoError(t, err)
		}
		families, err := legacyregistry.DefaultGatherer.Gather()
		require.NoError(t, err)
		var names []string
		for _, f := range families {
			names = append(names, f.GetName())
		}
		// Histograms show up before any sample; counter vectors only with a sample.
		assert.Contains(t, names, "cloudprovider_legacy_default_api_rate_limiter_wait_seconds")
	})
}

func TestMetricsConflict(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	other := metrics.NewCounterVec(&metrics.CounterOpts{Name: "cloudprovider_test_api_retries_total", Help: "Something else.", StabilityLevel: metrics.ALPHA}, []string{"path"})
	require.NoError(t, reg.Register(other))

	_, err := cloudclient.New(newMocks(t).client, cloudclient.Options{ProviderName: "test", Registry: reg})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cloudprovider_test_api_retries_total")

	_, err = cloudclient.New(newMocks(t).client, cloudclient.Options{ProviderName: "test", Registry: cloudclient.RegistererFunc(func(metrics.Registerable) error {
		return errors.New("registry closed")
	})})
	require.ErrorContains(t, err, "registry closed")
}
