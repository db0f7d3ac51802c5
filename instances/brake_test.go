package instances_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/providerid"
)

// switched is Instances over NewLookup (the brake's defaults) on a cloud whose ten
// instances of the cluster (i-0 to i-9, Nodes node-0 to node-9) were listed, then
// switched to another project's (x-0 to x-4, named other-0 to other-4, running), which
// the lookup has listed: the brake is engaged.
type switched struct {
	inst   *instances.Instances
	clock  *clocktesting.FakePassiveClock
	events *record.FakeRecorder
}

func newSwitched(t *testing.T) *switched {
	t.Helper()
	var cluster []fakecloud.Instance
	for i := range 10 {
		cluster = append(cluster, fakecloud.Instance{ID: fmt.Sprintf("i-%d", i), Name: fmt.Sprintf("node-%d", i)})
	}
	cloud, err := fakecloud.New(fakecloud.Config{Instances: cluster})
	require.NoError(t, err)
	s := &switched{clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), events: record.NewFakeRecorder(100)}
	lookup, err := instances.NewLookup(cloud.Instances(), instances.LookupOptions{Clock: s.clock})
	require.NoError(t, err)
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	s.inst, err = instances.New(lookup, instances.Options{ProviderID: format, Recorder: s.events})
	require.NoError(t, err)
	exists, err := s.inst.InstanceExists(t.Context(), clusterNode(0)) // the cluster's list
	require.NoError(t, err)
	require.True(t, exists)

	for i := range 10 {
		require.NoError(t, cloud.DeleteInstance(fmt.Sprintf("i-%d", i)))
	}
	for i := range 5 {
		require.NoError(t, cloud.AddInstance(cloudapi.Instance{ID: fmt.Sprintf("x-%d", i), Name: fmt.Sprintf("other-%d", i), State: cloudapi.InstanceRunning}))
	}
	s.clock.SetTime(s.clock.Now().Add(2 * time.Minute))
	_, err = s.inst.InstanceExists(t.Context(), clusterNode(1)) // the other project's list
	require.ErrorIs(t, err, instances.ErrDeletionBrake, "engaged")
	<-s.events.Events
	return s
}

// clusterNode returns the cluster's Node node-i, on instance i-i.
func clusterNode(i int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("ccmkit://i-%d", i)}}
}

// Instances' reads for a Node (InstancesV2, which the node controllers call with the Node)
// release the engaged brake when a list has the Node's instance live: a new Node's. The
// legacy methods, given a provider ID or a name but no Node (no upstream controller calls
// them while InstancesV2 is offered), never do, whatever they find running.
func TestBrakeReleasedOnlyByInstancesV2(t *testing.T) {
	newNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other-0"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://x-0"}}
	for _, tc := range []struct {
		name     string
		read     func(ctx context.Context, i *instances.Instances) error
		releases bool
	}{
		{name: "InstanceMetadata of a Node", releases: true, read: func(ctx context.Context, i *instances.Instances) error {
			_, err := i.InstanceMetadata(ctx, newNode)
			return err
		}},
		{name: "InstanceExists of a Node", releases: true, read: func(ctx context.Context, i *instances.Instances) error {
			_, err := i.InstanceExists(ctx, newNode)
			return err
		}},
		{name: "InstanceExistsByProviderID", read: func(ctx context.Context, i *instances.Instances) error {
			_, err := i.InstanceExistsByProviderID(ctx, newNode.Spec.ProviderID)
			return err
		}},
		{name: "NodeAddressesByProviderID", read: func(ctx context.Context, i *instances.Instances) error {
			_, err := i.NodeAddressesByProviderID(ctx, newNode.Spec.ProviderID)
			return err
		}},
		{name: "InstanceID by name", read: func(ctx context.Context, i *instances.Instances) error {
			_, err := i.InstanceID(ctx, types.NodeName(newNode.Name))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSwitched(t)
			require.NoError(t, tc.read(t.Context(), s.inst), "x-0 is running")
			s.clock.SetTime(s.clock.Now().Add(2 * time.Minute)) // a list that has x-0 live
			exists, err := s.inst.InstanceExists(t.Context(), clusterNode(2))
			if tc.releases {
				require.NoError(t, err, "released")
				assert.False(t, exists, "released: the Node's instance reads as gone")
				return
			}
			require.ErrorIs(t, err, instances.ErrDeletionBrake, "still engaged")
		})
	}
}

// The Node gets the brake's event at its own first refusal, also after a legacy method
// was refused for its instance.
func TestBrakeEventAfterALegacyRefusal(t *testing.T) {
	s := newSwitched(t)
	_, err := s.inst.InstanceExistsByProviderID(t.Context(), "ccmkit://i-3")
	require.ErrorIs(t, err, instances.ErrDeletionBrake)
	_, err = s.inst.InstanceExists(t.Context(), clusterNode(3))
	require.ErrorIs(t, err, instances.ErrDeletionBrake)
	require.Len(t, s.events.Events, 1, "the Node's event")
	assert.Contains(t, <-s.events.Events, instances.EventDeletionBrake)
}
