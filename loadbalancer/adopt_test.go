package loadbalancer_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// events returns the events recorded so far.
func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// withRecorder sets the LoadBalancer's event recorder.
func withRecorder(r *record.FakeRecorder) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) { o.Recorder = r }
}

// unowned creates a load balancer in the cloud behind ccmkit's back, as an operator
// would, with spec changed by tweak.
func (e *env) unowned(t *testing.T, name string, tweak func(*cloudapi.LoadBalancerSpec)) cloudapi.LoadBalancer {
	t.Helper()
	api, _ := e.cloud.LoadBalancers()
	spec := cloudapi.LoadBalancerSpec{
		Name:      name,
		Listeners: []cloudapi.Listener{{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 31443}},
		Tags:      map[string]string{"billing": "team-a"},
	}
	if tweak != nil {
		tweak(&spec)
	}
	lb, err := api.CreateLoadBalancer(t.Context(), spec)
	require.NoError(t, err)
	got, err := api.GetLoadBalancer(t.Context(), lb.ID) // the fake activates it on a read
	require.NoError(t, err)
	return *got
}

// byID returns the load balancer with the ID from the cloud's inventory.
func (e *env) byID(t *testing.T, id string) cloudapi.LoadBalancer {
	t.Helper()
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		if lb.ID == id {
			return lb
		}
	}
	require.Failf(t, "no such load balancer", "%s", id)
	return cloudapi.LoadBalancer{}
}

// TestKeepOnDeleteThenAdoptKeepsTheAddress is the whole story: a Service with
// keep-on-delete is deleted, its load balancer stays in the cloud with its address and
// without this cluster's tags and targets; a new Service names it by ID and gets the same
// address.
func TestKeepOnDeleteThenAdoptKeepsTheAddress(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withRecorder(rec))
	web := newService("web", withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"))
	st := e.ensure(t, web, e.nodes)
	first := e.only(t)
	api, _ := e.cloud.LoadBalancers()
	spec := first.Spec.Clone()
	spec.Tags["billing"] = "team-a" // someone else's tag
	_, err := api.UpdateLoadBalancer(t.Context(), first.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(first.Spec, spec)})
	require.NoError(t, err)

	before := e.cloud.Calls()
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before), "one read, one update, no delete")
	kept := e.only(t)
	assert.Equal(t, first.ID, kept.ID)
	assert.Equal(t, first.Addresses, kept.Addresses, "the address stays")
	assert.Equal(t, map[string]string{"billing": "team-a"}, kept.Spec.Tags, "ccmkit's ownership tags go, others' stay")
	assert.Empty(t, kept.Spec.Targets, "no traffic into the cluster's node ports any more")
	assert.Equal(t, first.Spec.Listeners, kept.Spec.Listeners)
	assert.Equal(t, first.Spec.Name, kept.Spec.Name)
	assert.Equal(t, []string{"Normal KeptLoadBalancer Kept load balancer " + first.ID + " (addresses [" + st.Ingress[0].IP + "]) in the cloud without this Service's ownership tags and targets; a Service adopts it with annotation loadbalancer.ccmkit.io/load-balancer-id: " + first.ID},
		events(rec))

	_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", web)
	require.NoError(t, err)
	assert.False(t, exists, "not the Service's any more")
	before = e.cloud.Calls()
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web), "a retry finds nothing to do")
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before))

	// A new Service (a new UID) adopts it: one read by owner tags, one GetLoadBalancer,
	// one update.
	again := newService("web-again", withAnnotation(loadbalancer.AnnotationLoadBalancerID, first.ID))
	before = e.cloud.Calls()
	st2 := e.ensure(t, again, e.nodes)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpGetLoadBalancer: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
	assert.Equal(t, st.Ingress, st2.Ingress, "the same address")
	adopted := e.only(t)
	assert.Equal(t, first.ID, adopted.ID)
	assert.Equal(t, first.Addresses, adopted.Addresses)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-web-again", cloudapi.TagServiceName: "default/web-again", cloudapi.TagAdopted: "true", "billing": "team-a"}, adopted.Spec.Tags)
	assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, adopted.Spec.Targets)
	assert.Equal(t, "c1-auidwebagain", adopted.Spec.Name, "named as any of the Service's load balancers")
	hist := e.cloud.LoadBalancerHistory()
	assert.True(t, hist[len(hist)-1].ChangesMatch(), "the adoption's Changes are its real diff")
	assert.False(t, hist[len(hist)-1].Actual.RequestedIPs, "the requested addresses are not touched")
	assert.Equal(t, []string{"Normal AdoptedLoadBalancer Adopted load balancer " + first.ID + " (addresses [" + st.Ingress[0].IP + "]), named by annotation loadbalancer.ccmkit.io/load-balancer-id"}, events(rec))

	// Adopted, it is the Service's: converged, and deleted with it without keep-on-delete.
	before = e.cloud.Calls()
	e.ensure(t, again, e.nodes)
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", again, e.nodes[:2]))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before), "the snapshot knows it; a node change is one read and one write")
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", again))
	assert.Empty(t, e.cloud.Inventory().LoadBalancers)
	assert.Empty(t, events(rec), "a plain delete says nothing beyond the service controller's events")
}

// TestKeepOnDeleteDefault: the cloud config's default applies to Services without the
// annotation, and the annotation overrides it either way; a malformed one is an error
// before any cloud call, so nothing is deleted while it is unclear.
func TestKeepOnDeleteDefault(t *testing.T) {
	for _, tt := range []struct {
		name       string
		def        bool
		annotation string // "" for none
		wantKept   bool
		wantErr    string
	}{
		{name: "default false", wantKept: false},
		{name: "default true", def: true, wantKept: true},
		{name: "annotation false over default true", def: true, annotation: "false", wantKept: false},
		{name: "annotation true over default false", annotation: " True ", wantKept: true},
		{name: "malformed", def: true, annotation: "keep", wantErr: `annotation loadbalancer.ccmkit.io/keep-on-delete: "keep": not a boolean (allowed: true, false); nothing is deleted until it says whether to keep the load balancer`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.KeepOnDelete = tt.def })
			svc := newService("web")
			e.ensure(t, svc, e.nodes)
			if tt.annotation != "" {
				svc.Annotations[prefix+loadbalancer.AnnotationKeepOnDelete] = tt.annotation
			}
			before := e.cloud.Calls()
			err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc)
			if tt.wantErr != "" {
				require.EqualError(t, err, "service default/web: "+tt.wantErr)
				var aerr *loadbalancer.AnnotationError
				require.ErrorAs(t, err, &aerr)
				assert.Empty(t, e.cloud.Calls().Sub(before), "no cloud call")
				assert.Len(t, e.cloud.Inventory().LoadBalancers, 1)
				return
			}
			require.NoError(t, err)
			lbs := e.cloud.Inventory().LoadBalancers
			if !tt.wantKept {
				assert.Empty(t, lbs)
				return
			}
			require.Len(t, lbs, 1)
			assert.NotContains(t, lbs[0].Spec.Tags, cloudapi.TagCluster)
		})
	}
}

// TestAdoptRefusals: a load balancer that is not provably free, or that the Service could
// only get by losing its addresses or by a replacement, is refused before any write, with
// an error that says what to do and names no other owner.
func TestAdoptRefusals(t *testing.T) {
	tests := []struct {
		name    string
		lbTweak func(*cloudapi.LoadBalancerSpec)
		svc     []func(*corev1.Service)
		want    string
		owned   bool // errors.Is ErrOwnedElsewhere
	}{
		{
			name: "another Service of this cluster",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) {
				s.Tags = map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "uid-other", cloudapi.TagServiceName: "tenant-b/secret"}
			},
			want:  "which belongs to another Service or share (tag ccmkit.io/service-uid or ccmkit.io/share): the load balancer is owned elsewhere; it is adopted only once it is let go",
			owned: true,
		},
		{
			name: "another cluster",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) {
				s.Tags = map[string]string{cloudapi.TagCluster: "prod-eu", cloudapi.TagService: "uid-other"}
			},
			want:  "which belongs to another cluster (tag ccmkit.io/cluster): the load balancer is owned elsewhere; ccmkit changes nothing that is not this cluster's",
			owned: true,
		},
		{
			name:    "another cluster's tag alone",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) { s.Tags = map[string]string{cloudapi.TagCluster: "prod-eu"} },
			want:    "belongs to another cluster",
			owned:   true,
		},
		{
			name:    "this cluster's tag without a Service",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) { s.Tags = map[string]string{cloudapi.TagCluster: "c1"} },
			want:    "belongs to another Service",
			owned:   true,
		},
		{
			name:    "a Service tag without a cluster",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) { s.Tags = map[string]string{cloudapi.TagService: "uid-web"} },
			want:    "belongs to another Service",
			owned:   true,
		},
		{
			name: "a Service name tag alone",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) {
				s.Tags = map[string]string{cloudapi.TagServiceName: "tenant-b/secret"}
			},
			want:  "belongs to another Service",
			owned: true,
		},
		{
			name: "another address asked for",
			svc:  []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.200")},
			want: "the Service asks for address 203.0.113.200 (annotation ip-addresses or spec.loadBalancerIP), but load balancer {id}, named by annotation loadbalancer.ccmkit.io/load-balancer-id, has [{addrs}]: adopting keeps its addresses; ask for those or none",
		},
		{
			name: "an address family it would lose",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) {
				s.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
			},
			want: "has the IPv6 address {last}, but the Service's spec.ipFamilies are [IPv4]: adopting would drop it; set spec.ipFamilyPolicy and spec.ipFamilies to include IPv6",
		},
		{
			name:    "internal, the Service public",
			lbTweak: func(s *cloudapi.LoadBalancerSpec) { s.Internal = true },
			want:    "load balancer {id} is internal, but annotation loadbalancer.ccmkit.io/internal asks for public: a load balancer named by annotation loadbalancer.ccmkit.io/load-balancer-id is never replaced; set loadbalancer.ccmkit.io/internal to true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			e := newEnvWith(t, fake.Config{}, withRecorder(rec))
			target := e.unowned(t, "operators-lb", tt.lbTweak)
			want := strings.NewReplacer("{id}", target.ID, "{addrs}", strings.Join(target.Addresses, ", "), "{last}", target.Addresses[len(target.Addresses)-1]).Replace(tt.want)
			svc := newService("web", append(tt.svc, withAnnotation(loadbalancer.AnnotationLoadBalancerID, target.ID))...)
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.Equal(t, tt.owned, errors.Is(err, loadbalancer.ErrOwnedElsewhere))
			for _, secret := range []string{"prod-eu", "uid-other", "tenant-b"} {
				assert.NotContains(t, err.Error(), secret, "the Service's users learn nothing about other owners")
			}
			assert.Zero(t, e.cloud.Calls().Sub(before).Writes(), "nothing is written")
			assert.Equal(t, target, e.byID(t, target.ID), "the load balancer is as it was")
			assert.Len(t, e.cloud.Inventory().LoadBalancers, 1, "nothing is created in its place")
			assert.Empty(t, events(rec))
		})
	}
}

// TestAdoptWhatDoesNotExist: an ID the cloud does not know is an error that matches
// cloudapi.ErrNotFound; nothing is created in its place, however often the Service syncs.
func TestAdoptWhatDoesNotExist(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, "lb-nope"))
	for range 2 {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		require.ErrorIs(t, err, cloudapi.ErrNotFound)
		assert.Contains(t, err.Error(), "annotation loadbalancer.ccmkit.io/load-balancer-id names load balancer lb-nope, which does not exist")
		assert.Contains(t, err.Error(), "ccmkit creates none in its place: correct the ID, or remove the annotation to get a new load balancer")
	}
	assert.Zero(t, e.cloud.Calls().Writes())
	assert.Empty(t, e.cloud.Inventory().LoadBalancers)

	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, "lb 1")), e.nodes)
	var aerr *loadbalancer.AnnotationError
	require.ErrorAs(t, err, &aerr, "a malformed ID is an annotation error, and nothing is created")
	assert.Empty(t, e.cloud.Inventory().LoadBalancers)
}

// TestAnotherIDWhileOwningOne: a Service that owns a load balancer and names another by ID
// gets an error; neither load balancer is deleted or taken, and the node sync still moves
// the targets of the one it owns.
func TestAnotherIDWhileOwningOne(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	own := e.only(t)
	other := e.unowned(t, "spare", nil)

	svc.Annotations[prefix+loadbalancer.AnnotationLoadBalancerID] = other.ID
	before := e.cloud.Calls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "annotation loadbalancer.ccmkit.io/load-balancer-id names load balancer "+other.ID+", but the Service's load balancer is "+own.ID+
		": ccmkit neither swaps nor deletes load balancers for it; set the annotation to "+own.ID+", or remove it")
	assert.Zero(t, e.cloud.Calls().Sub(before).Total(), "the snapshot knows the Service's load balancer: no call")
	e.expire()
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.Error(t, err, "and from a fresh read")
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes())

	err = e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes[:2])
	require.Error(t, err)
	assert.Equal(t, []string{"i-0", "i-1"}, e.byID(t, own.ID).Spec.Targets, "the node set still reaches the Service's own load balancer")
	assert.Equal(t, other, e.byID(t, other.ID))

	// Naming its own load balancer is fine.
	svc.Annotations[prefix+loadbalancer.AnnotationLoadBalancerID] = own.ID
	e.ensure(t, svc, e.nodes)
}

// TestNamedOrKeptLoadBalancerIsNeverReplaced: while the load-balancer-id annotation is
// set, or keep-on-delete, an internal switch is an error, not a delete and a create.
func TestNamedOrKeptLoadBalancerIsNeverReplaced(t *testing.T) {
	e := newEnv(t, fake.Config{})
	spare := e.unowned(t, "spare", nil)
	svc := newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, spare.ID))
	e.ensure(t, svc, e.nodes)

	svc.Annotations[prefix+loadbalancer.AnnotationInternal] = "true"
	before := e.cloud.Calls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is public, but annotation loadbalancer.ccmkit.io/internal asks for internal: a load balancer named by annotation loadbalancer.ccmkit.io/load-balancer-id is never replaced; set loadbalancer.ccmkit.io/internal to false")
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes())

	delete(svc.Annotations, prefix+loadbalancer.AnnotationLoadBalancerID)
	svc.Annotations[prefix+loadbalancer.AnnotationKeepOnDelete] = "true"
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "load balancer "+spare.ID+" is public, and annotation loadbalancer.ccmkit.io/internal asks for internal, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; "+
		`set annotation loadbalancer.ccmkit.io/keep-on-delete to "false" to replace it, or set loadbalancer.ccmkit.io/internal back`)
	assert.Zero(t, e.cloud.Calls().Sub(before).Writes())
	assert.Equal(t, spare.ID, e.only(t).ID)

	svc.Annotations[prefix+loadbalancer.AnnotationKeepOnDelete] = "false"
	e.ensure(t, svc, e.nodes)
	assert.True(t, e.only(t).Spec.Internal, "without either, the switch replaces it")
	assert.NotEqual(t, spare.ID, e.only(t).ID)
}

// TestAdoptAmbiguousWrites: the adoption's update and the release's update may be applied
// with their answers lost; the next sync finds the truth by owner tags and neither
// repeats nor undoes them.
func TestAdoptAmbiguousWrites(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	spare := e.unowned(t, "spare", nil)
	svc := newService("web", withAnnotation(loadbalancer.AnnotationLoadBalancerID, spare.ID), withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"))

	chaos.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	updates := e.cloud.Calls()[cloudapi.OpUpdateLoadBalancer]
	st := e.ensure(t, svc, e.nodes)
	assert.Equal(t, updates, e.cloud.Calls()[cloudapi.OpUpdateLoadBalancer], "the applied adoption is found by owner tags: no second write")
	assert.Equal(t, spare.Addresses[0], st.Ingress[0].IP)

	chaos.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	require.ErrorIs(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc), cloudapi.ErrTransient)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc), "the retry finds nothing of the Service's")
	kept := e.only(t)
	assert.Equal(t, spare.ID, kept.ID)
	assert.Equal(t, spare.Addresses, kept.Addresses)
	assert.Equal(t, map[string]string{"billing": "team-a"}, kept.Spec.Tags)
	assert.Empty(t, kept.Spec.Targets)
	for _, ev := range e.cloud.LoadBalancerHistory() {
		assert.True(t, ev.ChangesMatch(), "%s %s: Changes %+v, real diff %+v", ev.Op, ev.ID, ev.Changes, ev.Actual)
	}
}

// TestTwoServicesNameOneLoadBalancer: two Services that name the same free load balancer
// at the same time: exactly one adopts it, the other is refused, whatever the order.
func TestTwoServicesNameOneLoadBalancer(t *testing.T) {
	e := newEnv(t, fake.Config{})
	spare := e.unowned(t, "spare", nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := newService("web-"+strings.Repeat("x", i+1), withAnnotation(loadbalancer.AnnotationLoadBalancerID, spare.ID))
			_, errs[i] = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
		}()
	}
	wg.Wait()
	adopted := 0
	for _, err := range errs {
		if err == nil {
			adopted++
			continue
		}
		assert.ErrorIs(t, err, loadbalancer.ErrOwnedElsewhere)
	}
	assert.Equal(t, 1, adopted)
	assert.EqualValues(t, 1, e.cloud.Calls()[cloudapi.OpUpdateLoadBalancer], "one adoption written")
	assert.Len(t, e.cloud.Inventory().LoadBalancers, 1)
}
