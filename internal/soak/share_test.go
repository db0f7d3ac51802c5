package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// How a run with shares (params.shares) puts Services in shares. The generator gives a
// create-service or update-annotations operation a share of a small set (shareNames) or
// none, so that Services join, leave and move between shares, and meet there on the same
// ports or not. The run sets the share annotation as a user would, with two rules a
// careful user keeps:
//
//   - A Service that names a load balancer by ID (load-balancer-id, see adopt_test.go)
//     stays out of shares (the two annotations refuse each other), and a Service of a
//     share sets neither load-balancer-id nor keep-on-delete (it never adopts or keeps).
//   - An agreeing one (op.Agree) asks for what the share asks for beside its ports: no
//     load balancer annotation but the share, externalTrafficPolicy Cluster, no source
//     ranges, IPv4 only. The others ask for what their annotations say, and may disagree:
//     their syncs fail (loadbalancer.ErrShareConflict) while another Service of the
//     share asks for what its load balancer has, by design.
//
// What must hold, besides every check of the other runs for the Services of no share:
//
//   - at every write: a shared load balancer is never deleted while a Service of its share
//     exists (of type LoadBalancer, not being deleted) and no other load balancer of the
//     share is left (a duplicate may go), but by a Service of the share that replaces it
//     while no other one has a listener on it; a write about a Service removes no
//     listener of another Service that exists (checkShareDeleted, checkShareListener);
//   - once settled: at most one load balancer per share, none of a share without a
//     Service, and every listener of a shared load balancer is a Service's of the share
//     (checkDuplicateLB, checkOrphanLB, checkOrphanListener). A Service of a share may
//     still wait for a retry (it disagrees), and its load balancer, status and listeners
//     are not checked against its own spec.

// annotationShare is the share annotation's key.
var annotationShare = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationShare

// shareOf returns the share a Service's annotation names, "" for none or no Service.
func shareOf(svc *corev1.Service) string {
	if svc == nil {
		return ""
	}
	return svc.Annotations[annotationShare]
}

// shareKey is the cloudapi.TagShare value of share name (in the one namespace).
func shareKey(name string) string { return namespace + "/" + name }

// inShare reports whether svc is a Service of the share key: of type LoadBalancer, not
// being deleted, naming it. Such a Service keeps the share's load balancer.
func inShare(svc *corev1.Service, key string) bool {
	return svc != nil && wantsLoadBalancer(svc) && svc.DeletionTimestamp == nil && shareOf(svc) != "" && shareKey(shareOf(svc)) == key
}

// members returns the UIDs of the Services of the share key in w.
func members(w *world, key string) map[string]bool {
	out := map[string]bool{}
	for _, name := range w.serviceNames() {
		if svc := w.service(name); inShare(svc, key) {
			out[string(svc.UID)] = true
		}
	}
	return out
}

// listenerUID is the UID of the Service a shared load balancer's listener belongs to: the
// part of its name before ':' (package loadbalancer's naming).
func listenerUID(name string) string {
	uid, _, _ := strings.Cut(name, ":")
	return uid
}

// prepareShare sets the share annotation o asks for in a run with shares (see the rules
// above); without shares it does nothing.
func (s *sim) prepareShare(svc *corev1.Service, o op) {
	if !s.p.shares {
		return
	}
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	delete(svc.Annotations, annotationShare)
	if o.Share == "" || svc.Annotations[annotationID] != "" {
		return
	}
	delete(svc.Annotations, annotationKeep)
	if o.Agree {
		for k := range svc.Annotations {
			if strings.HasPrefix(k, loadbalancer.DefaultAnnotationPrefix) {
				delete(svc.Annotations, k)
			}
		}
		svc.Spec.LoadBalancerSourceRanges = nil
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	svc.Annotations[annotationShare] = o.Share
}

// lbWrite checks, as a load balancer write reaches the cloud (before the cloud applies it,
// also when a fault then loses the answer) in a run with shares, that a shared load
// balancer is deleted only when no Service of its share exists or another load balancer
// of the share is left, and that an update removes no listener of a Service that exists
// but the one synced (r.syncing). listeners are the update's; nil for a delete.
func (r *recorder) lbWrite(op cloudapi.Operation, id string, listeners []cloudapi.Listener) {
	if r.world == nil {
		return
	}
	inv := r.cloud.Inventory()
	i := slices.IndexFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool { return lb.ID == id })
	if i < 0 {
		return
	}
	cur := inv.LoadBalancers[i]
	key := cur.Spec.Tags[cloudapi.TagShare]
	if key == "" || cur.Spec.Tags[cloudapi.TagCluster] != clusterID {
		return
	}
	add := func(check, format string, args ...any) {
		r.violations = append(r.violations, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	live := members(r.world, key)
	if op == cloudapi.OpDeleteLoadBalancer {
		others := slices.ContainsFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool {
			return lb.ID != id && lb.Spec.Tags[cloudapi.TagCluster] == clusterID && lb.Spec.Tags[cloudapi.TagShare] == key
		})
		// A Service of the share that replaces it (a change a cloud cannot make in place)
		// may delete it when no other Service of the share has a listener on it.
		replaced := live[string(r.syncing)] && !slices.ContainsFunc(cur.Spec.Listeners, func(l cloudapi.Listener) bool {
			uid := listenerUID(l.Name)
			return uid != string(r.syncing) && live[uid]
		})
		if len(live) > 0 && !others && !replaced {
			add(checkShareDeleted, "delete of %s, the load balancer of share %s, while its Services %v exist (syncing %s)", id, key, slices.Sorted(maps.Keys(live)), r.syncing)
		}
		return
	}
	kept := map[string]bool{}
	for _, l := range listeners {
		kept[l.Name] = true
	}
	existing := map[string]bool{}
	for _, name := range r.world.serviceNames() {
		existing[string(r.world.service(name).UID)] = true
	}
	for _, l := range cur.Spec.Listeners {
		uid := listenerUID(l.Name)
		if !kept[l.Name] && uid != string(r.syncing) && existing[uid] {
			add(checkShareListener, "%s of %s (share %s) removes listener %s of Service UID %s while syncing %s", op, id, key, l.Name, uid, r.syncing)
		}
	}
}

// checkShares checks the cluster's shared load balancers once settled: one per share at
// most, none of a share without a Service, and no listener that is not a Service's of
// the share.
func checkShares(w *world, inv fake.Inventory) []violation {
	var out []violation
	add := func(check, format string, args ...any) {
		out = append(out, violation{Check: check, Msg: fmt.Sprintf(format, args...)})
	}
	byKey := map[string][]string{}
	for _, lb := range inv.LoadBalancers {
		key := lb.Spec.Tags[cloudapi.TagShare]
		if key == "" || lb.Spec.Tags[cloudapi.TagCluster] != clusterID {
			continue
		}
		byKey[key] = append(byKey[key], lb.ID)
		live := members(w, key)
		if len(live) == 0 {
			add(checkOrphanLB, "%s (%s) is the load balancer of share %s, which has no Service", lb.ID, lb.Spec.Name, key)
		}
		for _, l := range lb.Spec.Listeners {
			if !live[listenerUID(l.Name)] {
				add(checkOrphanListener, "%s (share %s) has listener %s (%s/%d) of no Service of the share (Services %v)", lb.ID, key, l.Name, l.Protocol, l.Port, slices.Sorted(maps.Keys(live)))
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		if ids := byKey[key]; len(ids) > 1 {
			add(checkDuplicateLB, "share %s has %d load balancers: %v", key, len(ids), ids)
		}
	}
	return out
}

// sharedWrites counts the writes of shared load balancers in history, and those that left
// one with the listeners of two Services or more.
func sharedWrites(history []fake.Event) (writes, byMany int) {
	for _, e := range history {
		if e.Spec.Tags[cloudapi.TagShare] == "" {
			continue
		}
		writes++
		uids := map[string]bool{}
		for _, l := range e.Spec.Listeners {
			uids[listenerUID(l.Name)] = true
		}
		if len(uids) > 1 {
			byMany++
		}
	}
	return writes, byMany
}

// TestShareChecksCatchViolations plants each kind of damage the checks of a run with
// shares look for into a share of two Services, and expects the check that must report
// it: they are not vacuous while the run with shares is skipped.
func TestShareChecksCatchViolations(t *testing.T) {
	ctx := context.Background()
	key := shareKey(shareNames[0])
	listener := func(uid types.UID, port int32) cloudapi.Listener {
		return cloudapi.Listener{Name: string(uid) + ":p", Protocol: cloudapi.ProtocolTCP, Port: port, TargetPort: 30000 + port}
	}
	// setup returns a world with Services a and b in the share, a cloud with the share's
	// load balancer holding a listener of each, and a recorder that checks writes.
	setup := func(t *testing.T) (*world, *fake.Cloud, *recorder, cloudapi.LoadBalancer, types.UID, types.UID) {
		t.Helper()
		cloud, err := fake.New(fake.Config{})
		require.NoError(t, err)
		w := newWorld(newClock())
		for _, name := range []string{"a", "b"} {
			require.NoError(t, w.createService(&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annotationShare: shareNames[0]}},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			}))
		}
		a, b := w.service("a").UID, w.service("b").UID
		api, _ := cloud.LoadBalancers()
		lb, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared",
			Tags:      map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagShare: key},
			Listeners: []cloudapi.Listener{listener(a, 80), listener(b, 443)}})
		require.NoError(t, err)
		rec := newRecorder(cloud)
		rec.world = w
		require.Empty(t, checkShares(w, cloud.Inventory()), "the undamaged share must pass")
		return w, cloud, rec, *lb, a, b
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, w *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID)
		want   []string // nil: no violation
	}{
		{name: "a listener of no Service of the share", want: []string{checkOrphanListener},
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, _ *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				spec := lb.Spec.Clone()
				spec.Listeners = append(spec.Listeners, listener("uid-gone", 8080))
				_, err := api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
				require.NoError(t, err)
			}},
		{name: "two load balancers of a share", want: []string{checkDuplicateLB},
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, _ *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				_, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared-2", Tags: lb.Spec.Tags})
				require.NoError(t, err)
			}},
		{name: "a share without Services", want: []string{checkOrphanLB, checkOrphanListener},
			damage: func(t *testing.T, w *world, _ *fake.Cloud, _ *recorder, _ cloudapi.LoadBalancer, _, _ types.UID) {
				require.True(t, w.deleteService("a"))
				require.True(t, w.deleteService("b"))
			}},
		{name: "a write about a removes b's listener", want: []string{checkShareListener},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, []cloudapi.Listener{listener(a, 80)})
			}},
		{name: "a write about a removes its own listener",
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, b types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpUpdateLoadBalancer, lb.ID, []cloudapi.Listener{listener(b, 443)})
			}},
		{name: "the share's load balancer deleted while b has a listener on it", want: []string{checkShareDeleted},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, a, _ types.UID) {
				rec.syncing = a
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "the share's load balancer deleted while its Services exist, about no Service", want: []string{checkShareDeleted},
			damage: func(_ *testing.T, _ *world, _ *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, lb.ID, nil)
			}},
		{name: "a duplicate of the share deleted",
			damage: func(t *testing.T, _ *world, cloud *fake.Cloud, rec *recorder, lb cloudapi.LoadBalancer, _, _ types.UID) {
				api, _ := cloud.LoadBalancers()
				dup, err := api.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "shared-2", Tags: lb.Spec.Tags})
				require.NoError(t, err)
				rec.lbWrite(cloudapi.OpDeleteLoadBalancer, dup.ID, nil)
				require.NoError(t, api.DeleteLoadBalancer(ctx, dup.ID))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, cloud, rec, lb, a, b := setup(t)
			tt.damage(t, w, cloud, rec, lb, a, b)
			got := checks(append(slices.Clone(rec.violations), checkShares(w, cloud.Inventory())...))
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, slices.Sorted(slices.Values(tt.want)), got)
		})
	}
}
