package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
	"github.com/ccmkit/ccmkit/providerid"
)

// noCloud is a load balancer API of which every call panics: the planner's tests run
// without a cloud, and a call would fail them.
type noCloud struct{ cloudapi.LoadBalancerAPI }

// testPlanner is the planner of a LoadBalancer built as New builds it, with the adapter
// setting "tier" (replaced on change) and the cluster ID "c1".
func testPlanner(t *testing.T) *planner {
	t.Helper()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	l, err := New(noCloud{}, Options{ClusterID: "c1", ProviderID: format,
		Settings: Settings{{Name: "tier", Values: []string{"standard", "premium"}, Replace: true, Doc: "The tier."}}})
	require.NoError(t, err)
	return l.p
}

// plannedService is a Service "web" (UID "u-web", port 80 to node port 30080) with the
// annotations ann, keys after DefaultAnnotationPrefix.
func plannedService(name string, ann map[string]string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("u-" + name), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	for k, v := range ann {
		svc.Annotations[DefaultAnnotationPrefix+k] = v
	}
	return svc
}

func plannedNodes(n int) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{"pool": fmt.Sprint("p", i%2)}},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("ccmkit://i-%d", i)}}
	}
	return out
}

// TestPlannerReplaces: a change the cloud cannot make in place (internal and public, a
// setting declared Replace) takes a replacement, refused with keep-on-delete, and nothing
// else does.
func TestPlannerReplaces(t *testing.T) {
	p := testPlanner(t)
	current := &cloudapi.LoadBalancer{ID: "lb-1", Spec: cloudapi.LoadBalancerSpec{SettingValues: map[string]string{"tier": "standard"}}}
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		internal bool
		tier     string
		replace  bool
		err      string
	}{
		{name: "nothing that takes a replacement", tier: "standard"},
		{name: "internal to public", internal: true, tier: "standard", replace: true},
		{name: "internal with keep-on-delete", ann: map[string]string{AnnotationKeepOnDelete: "true"}, internal: true, tier: "standard", err: "with keep-on-delete, ccmkit deletes none"},
		{name: "a replaced setting", tier: "premium", replace: true},
		{name: "a replaced setting with keep-on-delete", ann: map[string]string{AnnotationKeepOnDelete: "true"}, tier: "premium", err: `has tier "standard"`},
		{name: "a malformed keep-on-delete", ann: map[string]string{AnnotationKeepOnDelete: "perhaps"}, tier: "premium", err: AnnotationKeepOnDelete},
		{name: "keep-on-delete without a change", ann: map[string]string{AnnotationKeepOnDelete: "true"}, tier: "standard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := cloudapi.LoadBalancerSpec{Internal: tc.internal, SettingValues: map[string]string{"tier": tc.tier}}
			replace, err := p.replaces(klog.Logger{}, plannedService("web", tc.ann), current, want)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.False(t, replace)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.replace, replace)
		})
	}
}

// TestPlannerUpdateWant: what a node sync writes, for each case of a malformed or
// disagreeing Service: the node set reaches the targets unless the Service's selector, or
// its share, says otherwise; internal and replaced settings never change.
func TestPlannerUpdateWant(t *testing.T) {
	nodes := plannedNodes(4)
	shareKey := "default/team"
	owner := shareOwnerPrefix + shareKey
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		owner   string
		current cloudapi.LoadBalancerSpec
		// others are the share's other members, as the shareBook knows them.
		others map[string]plan.Member
		check  func(t *testing.T, w wanted)
	}{
		{
			name:    "well-formed: every node, grouped, internal kept",
			current: cloudapi.LoadBalancerSpec{Internal: true, Targets: []string{"i-0"}, SettingValues: map[string]string{"tier": "premium"}},
			check: func(t *testing.T, w wanted) {
				require.NoError(t, w.serr)
				assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3"}, w.spec.Targets)
				assert.True(t, w.grouped)
				assert.True(t, w.spec.Internal, "a node sync never switches internal and public")
				assert.Equal(t, "premium", w.spec.SettingValues["tier"], "a node sync never changes a replaced setting")
			},
		},
		{
			name:    "malformed annotation: the nodes still reach the targets, the rest as it is",
			ann:     map[string]string{AnnotationHealthCheckPath: "no-slash"},
			current: cloudapi.LoadBalancerSpec{Targets: []string{"i-0"}, TargetGroup: "tg-old", HealthCheck: &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1}},
			check: func(t *testing.T, w wanted) {
				var ae *AnnotationError
				require.ErrorAs(t, w.serr, &ae)
				assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3"}, w.spec.Targets)
				assert.Empty(t, w.spec.TargetGroup, "the group is chosen again for the nodes")
				assert.True(t, w.grouped)
				assert.Equal(t, &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 1}, w.spec.HealthCheck, "what the annotation would change stays")
			},
		},
		{
			name:    "malformed node selector: the targets stay",
			ann:     map[string]string{AnnotationNodeSelector: "pool in (("},
			current: cloudapi.LoadBalancerSpec{Targets: []string{"i-0"}, TargetGroup: "tg-old"},
			check: func(t *testing.T, w wanted) {
				require.Error(t, w.serr)
				assert.Equal(t, []string{"i-0"}, w.spec.Targets)
				assert.Equal(t, "tg-old", w.spec.TargetGroup)
				assert.False(t, w.grouped, "every node is not what its user asked for")
			},
		},
		{
			name:    "node selector: its nodes only",
			ann:     map[string]string{AnnotationNodeSelector: "pool=p1"},
			current: cloudapi.LoadBalancerSpec{},
			check: func(t *testing.T, w wanted) {
				require.NoError(t, w.serr)
				assert.Equal(t, []string{"i-1", "i-3"}, w.spec.Targets)
				require.NotNil(t, w.sel)
				assert.Equal(t, "pool=p1", w.sel.String())
			},
		},
		{
			name:  "a share's Service that disagrees: the share's load balancer as it is",
			ann:   map[string]string{AnnotationShare: "team", AnnotationNodeSelector: "pool=p1"},
			owner: owner,
			current: cloudapi.LoadBalancerSpec{Targets: []string{"i-0", "i-1", "i-2", "i-3"}, Tags: map[string]string{cloudapi.TagShareNodes: ""},
				Listeners: []cloudapi.Listener{{Name: plan.ListenerName("u-other", "http"), Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443}}},
			others: map[string]plan.Member{"u-other": {Name: "default/other", Agreed: true,
				Part: cloudapi.LoadBalancerSpec{Tags: map[string]string{cloudapi.TagShareNodes: ""}}}},
			check: func(t *testing.T, w wanted) {
				require.ErrorIs(t, w.serr, ErrShareConflict)
				assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3"}, w.spec.Targets, "the share's targets follow a Service that agrees")
				assert.False(t, w.grouped)
				assert.Nil(t, w.asked)
			},
		},
		{
			name:  "a share's Service: its listeners as they are, the node set reaches the targets",
			ann:   map[string]string{AnnotationShare: "team"},
			owner: owner,
			current: cloudapi.LoadBalancerSpec{Targets: []string{"i-0"}, Tags: map[string]string{cloudapi.TagShareNodes: ""},
				Listeners: []cloudapi.Listener{{Name: plan.ListenerName("u-web", "http"), Protocol: cloudapi.ProtocolTCP, Port: 8080, TargetPort: 30080}}},
			check: func(t *testing.T, w wanted) {
				require.NoError(t, w.serr)
				assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3"}, w.spec.Targets)
				require.Len(t, w.spec.Listeners, 1)
				assert.Equal(t, int32(8080), w.spec.Listeners[0].Port, "a node sync never changes whose listeners a share's load balancer has")
				require.Len(t, w.asked, 1)
				assert.Equal(t, int32(80), w.asked[0].Port, "what the Service asks for now")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlanner(t)
			svc := plannedService("web", tc.ann)
			owner := tc.owner
			if owner == "" {
				owner = string(svc.UID)
			}
			for uid, m := range tc.others {
				p.shares.join(owner, uid, m)
			}
			current := &cloudapi.LoadBalancer{ID: "lb-1", Spec: tc.current}
			if current.Spec.Tags == nil {
				current.Spec.Tags = map[string]string{}
			}
			maps.Copy(current.Spec.Tags, ownerTags("c1", owner)) // the owner's, as read: not one being adopted
			tc.check(t, p.updateWant(klog.Logger{}, svc, owner, nodes, 0, current))
			_, member := p.shares.member(owner, string(svc.UID))
			assert.False(t, member, "a node sync records no member")
		})
	}
}

// TestPlannerCreationJoinsWhatAnotherMemberMade: a create that found a load balancer of
// its owner afterwards writes want to it as it is, for a Service of its own; for a share,
// joined with what is there (another Service of the share may have made it).
func TestPlannerCreationJoinsWhatAnotherMemberMade(t *testing.T) {
	p := testPlanner(t)
	want := cloudapi.LoadBalancerSpec{Name: "n", Tags: map[string]string{cloudapi.TagShareNodes: ""},
		Listeners: []cloudapi.Listener{{Name: plan.ListenerName("u-web", "http"), Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}}
	found := &cloudapi.LoadBalancer{ID: "lb-1", Spec: cloudapi.LoadBalancerSpec{Name: "n", Tags: map[string]string{cloudapi.TagShareNodes: ""},
		Listeners: []cloudapi.Listener{{Name: plan.ListenerName("u-other", "http"), Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443}}}}

	own := p.creation(klog.Logger{}, plannedService("web", nil), "u-web", want)
	got, err := own.again(found)
	require.NoError(t, err)
	assert.Equal(t, want, got, "a Service's own load balancer is written as the Service asks")
	assert.Contains(t, own.taken(), "adopt it with annotation")

	svc := plannedService("web", map[string]string{AnnotationShare: "team"})
	shared := p.creation(klog.Logger{}, svc, shareOwnerPrefix+"default/team", want)
	got, err = shared.again(found)
	require.NoError(t, err)
	assert.Len(t, got.Listeners, 2, "the other Service's listener stays beside the Service's")
	_, member := p.shares.member(shareOwnerPrefix+"default/team", "u-web")
	assert.True(t, member)
	assert.Contains(t, shared.taken(), "a share cannot adopt")
	assert.False(t, errors.Is(err, ErrShareConflict))
}
