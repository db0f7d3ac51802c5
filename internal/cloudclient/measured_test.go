package cloudclient_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// arrival is one call that reached the cloud.
type arrival struct {
	at        time.Time // when it was sent
	answered  time.Time // when its answer came back
	throttled bool
}

// recorder sits between the Client under test and the cloud and records every call that
// reaches the cloud. It has instances only.
type recorder struct {
	inner cloudapi.InstanceAPI

	mu       sync.Mutex
	arrivals []arrival
}

func (r *recorder) Instances() cloudapi.InstanceAPI                 { return r }
func (r *recorder) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) { return nil, false }
func (r *recorder) Routes() (cloudapi.RouteAPI, bool)               { return nil, false }

func (r *recorder) GetInstance(ctx context.Context, id string) (*cloudapi.Instance, error) {
	sent := time.Now()
	inst, err := r.inner.GetInstance(ctx, id)
	r.record(arrival{at: sent, answered: time.Now(), throttled: errors.Is(err, cloudapi.ErrThrottled)})
	return inst, err
}

func (r *recorder) ListInstances(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.InstancePage, error) {
	sent := time.Now()
	page, err := r.inner.ListInstances(ctx, opts)
	r.record(arrival{at: sent, answered: time.Now(), throttled: errors.Is(err, cloudapi.ErrThrottled)})
	return page, err
}

func (r *recorder) record(a arrival) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals = append(r.arrivals, a)
}

// TestSustainedRateUnderThrottling runs many concurrent reads, for a bounded real time,
// from a Client allowed 100 calls per second against a cloud that allows 20 (burst 5) and
// throttles the rest with Retry-After. From the first throttled answer on, the calls that
// reach the cloud, throttled ones included, must stay within what the cloud allows in
// that time (20 per second plus its burst), within half as much again in any 500 ms, and
// every call must succeed.
func TestSustainedRateUnderThrottling(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 1.5 s of real time")
	}
	t.Parallel() // it mostly waits
	const (
		cloudQPS    = 20
		cloudBurst  = 5
		clientQPS   = 100
		clientBurst = 10
		workers     = 10
		run         = 1400 * time.Millisecond
		// slide is the window in which the rate must hold, too, not only on average.
		slide = 500 * time.Millisecond
	)
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1"}}})
	require.NoError(t, err)
	chaos := faultinject.Wrap(cloud, faultinject.Config{RateLimit: &faultinject.RateLimit{QPS: cloudQPS, Burst: cloudBurst}})
	rec := &recorder{inner: chaos.Instances()}
	reg := metrics.NewKubeRegistry()
	c, err := cloudclient.New(rec, cloudclient.Options{ProviderName: "test", QPS: clientQPS, Burst: clientBurst, Registry: reg})
	require.NoError(t, err)
	ctx := klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))))

	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(run)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := c.Instances().GetInstance(callCtx, "i-1")
				cancel()
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					t.Errorf("call failed: %v", err)
				}
			}
		})
	}
	wg.Wait()
	end := time.Now()

	rec.mu.Lock()
	arrivals := rec.arrivals
	rec.mu.Unlock()
	first := -1
	for i, a := range arrivals {
		if a.throttled && (first < 0 || a.answered.Before(arrivals[first].answered)) {
			first = i
		}
	}
	require.GreaterOrEqual(t, first, 0, "the cloud never throttled: the test measures nothing")
	since := arrivals[first].answered
	window := end.Sub(since)
	var after, throttledAfter int
	for _, a := range arrivals {
		if !a.at.Before(since) {
			after++
			if a.throttled {
				throttledAfter++
			}
		}
	}
	allowed := cloudQPS*window.Seconds() + cloudBurst
	// The most attempts sent in any window of length slide after the first throttled answer.
	var sent []time.Time
	for _, a := range arrivals {
		if !a.at.Before(since) {
			sent = append(sent, a.at)
		}
	}
	slices.SortFunc(sent, time.Time.Compare)
	peak := 0
	for i := range sent {
		j, _ := slices.BinarySearchFunc(sent, sent[i].Add(slide), time.Time.Compare)
		peak = max(peak, j-i)
	}
	// In a short window the Client may exceed what the cloud allows: its rate grows back
	// above the cloud's until the cloud throttles it again (the package documentation
	// says "slightly above"), and the longer a loaded machine stretches the run, the
	// further it grows. So the window gets half the cloud's rate as headroom. A Client that
	// never lowered its rate, held back by the Retry-After alone, still exceeds it here, and
	// the total over the whole run below, by far.
	cloudInSlide := cloudQPS*slide.Seconds() + cloudBurst
	allowedInSlide := 1.5*cloudQPS*slide.Seconds() + cloudBurst
	var throttledTotal int
	for _, a := range arrivals {
		if a.throttled {
			throttledTotal++
		}
	}
	t.Logf("%d calls in %s (%d failed); %d attempts reached the cloud, %d throttled", calls.Load(), end.Sub(start).Round(time.Millisecond), failed.Load(), len(arrivals), throttledTotal)
	t.Logf("first throttled answer after %s; since then %d attempts in %s = %.1f/s (%d throttled); the cloud allows %.1f in that time (%d/s + burst %d)",
		since.Sub(start).Round(time.Millisecond), after, window.Round(time.Millisecond), float64(after)/window.Seconds(), throttledAfter, allowed, cloudQPS, cloudBurst)

	t.Logf("at most %d attempts in any %s since (the cloud allows %.0f, the test %.0f)", peak, slide, cloudInSlide, allowedInSlide)

	assert.Zero(t, failed.Load(), "every call succeeds")
	assert.LessOrEqual(t, float64(peak), allowedInSlide, "attempts that reached the cloud in any %s after the first throttled answer", slide)
	assert.LessOrEqual(t, float64(after), allowed, "attempts that reached the cloud after the first throttled answer")
	assert.Equal(t, float64(throttledTotal), counterValue(t, reg, "cloudprovider_test_api_throttled_total", nil), "every throttled answer is counted")
}
