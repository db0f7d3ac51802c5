package instances_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/providerid"
)

// TestNoFalseNotExistUnderFaults asks InstanceExists 100,000 times while 30% of cloud
// calls fail (timeouts, 5xx-like transients, throttling). The snapshot is disabled
// (MaxAge 0), so every answer comes from fresh, faulty cloud calls. An instance that
// exists must never be reported gone; one that does not may be reported gone or fail, but
// never reported present. (A not-found is gone only when the list worked; while it
// fails, the lookup fails.)
func TestNoFalseNotExistUnderFaults(t *testing.T) {
	const (
		live    = 100
		missing = 20
		calls   = 100_000
	)
	cfg := fakecloud.Config{PageSize: 50}
	for i := range live {
		cfg.Instances = append(cfg.Instances, fakecloud.Instance{ID: fmt.Sprintf("i-%03d", i), Name: fmt.Sprintf("n-%03d", i)})
	}
	backend, err := fakecloud.New(cfg)
	require.NoError(t, err)
	faulty := faultinject.Wrap(backend, faultinject.Config{
		Seed: 42,
		Rules: []faultinject.Rule{
			{Probability: 0.10, Kind: faultinject.Timeout},
			{Probability: 0.12, Kind: faultinject.Transient},
			{Probability: 0.12, Kind: faultinject.Throttle},
		},
		Clock: clocktest.NewStepping(time.Unix(0, 0)), // timeouts end at once, on a clock of their own
	})
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	inst, err := instances.New(
		// A clock that moves a minute each time it is read: no list is ever held back by
		// the backoff after a failed one, so every lookup lists afresh, and a GetInstance
		// not-found counts as gone whenever the list before it succeeded.
		instancecache.New(faulty.Instances(), instancecache.Options{MaxAge: 0, Clock: clocktest.NewTicking(time.Unix(0, 0), time.Minute)}),
		instances.Options{ProviderID: format})
	require.NoError(t, err)

	nodes := make([]*corev1.Node, 0, live+missing)
	for i := range live + missing {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n-%03d", i)},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("ccmkit://i-%03d", i)}})
	}
	var falseGone, falsePresent, errorsSeen, goneSeen atomic.Int64
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < calls; k += workers {
				idx := k % len(nodes)
				exists, err := inst.InstanceExists(context.Background(), nodes[idx])
				switch {
				case err != nil:
					errorsSeen.Add(1)
					if cloudapi.IsNotFound(err) {
						falseGone.Add(1) // a not-found error must have become (false, nil)
					}
				case idx < live && !exists:
					falseGone.Add(1)
				case idx >= live && exists:
					falsePresent.Add(1)
				case idx >= live:
					goneSeen.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	injected := faulty.Injected().Total()
	t.Logf("%d InstanceExists calls: %d errors returned, %d correct 'gone', %d cloud calls, %d faults injected",
		calls, errorsSeen.Load(), goneSeen.Load(), injected.Calls, sumFaults(injected))
	assert.Zero(t, falseGone.Load(), "an existing instance was reported gone")
	assert.Zero(t, falsePresent.Load(), "a missing instance was reported present")
	assert.Greater(t, sumFaults(injected), int(injected.Calls)/5, "faults really were injected: more than one cloud call in five failed")
	assert.Positive(t, goneSeen.Load(), "missing instances really were reported gone when the cloud said so")
	assert.Positive(t, errorsSeen.Load())
}

func sumFaults(c faultinject.OpCounts) int {
	n := 0
	for _, v := range c.Faults {
		n += v
	}
	return n
}
