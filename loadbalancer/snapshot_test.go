package loadbalancer_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// parallel runs fn(0), ..., fn(n-1) on workers goroutines, as the service controller's
// workers and its node sync call a provider.
func parallel(workers, n int, fn func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				fn(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// TestRestartOnAConvergedClusterIsOneSnapshot: after a restart of the
// cloud-controller-manager, the service controller ensures every Service once and its node
// sync updates every Service's targets, from several workers at once. On a converged
// cluster all of that together is one paged list of the cluster's load balancers, and no
// write.
func TestRestartOnAConvergedClusterIsOneSnapshot(t *testing.T) {
	const services, instances, pageSize, workers = 1000, 20, 500, 8
	cfg := fake.Config{PageSize: pageSize, AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"100.64.0.0/16"}}}}
	var nodes []*corev1.Node
	for i := range instances {
		id := fmt.Sprintf("i-%04d", i)
		cfg.Instances = append(cfg.Instances, fake.Instance{ID: id, Name: "node-" + id})
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + id}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}})
	}
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	api, _ := cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(t0)
	start := func() *loadbalancer.LoadBalancer {
		lb, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, PageSize: pageSize, Clock: clk})
		require.NoError(t, err)
		return lb
	}
	svcs := make([]*corev1.Service, services)
	for i := range svcs {
		svcs[i] = newService(fmt.Sprintf("svc-%04d", i))
	}

	ctx := klog.NewContext(t.Context(), klog.Logger{}) // the zero logger discards
	before := start()
	for _, svc := range svcs {
		_, err := before.EnsureLoadBalancer(ctx, "c", svc, nodes)
		require.NoError(t, err)
	}
	require.Len(t, cloud.Inventory().LoadBalancers, services)

	restarted := start()
	calls := cloud.Calls()
	errs := make([]error, 2*services)
	parallel(workers, 2*services, func(i int) {
		if i%2 == 0 {
			_, errs[i] = restarted.EnsureLoadBalancer(ctx, "c", svcs[i/2], nodes)
		} else {
			errs[i] = restarted.UpdateLoadBalancer(ctx, "c", svcs[i/2], nodes)
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}
	got := cloud.Calls().Sub(calls)
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: services / pageSize}, got, "one list of %d pages, no write", services/pageSize)
	assert.LessOrEqual(t, got.Reads(), int64(3))
	assert.Zero(t, got.Writes())
}

// TestStaleSnapshotIsRepairedAfterMaxAge: a load balancer changed or deleted behind
// ccmkit's back while it matched its Service in the snapshot is repaired by the first
// EnsureLoadBalancer after the snapshot's maximum age, with a write based on a fresh read.
func TestStaleSnapshotIsRepairedAfterMaxAge(t *testing.T) {
	tests := []struct {
		name string
		// change changes or deletes lb behind ccmkit's back.
		change func(t *testing.T, api cloudapi.LoadBalancerAPI, lb cloudapi.LoadBalancer)
		// want are the calls of the repairing EnsureLoadBalancer.
		want fake.Calls
	}{
		{
			name: "targets removed",
			change: func(t *testing.T, api cloudapi.LoadBalancerAPI, lb cloudapi.LoadBalancer) {
				spec := lb.Spec.Clone()
				spec.Targets = spec.Targets[:2]
				_, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
				require.NoError(t, err)
			},
			want: fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpUpdateLoadBalancer: 1},
		},
		{
			name: "listener changed and PROXY protocol switched on",
			change: func(t *testing.T, api cloudapi.LoadBalancerAPI, lb cloudapi.LoadBalancer) {
				spec := lb.Spec.Clone()
				spec.Listeners[0].TargetPort = 31111
				spec.ProxyProtocol = true
				_, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: cloudapi.DiffLoadBalancer(lb.Spec, spec)})
				require.NoError(t, err)
			},
			want: fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpUpdateLoadBalancer: 1},
		},
		{
			name: "deleted",
			change: func(t *testing.T, api cloudapi.LoadBalancerAPI, lb cloudapi.LoadBalancer) {
				require.NoError(t, api.DeleteLoadBalancer(t.Context(), lb.ID))
			},
			want: fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpCreateLoadBalancer: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{})
			svc := newService("web")
			e.ensure(t, svc, e.nodes)
			converged := e.only(t)
			api, _ := e.cloud.LoadBalancers()
			tt.change(t, api, converged)

			before := e.cloud.Calls()
			e.ensure(t, svc, e.nodes)
			require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
			assert.Empty(t, e.cloud.Calls().Sub(before), "within the maximum age the snapshot stands in for the cloud")

			e.expire()
			before = e.cloud.Calls()
			e.ensure(t, svc, e.nodes)
			assert.Equal(t, tt.want, e.cloud.Calls().Sub(before), "the snapshot's list, a fresh read by owner tags, one write")
			repaired := e.only(t)
			assert.Equal(t, converged.Spec, repaired.Spec)
			assert.Equal(t, cloudapi.LoadBalancerActive, repaired.Status)
			for _, ev := range e.cloud.LoadBalancerHistory() {
				assert.True(t, ev.ChangesMatch(), "%s of %s: said %+v, was %+v", ev.Op, ev.ID, ev.Changes, ev.Actual)
			}

			before = e.cloud.Calls()
			e.ensure(t, svc, e.nodes)
			assert.Empty(t, e.cloud.Calls().Sub(before), "repaired: the write's answer is in the snapshot")
		})
	}
}

// TestWritesAreBasedOnAFreshRead: when the Service or its nodes change while the snapshot
// is stale, the write's changes are computed from a fresh read, so they also undo what
// was changed behind ccmkit's back, and a cloud with one call per change applies the
// right ones.
func TestWritesAreBasedOnAFreshRead(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T, e *env, svc *corev1.Service) error
	}{
		{
			name: "EnsureLoadBalancer after a node port change",
			call: func(t *testing.T, e *env, svc *corev1.Service) error {
				svc.Spec.Ports[0].NodePort = 30081
				_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
				return err
			},
		},
		{
			name: "UpdateLoadBalancer after a node is gone",
			call: func(t *testing.T, e *env, svc *corev1.Service) error {
				return e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes[1:])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fake.Config{})
			svc := newService("web")
			e.ensure(t, svc, e.nodes)
			lb := e.only(t)
			api, _ := e.cloud.LoadBalancers()
			moved := lb.Spec.Clone()
			moved.Targets = moved.Targets[:2]
			moved.SourceRanges = []string{"192.0.2.0/24"}
			_, err := api.UpdateLoadBalancer(t.Context(), lb.ID, cloudapi.LoadBalancerUpdate{Spec: moved, Changes: cloudapi.DiffLoadBalancer(lb.Spec, moved)})
			require.NoError(t, err)

			require.NoError(t, tt.call(t, e, svc))
			hist := e.cloud.LoadBalancerHistory()
			last := hist[len(hist)-1]
			require.Equal(t, cloudapi.OpUpdateLoadBalancer, last.Op)
			assert.True(t, last.ChangesMatch(), "said %+v, was %+v", last.Changes, last.Actual)
			assert.True(t, last.Changes.SourceRanges, "the source ranges set behind ccmkit's back are removed")
			assert.Empty(t, e.only(t).Spec.SourceRanges)
		})
	}
}

// TestAmbiguousWriteIsNotTrusted: after a write whose answer was lost, the snapshot does
// not know what the cloud has; when the Service then returns to what the snapshot last
// saw, the load balancer is still read afresh and changed back.
func TestAmbiguousWriteIsNotTrusted(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)

	changed := newService("web", withPorts(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, NodePort: 30080}))
	chaos.Script(cloudapi.OpUpdateLoadBalancer, faultinject.Fault{Kind: faultinject.Ambiguous})
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", changed, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	require.Equal(t, int32(8080), e.only(t).Spec.Listeners[0].Port, "the update was applied; its answer was lost")

	before := e.cloud.Calls()
	e.ensure(t, svc, e.nodes) // the Service is back to port 80, as in the snapshot
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1, cloudapi.OpUpdateLoadBalancer: 1}, e.cloud.Calls().Sub(before))
	assert.Equal(t, int32(80), e.only(t).Spec.Listeners[0].Port)
}

// TestFailedReadIsNotTrusted: when reading a Service's load balancer failed, the next call
// about it asks the cloud, so a cloud error is never taken for "nothing to do".
func TestFailedReadIsNotTrusted(t *testing.T) {
	var chaos *faultinject.Client
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client {
		chaos = faultinject.Wrap(c, faultinject.Config{})
		return chaos
	})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	chaos.Script(cloudapi.OpListLoadBalancers, faultinject.Fault{Kind: faultinject.Transient})
	require.ErrorIs(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc), cloudapi.ErrTransient)

	before := e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 1}, e.cloud.Calls().Sub(before), "read afresh after the failed read")
	before = e.cloud.Calls()
	require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes))
	assert.Empty(t, e.cloud.Calls().Sub(before), "that fresh read is in the snapshot")
}

// TestConcurrentCallsKeepOneLoadBalancerPerService calls every method for the same
// Services from many goroutines while the snapshot expires now and then (run with -race),
// and checks that every write was based on a fresh read, that no Service ever had two
// load balancers, and that the end state is what the Services ask for.
func TestConcurrentCallsKeepOneLoadBalancerPerService(t *testing.T) {
	const services, rounds, workers = 12, 40, 8
	e := newEnv(t, fake.Config{PageSize: 5, Provisioning: fake.Provisioning{Reads: 1}})
	svcs := make([]*corev1.Service, services)
	for i := range svcs {
		svcs[i] = newService(fmt.Sprintf("svc-%02d", i))
	}
	nodeSets := [][]*corev1.Node{e.nodes, e.nodes[1:], e.nodes[:3]}

	parallel(workers, services*rounds, func(i int) {
		svc, round := svcs[i%services], i/services
		nodes := nodeSets[round%len(nodeSets)]
		switch round % 4 {
		case 0, 1:
			_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes) // a RetryError while provisioning
		case 2:
			_ = e.lb.UpdateLoadBalancer(t.Context(), "c", svc, nodes) // an error before the create
		default:
			_, _, _ = e.lb.GetLoadBalancer(t.Context(), "c", svc)
		}
		if i%17 == 0 {
			e.expire()
		}
	})

	// Converge on the last node set, as the service controller's retries would.
	final := nodeSets[0]
	for _, svc := range svcs {
		converge(t, "ensure "+svc.Name, func() error {
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, final)
			return err
		})
	}
	live := map[string]int{}
	for _, ev := range e.cloud.LoadBalancerHistory() {
		uid := ev.Spec.Tags[cloudapi.TagService]
		switch ev.Op {
		case cloudapi.OpCreateLoadBalancer:
			live[uid]++
			require.LessOrEqual(t, live[uid], 1, "a second load balancer (%s) of service %s existed at once", ev.ID, uid)
		case cloudapi.OpDeleteLoadBalancer:
			live[uid]--
		case cloudapi.OpUpdateLoadBalancer:
			assert.True(t, ev.ChangesMatch(), "update of %s: said %+v, was %+v", ev.ID, ev.Changes, ev.Actual)
		}
	}
	inv := e.cloud.Inventory()
	require.Len(t, inv.LoadBalancers, services)
	for _, svc := range svcs {
		got := inv.LoadBalancersTagged(map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: string(svc.UID)})
		require.Len(t, got, 1, "service %s", svc.Name)
		assert.Equal(t, []string{"i-0", "i-1", "i-2", "i-3", "i-4"}, got[0].Spec.Targets, "service %s", svc.Name)
	}

	// Converged: one snapshot list (three pages of five) after expiry, then nothing.
	e.expire()
	before := e.cloud.Calls()
	parallel(workers, services, func(i int) {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svcs[i], final)
		assert.NoError(t, err)
	})
	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 3}, e.cloud.Calls().Sub(before))
}

func TestNewRejectsNegativeSnapshotOptions(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	api, _ := cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	for _, opts := range []loadbalancer.Options{
		{ClusterID: "c1", ProviderID: format, MaxAge: -time.Second},
		{ClusterID: "c1", ProviderID: format, PageSize: -1},
	} {
		_, err := loadbalancer.New(api, opts)
		assert.ErrorContains(t, err, "must not be negative")
	}
}

// TestNodeAddIsOneListAndOneWritePerLoadBalancer: a Node added to a cluster of S load
// balancer Services, synced by the service controller's workers at once, costs one list of
// the cluster's load balancers begun after the Node arrived (⌈S/P⌉ pages) and one update
// per load balancer, each based on that list: no read by owner tags. With the snapshot
// fresh or expired alike.
func TestNodeAddIsOneListAndOneWritePerLoadBalancer(t *testing.T) {
	const services, instances, pageSize, workers = 200, 6, 50, 4
	for _, expired := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot expired %t", expired), func(t *testing.T) {
			cfg := fake.Config{PageSize: pageSize, AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"100.64.0.0/16"}}}}
			var nodes []*corev1.Node
			for i := range instances {
				id := fmt.Sprintf("i-%04d", i)
				cfg.Instances = append(cfg.Instances, fake.Instance{ID: id, Name: "node-" + id})
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + id}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}})
			}
			cloud, err := fake.New(cfg)
			require.NoError(t, err)
			api, _ := cloud.LoadBalancers()
			format, err := providerid.Default("ccmkit")
			require.NoError(t, err)
			clk := clocktesting.NewFakeClock(t0)
			lb, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, PageSize: pageSize, Clock: clk})
			require.NoError(t, err)
			ctx := klog.NewContext(t.Context(), klog.Logger{})
			svcs := make([]*corev1.Service, services)
			for i := range svcs {
				svcs[i] = newService(fmt.Sprintf("svc-%04d", i))
				_, err := lb.EnsureLoadBalancer(ctx, "c", svcs[i], nodes[:instances-1])
				require.NoError(t, err)
			}
			require.NoError(t, lb.UpdateLoadBalancer(ctx, "c", svcs[0], nodes[:instances-1]), "the node sync before the Node arrives")
			if expired {
				clk.Step(loadbalancer.DefaultMaxAge + time.Second)
			}

			before := cloud.Calls()
			errs := make([]error, services)
			parallel(workers, services, func(i int) { errs[i] = lb.UpdateLoadBalancer(ctx, "c", svcs[i], nodes) })
			for i, err := range errs {
				require.NoError(t, err, "service %d", i)
			}
			assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: services / pageSize, cloudapi.OpUpdateLoadBalancer: services}, cloud.Calls().Sub(before),
				"one list of %d pages and one write per load balancer", services/pageSize)
			for _, got := range cloud.Inventory().LoadBalancers {
				assert.Len(t, got.Spec.Targets, instances, "load balancer %s", got.ID)
			}
			for _, h := range cloud.LoadBalancerHistory()[len(cloud.LoadBalancerHistory())-services:] {
				assert.True(t, h.ChangesMatch(), "every update's changes are what changed: its base was the load balancer as it was")
			}

			before = cloud.Calls()
			parallel(workers, services, func(i int) { errs[i] = lb.UpdateLoadBalancer(ctx, "c", svcs[i], nodes) })
			for i, err := range errs {
				require.NoError(t, err, "service %d", i)
			}
			assert.Empty(t, cloud.Calls().Sub(before), "the node sync again: nothing to do, no call")
		})
	}
}

// TestNodeSyncUnderFaultsWritesFromFreshReads: node syncs over a cloud that loses the
// answers of applied updates and fails lists. A write after a failed one for the same
// Service must not be based on the node sync's list, which began before it: the fake
// records every update's claimed changes beside the real difference, and they must agree
// for every update, while every load balancer ends with the last node set.
func TestNodeSyncUnderFaultsWritesFromFreshReads(t *testing.T) {
	const services, instances, pageSize, workers, rounds = 40, 14, 10, 4, 6
	cfg := fake.Config{PageSize: pageSize, AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"100.64.0.0/16"}}}}
	var all []*corev1.Node
	for i := range instances {
		id := fmt.Sprintf("i-%02d", i)
		cfg.Instances = append(cfg.Instances, fake.Instance{ID: id, Name: "node-" + id})
		all = append(all, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + id}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}})
	}
	cloud, err := fake.New(cfg)
	require.NoError(t, err)
	chaos := faultinject.Wrap(cloud, faultinject.Config{
		Seed: 7,
		Rules: []faultinject.Rule{
			{Ops: []cloudapi.Operation{cloudapi.OpUpdateLoadBalancer}, Probability: 0.3, Kind: faultinject.Ambiguous},
			{Ops: []cloudapi.Operation{cloudapi.OpListLoadBalancers}, Probability: 0.1, Kind: faultinject.Transient},
		},
	})
	api, _ := chaos.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(t0)
	lb, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, PageSize: pageSize, Clock: clk})
	require.NoError(t, err)
	ctx := klog.NewContext(t.Context(), klog.Logger{})
	svcs := make([]*corev1.Service, services)
	for i := range svcs {
		svcs[i] = newService(fmt.Sprintf("svc-%02d", i))
		converge(t, "create "+svcs[i].Name, func() error {
			_, err := lb.EnsureLoadBalancer(ctx, "c", svcs[i], all[:6])
			return err
		})
	}

	for round := range rounds {
		nodes := all[round : round+6+round%3] // nodes come and go
		pending := make([]bool, services)
		for i := range pending {
			pending[i] = true
		}
		for attempt := 0; slices.Contains(pending, true); attempt++ {
			require.Less(t, attempt, chaosMaxAttempts, "round %d did not converge", round)
			clk.Step(2 * time.Second) // past a failed list's backoff, within the snapshot's age
			parallel(workers, services, func(i int) {
				if pending[i] && lb.UpdateLoadBalancer(ctx, "c", svcs[i], nodes) == nil {
					pending[i] = false
				}
			})
		}
		want := make([]string, 0, len(nodes))
		for _, n := range nodes {
			want = append(want, strings.TrimPrefix(n.Spec.ProviderID, "ccmkit://"))
		}
		for _, got := range cloud.Inventory().LoadBalancers {
			require.ElementsMatch(t, want, got.Spec.Targets, "round %d: load balancer %s", round, got.ID)
		}
	}
	updates := 0
	for _, h := range cloud.LoadBalancerHistory() {
		if h.Op == cloudapi.OpUpdateLoadBalancer {
			updates++
			assert.True(t, h.ChangesMatch(), "update of %s: claimed %+v, but the load balancer differed by %+v: its base was stale", h.ID, h.Changes, h.Actual)
		}
	}
	assert.Greater(t, updates, rounds*services/2, "the node syncs wrote")
}
