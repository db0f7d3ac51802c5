package provider

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

// TestMaxRetryAfterReachesTheClient checks that cloudAPI.maxRetryAfter caps the cloud's
// Retry-After in the instrumented client: the cloud asks for an hour, the config allows a
// millisecond, and a call whose context ends in a minute is retried instead of given up.
func TestMaxRetryAfterReachesTheClient(t *testing.T) {
	cfg, err := ReadConfig(nil, DefaultProviderName)
	require.NoError(t, err)
	cfg.CloudAPI.MaxRetryAfter = time.Millisecond
	cloud := faultinject.Wrap(instancesOnly(), faultinject.Config{ThrottleRetryAfter: time.Hour})
	cloud.Script(cloudapi.OpGetInstance, faultinject.Fault{Kind: faultinject.Throttle})
	client, err := instrument(cloud, *cfg, testOptions().withDefaults())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = client.Instances().GetInstance(ctx, "i-404")
	require.ErrorIs(t, err, cloudapi.ErrNotFound, "the retry after the capped wait reached the cloud: %v", err)
	require.Equal(t, 2, cloud.Injected().Ops[cloudapi.OpGetInstance].Calls)
}
