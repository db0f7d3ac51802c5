package cloudclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// TestRetriedUpdateSendsOnlyWhatIsLeft updates a load balancer through the Client while
// the cloud loses the first attempt's answer (applied) or refuses it (not applied), and
// checks with the fake's history that every update the cloud saw described exactly the
// change it made: a retry after an applied attempt must not send the same changes again.
func TestRetriedUpdateSendsOnlyWhatIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first       faultinject.Kind
		wantUpdates int // updates the cloud applied
	}{
		{"answer lost, update applied", faultinject.Ambiguous, 1},
		{"refused, not applied", faultinject.Transient, 1},
		{"throttled, not applied", faultinject.Throttle, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1"}, {ID: "i-2"}}})
			require.NoError(t, err)
			faults := faultinject.Wrap(cloud, faultinject.Config{ThrottleRetryAfter: 10 * time.Millisecond})
			c, err := cloudclient.New(faults, cloudclient.Options{ProviderName: "test", Registry: metrics.NewKubeRegistry(), Rand: func() float64 { return 0 }})
			require.NoError(t, err)
			_, ctx := ktesting.NewTestContext(t)
			lbs, _ := c.LoadBalancers()

			spec := cloudapi.LoadBalancerSpec{
				Name:      "web",
				Listeners: []cloudapi.Listener{{Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
				Targets:   []string{"i-1"},
				Tags:      map[string]string{cloudapi.TagCluster: "c1"},
			}
			lb, err := lbs.CreateLoadBalancer(ctx, spec)
			require.NoError(t, err)

			desired := spec
			desired.Targets = []string{"i-1", "i-2"}
			faults.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: tc.first})
			got, err := lbs.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{
				Spec: desired, Changes: cloudapi.DiffLoadBalancer(lb.Spec, desired),
			})
			require.NoError(t, err)
			assert.Equal(t, []string{"i-1", "i-2"}, got.Spec.Targets)

			var updates int
			for _, ev := range cloud.LoadBalancerHistory() {
				if ev.Op == cloudapi.OpUpdateLoadBalancer {
					updates++
					assert.True(t, ev.ChangesMatch(), "update described %+v but changed %+v", ev.Changes, ev.Actual)
				}
			}
			assert.Equal(t, tc.wantUpdates, updates)
		})
	}
}

// TestRetriedUpdateRereadIsACallOfItsOwn: the re-read before a retried update runs outside
// the update's attempt and its rate-limit slot. With a client limit so low that no second
// call fits in one attempt's timeout, the update still succeeds, nothing is counted as
// throttled (the cloud throttled nothing), and the read is counted as a GetLoadBalancer.
func TestRetriedUpdateRereadIsACallOfItsOwn(t *testing.T) {
	e := newEnv(t, func(o *cloudclient.Options) { o.QPS = 1; o.Burst = 1; o.Timeout = 200 * time.Millisecond })
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpUpdateLoadBalancer, "lb-1", errors.New("connection reset"))
	reread := &cloudapi.LoadBalancer{ID: "lb-1", Spec: lbStale}
	retry := lbUpdate
	retry.Current = reread // the retry is based on the read
	gomock.InOrder(
		e.mocks.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), "lb-1", lbUpdate).Return(nil, transient),
		e.mocks.lb.EXPECT().GetLoadBalancer(gomock.Any(), "lb-1").Return(reread, nil),
		e.mocks.lb.EXPECT().UpdateLoadBalancer(gomock.Any(), "lb-1", retry).Return(&cloudapi.LoadBalancer{ID: "lb-1", Spec: lbSpec}, nil),
	)
	lbs, _ := e.client.LoadBalancers()
	_, err := lbs.UpdateLoadBalancer(e.ctx, "lb-1", lbUpdate)
	require.NoError(t, err)
	assert.Zero(t, e.counter(t, "throttled_total", nil), "the cloud throttled nothing")
	n, _ := e.histogram(t, "request_duration_seconds", map[string]string{"operation": string(cloudapi.OpGetLoadBalancer)})
	assert.Equal(t, uint64(1), n, "the re-read is a GetLoadBalancer call of its own")
	n, _ = e.histogram(t, "request_duration_seconds", map[string]string{"operation": string(cloudapi.OpUpdateLoadBalancer)})
	assert.Equal(t, uint64(2), n, "two update attempts")
}

// namelessCloud reports load balancers without listener names, as a cloud that does not
// keep them.
type namelessCloud struct{ cloudapi.Client }

func (c namelessCloud) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return namelessLBs{api}, ok
}

type namelessLBs struct{ cloudapi.LoadBalancerAPI }

func (a namelessLBs) GetLoadBalancer(ctx context.Context, id string) (*cloudapi.LoadBalancer, error) {
	lb, err := a.LoadBalancerAPI.GetLoadBalancer(ctx, id)
	if lb != nil {
		for i := range lb.Spec.Listeners {
			lb.Spec.Listeners[i].Name = ""
		}
	}
	return lb, err
}

// TestRetriedUpdateComparesAsTheShape: after an update of unknown outcome that was
// applied, the re-read of a cloud that does not keep listener names is compared as the
// shape says (Options.LoadBalancerShape), so the applied update is not sent again.
func TestRetriedUpdateComparesAsTheShape(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shape   cloudapi.LoadBalancerShape
		updates int
	}{
		{"shape declared", cloudapi.LoadBalancerShape{NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames}}, 1},
		{"no shape: the names read as changes", cloudapi.LoadBalancerShape{}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1"}, {ID: "i-2"}}})
			require.NoError(t, err)
			faults := faultinject.Wrap(namelessCloud{cloud}, faultinject.Config{})
			c, err := cloudclient.New(faults, cloudclient.Options{ProviderName: "test", Registry: metrics.NewKubeRegistry(), Rand: func() float64 { return 0 },
				LoadBalancerShape: tc.shape})
			require.NoError(t, err)
			_, ctx := ktesting.NewTestContext(t)
			lbs, _ := c.LoadBalancers()
			spec := cloudapi.LoadBalancerSpec{Name: "web", Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
				Targets: []string{"i-1"}, Tags: map[string]string{cloudapi.TagCluster: "c1"}}
			lb, err := lbs.CreateLoadBalancer(ctx, spec)
			require.NoError(t, err)
			desired := spec.Clone()
			desired.Targets = []string{"i-1", "i-2"}
			faults.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
			_, err = lbs.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: desired, Changes: cloudapi.DiffLoadBalancer(lb.Spec, desired)})
			require.NoError(t, err)
			updates := 0
			for _, ev := range cloud.LoadBalancerHistory() {
				if ev.Op == cloudapi.OpUpdateLoadBalancer {
					updates++
				}
			}
			assert.Equal(t, tc.updates, updates)
		})
	}
}
