package sweeper_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// shared are the tags of the load balancer of the share key.
func shared(key string) map[string]string {
	return map[string]string{cloudapi.TagCluster: cluster, cloudapi.TagShare: key, cloudapi.TagShareNodes: ""}
}

// inShare is a Service of type LoadBalancer of share (the share annotation's value).
func inShare(ns, name, uid, share string, tweaks ...func(*corev1.Service)) *corev1.Service {
	svc := newService(ns, name, uid)
	svc.Annotations = map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationShare: share}
	for _, tweak := range tweaks {
		tweak(svc)
	}
	return svc
}

// sharedLB creates the load balancer of share key with a listener of the Service with UID
// uid and returns its ID.
func (w *world) sharedLB(key, uid string) string {
	w.t.Helper()
	api, _ := w.cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(context.Background(), cloudapi.LoadBalancerSpec{Name: "shared", Tags: shared(key),
		Listeners: []cloudapi.Listener{{Name: uid + ":http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}}})
	require.NoError(w.t, err)
	return lb.ID
}

// suspectedShare creates the load balancer of share key with a listener of a gone Service,
// sweeps once and lets the grace period pass; it returns the load balancer's ID.
func (w *world) suspectedShare(key string) string {
	w.t.Helper()
	id := w.sharedLB(key, "uid-gone")
	_, err := w.s.Sweep(context.Background())
	require.NoError(w.t, err)
	w.clock.Step(grace)
	return id
}

// serviceLists counts the live lists of Services since the world began, by namespace
// ("" for all).
func (w *world) serviceLists() map[string]int {
	out := map[string]int{}
	for _, a := range w.kube.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "services" {
			out[a.GetNamespace()]++
		}
	}
	return out
}

// A shared load balancer is the share's: it goes once no Service of the share is in the
// informer cache for the grace period and none is in a live list of the API, read with
// the load balancers' rule (type LoadBalancer, not being deleted, the share annotation
// naming the share; a malformed one in the namespace may name it).
func TestSweepDeletesASharedLoadBalancerOnlyWhenNoServiceOfItsShareExists(t *testing.T) {
	malformed := "Not A Label"
	deleting := func(svc *corev1.Service) {
		now := metav1.Now()
		svc.DeletionTimestamp = &now
		svc.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	}
	clusterIP := func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeClusterIP }
	for _, tc := range []struct {
		name           string
		key            string
		informer, live []runtime.Object // live nil: the informer's
		tweaks         []func(*setup)
		deleted        bool
		// lists are the live lists of Services by namespace ("" for all); gets the
		// cloud's re-reads.
		lists map[string]int
		gets  int64
	}{
		{name: "no Service", key: "ns/front", informer: []runtime.Object{}, deleted: true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "a Service of the share in the informer", key: "ns/front",
			informer: []runtime.Object{inShare("ns", "web", "uid-web", "front")}},
		{name: "a Service of the share only in the live read", key: "ns/front", informer: []runtime.Object{},
			live: []runtime.Object{inShare("ns", "web", "uid-web", "front")}, lists: map[string]int{"ns": 1}},
		{name: "Services of another share or alone", key: "ns/front",
			informer: []runtime.Object{inShare("ns", "web", "uid-web", "back"), newService("ns", "front", "uid-front")},
			deleted:  true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "the share's name in another namespace", key: "ns/front",
			informer: []runtime.Object{inShare("ns2", "web", "uid-web", "front")}, deleted: true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "across namespaces, a Service of the share in another namespace", key: "*/front",
			informer: []runtime.Object{inShare("ns2", "web", "uid-web", "front")},
			tweaks:   []func(*setup){func(st *setup) { st.shares.ShareAcrossNamespaces = true }}},
		{name: "across namespaces, only in the live read", key: "*/front", informer: []runtime.Object{},
			live:   []runtime.Object{inShare("ns2", "web", "uid-web", "front")},
			tweaks: []func(*setup){func(st *setup) { st.shares.ShareAcrossNamespaces = true }}, lists: map[string]int{"": 1}},
		{name: "across namespaces, none", key: "*/front", informer: []runtime.Object{},
			tweaks:  []func(*setup){func(st *setup) { st.shares.ShareAcrossNamespaces = true }},
			deleted: true, lists: map[string]int{"": 1}, gets: 1},
		{name: "a malformed share annotation in the namespace", key: "ns/front",
			informer: []runtime.Object{inShare("ns", "web", "uid-web", malformed)}},
		{name: "a malformed share annotation in the namespace, only in the live read", key: "ns/front", informer: []runtime.Object{},
			live: []runtime.Object{inShare("ns", "web", "uid-web", malformed)}, lists: map[string]int{"ns": 1}},
		{name: "a malformed share annotation in another namespace", key: "ns/front",
			informer: []runtime.Object{inShare("ns2", "web", "uid-web", malformed)}, deleted: true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "across namespaces, a malformed share annotation anywhere", key: "*/front",
			informer: []runtime.Object{inShare("ns2", "web", "uid-web", malformed)},
			tweaks:   []func(*setup){func(st *setup) { st.shares.ShareAcrossNamespaces = true }}},
		{name: "a Service of the share that is not of type LoadBalancer", key: "ns/front",
			informer: []runtime.Object{inShare("ns", "web", "uid-web", "front", clusterIP)}, deleted: true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "a Service of the share being deleted", key: "ns/front",
			informer: []runtime.Object{inShare("ns", "web", "uid-web", "front", deleting)}, deleted: true, lists: map[string]int{"ns": 1}, gets: 1},
		{name: "the sweeper not told how Services name their share", key: "ns/front", informer: []runtime.Object{},
			tweaks: []func(*setup){func(st *setup) { st.noShares = true }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.informer, tc.live, tc.tweaks...)
			id := w.suspectedShare(tc.key)
			ctx := context.Background()
			lists := w.serviceLists()
			before := w.cloud.Calls()
			res, err := w.s.Sweep(ctx)
			require.NoError(t, err)
			calls := w.cloud.Calls().Sub(before)
			after := w.serviceLists()
			for ns := range lists {
				after[ns] -= lists[ns]
				if after[ns] == 0 {
					delete(after, ns)
				}
			}
			if tc.lists == nil {
				tc.lists = map[string]int{}
			}
			assert.Equal(t, tc.lists, after, "live lists of Services, by namespace")
			assert.Equal(t, tc.gets, calls[cloudapi.OpGetLoadBalancer], "re-reads")
			assert.Equal(t, int64(1), calls[cloudapi.OpListLoadBalancers])
			if !tc.deleted {
				assert.Empty(t, res.Deleted)
				assert.Equal(t, []string{id}, w.lbIDs())
				assert.Zero(t, calls.Writes())
				assert.Empty(t, w.swept)
				return
			}
			require.Len(t, res.Deleted, 1)
			assert.Equal(t, "share "+tc.key, res.Deleted[0].Owner)
			assert.Empty(t, w.lbIDs())
			assert.Equal(t, int64(1), calls[cloudapi.OpDeleteLoadBalancer])
			assert.Equal(t, int64(1), calls.Writes())
			assert.Equal(t, map[string]int{"load_balancer/deleted": 1}, w.swept)
			assert.Empty(t, w.events(), "a share has no owner object to record an event on")
			assert.Zero(t, res.Suspects)
		})
	}
}

// Between the live list and the delete, the re-read must show the load balancer as the
// sweep listed it: a Service that joined the share after the list wrote it.
func TestSweepKeepsASharedLoadBalancerThatChangedAfterTheLiveRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(spec *cloudapi.LoadBalancerSpec)
	}{
		{name: "a Service joined", change: func(spec *cloudapi.LoadBalancerSpec) {
			spec.Listeners = append(spec.Listeners, cloudapi.Listener{Name: "uid-new:https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443})
		}},
		{name: "another share", change: func(spec *cloudapi.LoadBalancerSpec) { spec.Tags[cloudapi.TagShare] = "ns/back" }},
		{name: "another cluster", change: func(spec *cloudapi.LoadBalancerSpec) { spec.Tags[cloudapi.TagCluster] = "c2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{}, nil)
			id := w.suspectedShare("ns/front")
			ctx := context.Background()
			w.kube.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
				api, _ := w.cloud.LoadBalancers()
				lb, err := api.GetLoadBalancer(ctx, id)
				require.NoError(t, err)
				spec := lb.Spec.Clone()
				tc.change(&spec)
				_, err = api.UpdateLoadBalancer(ctx, id, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
				require.NoError(t, err)
				return false, nil, nil
			})
			before := w.cloud.Calls()
			res, err := w.s.Sweep(ctx)
			require.NoError(t, err)
			assert.Empty(t, res.Deleted)
			assert.Equal(t, []string{id}, w.lbIDs())
			assert.Zero(t, w.cloud.Calls().Sub(before)[cloudapi.OpDeleteLoadBalancer])
		})
	}
}

// An error on the way is never "no Service of the share": the load balancer waits for
// the next sweep, which deletes it once the faults are over.
func TestSweepErrorsNeverDeleteASharedLoadBalancer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(w *world)
		failed map[string]int
	}{
		{name: "live list of the Services fails", setup: func(w *world) {
			w.kube.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("connection refused")
			})
		}},
		{name: "cloud re-read fails", setup: func(w *world) {
			w.faults.Script(cloudapi.OpGetLoadBalancer, faultinject.Fault{Kind: faultinject.Timeout})
		}},
		{name: "delete fails", setup: func(w *world) {
			w.faults.Script(cloudapi.OpDeleteLoadBalancer, faultinject.Fault{Kind: faultinject.Transient})
		}, failed: map[string]int{"load_balancer/failed": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []runtime.Object{}, nil)
			id := w.suspectedShare("ns/front")
			ctx := context.Background()
			tc.setup(w)
			res, err := w.s.Sweep(ctx)
			require.Error(t, err)
			assert.ErrorContains(t, err, "share ns/front")
			assert.Empty(t, res.Deleted)
			assert.Equal(t, []string{id}, w.lbIDs())
			assert.Zero(t, w.cloud.Calls()[cloudapi.OpDeleteLoadBalancer], "no delete reached the cloud")
			if tc.failed == nil {
				tc.failed = map[string]int{}
			}
			assert.Equal(t, tc.failed, w.swept)

			w.kube.ReactionChain = w.kube.ReactionChain[len(w.kube.ReactionChain)-len(kubefake.NewClientset().ReactionChain):]
			res, err = w.s.Sweep(ctx)
			require.NoError(t, err)
			assert.Len(t, res.Deleted, 1)
			assert.Empty(t, w.lbIDs())
		})
	}
}
