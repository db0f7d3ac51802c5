package zones_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/providerid"
	"github.com/ccmkit/ccmkit/zones"
)

// A zone is no Node's read (the cloud node controller asks InstancesV2 instead): after a
// project switch, a zone of the other project's running instance never releases the
// shared lookup's deletion brake, neither while it is engaged nor by an instance found
// before the other project's first instance list, which must still engage it.
func TestZoneReadsNeverReleaseTheBrake(t *testing.T) {
	for _, when := range []string{"while engaged", "before the other project's first list"} {
		t.Run(when, func(t *testing.T) {
			ctx := t.Context()
			var cluster []fakecloud.Instance
			for i := range 10 {
				cluster = append(cluster, fakecloud.Instance{ID: fmt.Sprintf("i-%d", i), Name: fmt.Sprintf("node-%d", i)})
			}
			cloud, err := fakecloud.New(fakecloud.Config{Instances: cluster})
			require.NoError(t, err)
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			lookup, err := instances.NewLookup(cloud.Instances(), instances.LookupOptions{Clock: clk})
			require.NoError(t, err)
			format, err := providerid.Default("ccmkit")
			require.NoError(t, err)
			nodes, err := instances.New(lookup, instances.Options{ProviderID: format})
			require.NoError(t, err)
			z, err := zones.New(lookup, zones.Options{ProviderID: format})
			require.NoError(t, err)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-0"}}
			expire := func() { clk.SetTime(clk.Now().Add(2 * time.Minute)) }
			engaged := func(msg string) {
				t.Helper()
				_, err := nodes.InstanceExists(ctx, node)
				require.ErrorIs(t, err, instances.ErrDeletionBrake, msg)
			}
			exists, err := nodes.InstanceExists(ctx, node) // the cluster's instance list
			require.NoError(t, err)
			require.True(t, exists)

			for i := range 10 {
				require.NoError(t, cloud.DeleteInstance(fmt.Sprintf("i-%d", i)))
			}
			require.NoError(t, cloud.AddInstance(cloudapi.Instance{ID: "x-0", Name: "other-0", Zone: "z-1", State: cloudapi.InstanceRunning}))
			if when == "while engaged" {
				expire()
				engaged("the other project's list engages the brake")
			}
			zone, err := z.GetZoneByProviderID(ctx, "ccmkit://x-0")
			require.NoError(t, err)
			require.Equal(t, "z-1", zone.FailureDomain)
			expire() // an instance list that has x-0 live
			engaged("engaged after the zone")
		})
	}
}
