package loadbalancer_test

import (
	"context"

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

// repeating is a cloud that pages by offset and has an item created between every two
// page reads: every list answers the last item of each page again on a page of its own.
func repeating(c cloudapi.Client) cloudapi.Client {
	return faultinject.Wrap(c, faultinject.Config{Rules: []faultinject.Rule{{Probability: 1, Kind: faultinject.Repeat}}})
}

// oddLists wraps a client so that every load balancer list answers, before each item,
// what odd sends (a copy of the item changed, or nothing).
type oddLists struct {
	cloudapi.Client
	odd func(cloudapi.LoadBalancer) []cloudapi.LoadBalancer
}

func (c oddLists) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return oddListsAPI{api, c.odd}, ok
}

func (c oddLists) TargetGroups() (cloudapi.TargetGroupAPI, bool) {
	return cloudapi.TargetGroups(c.Client)
}

type oddListsAPI struct {
	cloudapi.LoadBalancerAPI
	odd func(cloudapi.LoadBalancer) []cloudapi.LoadBalancer
}

func (a oddListsAPI) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	p, err := a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
	if err != nil || p == nil {
		return p, err
	}
	out := &cloudapi.LoadBalancerPage{NextPageToken: p.NextPageToken}
	for _, lb := range p.Items {
		out.Items = append(out.Items, a.odd(lb)...)
		out.Items = append(out.Items, lb)
	}
	return out, nil
}

// unnamedFirst answers a copy of each load balancer without its ID before it.
func unnamedFirst(c cloudapi.Client) cloudapi.Client {
	return oddLists{c, func(lb cloudapi.LoadBalancer) []cloudapi.LoadBalancer {
		lb = lb.Clone()
		lb.ID = ""
		return []cloudapi.LoadBalancer{lb}
	}}
}

// staleFirst answers, before each load balancer, a copy without its tags: a backend that
// ignores the tag filter and pages by offset, answering a copy from before a change.
func staleFirst(c cloudapi.Client) cloudapi.Client {
	return oddLists{c, func(lb cloudapi.LoadBalancer) []cloudapi.LoadBalancer {
		lb = lb.Clone()
		lb.Spec.Tags = nil
		return []cloudapi.LoadBalancer{lb}
	}}
}

// A Service's load balancer that the cloud lists twice is one load balancer: no path
// deletes it as its own duplicate, with or without target groups, whether the repeat is
// the same, lacks the ID, or is a stale copy without the tags ahead of the current one.
func TestALoadBalancerListedTwiceIsKept(t *testing.T) {
	for _, lists := range []struct {
		name string
		wrap func(cloudapi.Client) cloudapi.Client
	}{{"repeated", repeating}, {"a copy without an ID first", unnamedFirst}, {"a stale copy without the tags first", staleFirst}} {
		t.Run(lists.name, func(t *testing.T) { testListedTwiceIsKept(t, lists.wrap) })
	}
}

func testListedTwiceIsKept(t *testing.T, wrap func(cloudapi.Client) cloudapi.Client) {
	for _, tc := range []struct {
		name string
		cfg  func() fake.Config
		keep bool
		call func(t *testing.T, e *env, svc *corev1.Service)
	}{
		{name: "EnsureLoadBalancer", cfg: func() fake.Config { return fake.Config{} }, call: func(t *testing.T, e *env, svc *corev1.Service) {
			e.ensure(t, svc, e.nodes[:3])
		}},
		{name: "UpdateLoadBalancer", cfg: func() fake.Config { return fake.Config{} }, call: func(t *testing.T, e *env, svc *corev1.Service) {
			require.NoError(t, e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes[:3]))
			e.expire()
			e.ensure(t, svc, e.nodes[:3])
		}},
		{name: "EnsureLoadBalancerDeleted with keep-on-delete", cfg: func() fake.Config { return fake.Config{} }, keep: true, call: func(t *testing.T, e *env, svc *corev1.Service) {
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		}},
		{name: "target groups: EnsureLoadBalancer and a collection", cfg: groupsOn, call: func(t *testing.T, e *env, svc *corev1.Service) {
			e.ensure(t, svc, e.nodes[:3])
			e.expire()
			e.lb.CollectGroups(t.Context())
			e.ensure(t, svc, e.nodes)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg(), wrap)
			svc := newService("web")
			if tc.keep {
				svc = newService("web", withAnnotation(loadbalancer.AnnotationKeepOnDelete, "true"))
			}
			st := e.ensure(t, svc, e.nodes)
			svc.Status.LoadBalancer = *st
			lb := e.only(t)
			groups := e.cloud.Inventory().TargetGroups
			e.expire() // the next call reads the cloud
			before := e.cloud.Calls()

			tc.call(t, e, svc)

			calls := e.cloud.Calls().Sub(before)
			assert.Zero(t, calls[cloudapi.OpDeleteLoadBalancer], calls)
			assert.Zero(t, calls[cloudapi.OpDeleteTargetGroup], calls)
			assert.Zero(t, calls[cloudapi.OpCreateLoadBalancer], calls)
			kept := e.only(t)
			assert.Equal(t, lb.ID, kept.ID)
			assert.Equal(t, lb.Addresses, kept.Addresses)
			assert.Equal(t, groups, e.cloud.Inventory().TargetGroups[:len(groups)])
			if tc.keep {
				assert.Empty(t, kept.Spec.Tags[cloudapi.TagService], "released")
			}
		})
	}
}

// When the cloud refuses the update that would adopt an operator's load balancer, nothing
// is written to it, targets included: it carries none of the cluster's tags, so nothing
// would ever take the cluster's Nodes off it again. The error says why.
func TestARefusedAdoptionWritesNothingToTheForeignLoadBalancer(t *testing.T) {
	off := false
	for _, cfg := range []fake.Config{{Capabilities: fake.Capabilities{TLS: &off}}, func() fake.Config {
		c := groupsOn()
		c.Capabilities.TLS = &off
		return c
	}()} {
		rec := record.NewFakeRecorder(10)
		e := newEnvWith(t, cfg, withRecorder(rec))
		foreign := e.unowned(t, "operators", nil)
		svc := newService("web", webPorts, withAnnotation(loadbalancer.AnnotationLoadBalancerID, foreign.ID),
			withAnnotation(loadbalancer.AnnotationTLSPorts, "443"), withAnnotation(loadbalancer.AnnotationTLSCertificates, "cert-a"))
		before := e.cloud.Calls()

		_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)

		require.ErrorIs(t, err, cloudapi.ErrInvalidRequest)
		assert.Contains(t, err.Error(), "adopting load balancer "+foreign.ID)
		assert.Contains(t, err.Error(), "nothing else was written to it")
		calls := e.cloud.Calls().Sub(before)
		assert.EqualValues(t, 1, calls[cloudapi.OpUpdateLoadBalancer], "the refused adoption only: %v", calls)
		assert.Equal(t, foreign, e.byID(t, foreign.ID), "unchanged")
		assert.Empty(t, events(rec), "not adopted")
		for _, ev := range e.cloud.LoadBalancerHistory() {
			if ev.ID == foreign.ID {
				assert.NotEqual(t, cloudapi.OpUpdateLoadBalancer, ev.Op, "no write to the foreign load balancer succeeded: %+v", ev)
			}
		}
	}
}

// A target group whose only load balancer an operator deleted goes once the Service is
// deleted, by the next collection.
func TestAGroupWhoseLoadBalancerAnOperatorDeletedIsCollected(t *testing.T) {
	for _, tc := range []struct {
		name string
		// gone is what the service controller calls once the Service is deleted.
		gone func(t *testing.T, e *env, svc *corev1.Service)
		// expire lets the snapshot expire before the Service is deleted: a list, not a
		// read of the Service, finds the load balancer gone.
		expire bool
	}{
		{name: "EnsureLoadBalancerDeleted", gone: func(t *testing.T, e *env, svc *corev1.Service) {
			require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
		}},
		{name: "GetLoadBalancer says there is none", gone: func(t *testing.T, e *env, svc *corev1.Service) {
			_, exists, err := e.lb.GetLoadBalancer(t.Context(), "c", svc)
			require.NoError(t, err)
			require.False(t, exists)
		}},
		{name: "a list of the snapshot misses it", expire: true, gone: func(t *testing.T, e *env, _ *corev1.Service) {
			e.ensure(t, newService("other"), e.nodes)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, groupsOn())
			e.nodes = e.labelled("web", "web", "", "", "")
			svc := newService("web", withNodeSelector("pool=web"))
			e.ensure(t, svc, e.nodes)
			group := e.cloud.Inventory().TargetGroups[0]
			e.clock.Step(33 * loadbalancer.DefaultMaxAge) // the group is not new
			if !tc.expire {
				e.ensure(t, newService("other"), e.nodes) // a fresh snapshot, which will trust the deleted one
			}
			lbs, _ := e.cloud.LoadBalancers()
			require.NoError(t, lbs.DeleteLoadBalancer(t.Context(), e.byName(t, "default/web").ID)) // behind ccmkit's back
			before := e.cloud.Calls()
			tc.gone(t, e, svc)
			e.lb.CollectGroups(t.Context())
			calls := e.cloud.Calls().Sub(before)
			assert.EqualValues(t, 1, calls[cloudapi.OpDeleteTargetGroup], calls)
			assert.NotContains(t, e.groupIDs(), group.ID)
		})
	}
}

// byName returns the load balancer of the Service namespace/name from the cloud's
// inventory.
func (e *env) byName(t *testing.T, name string) cloudapi.LoadBalancer {
	t.Helper()
	for _, lb := range e.cloud.Inventory().LoadBalancers {
		if lb.Spec.Tags[cloudapi.TagServiceName] == name {
			return lb
		}
	}
	require.Failf(t, "no such load balancer", "%s", name)
	return cloudapi.LoadBalancer{}
}

// nilAnswers wraps a client so that load balancer creates and updates are made, and then
// answered with neither a load balancer nor an error (an adapter's bug).
type nilAnswers struct{ cloudapi.Client }

func (c nilAnswers) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return nilAnswersAPI{api}, ok
}

type nilAnswersAPI struct{ cloudapi.LoadBalancerAPI }

func (a nilAnswersAPI) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	_, err := a.LoadBalancerAPI.CreateLoadBalancer(ctx, spec)
	return nil, err
}

func (a nilAnswersAPI) UpdateLoadBalancer(ctx context.Context, id string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
	_, err := a.LoadBalancerAPI.UpdateLoadBalancer(ctx, id, u)
	return nil, err
}

// A LoadBalancer used on its own (without the provider's client decorator) over a client
// that answers a create or an update with nothing neither panics nor makes a second load
// balancer: the answer is unknown, as a lost one, and the load balancer is looked up.
func TestWritesAnsweredWithNothing(t *testing.T) {
	e := newEnv(t, fake.Config{}, func(c cloudapi.Client) cloudapi.Client { return nilAnswers{c} })
	svc := newService("web")
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.NoError(t, err, "the create's answer is unknown: the load balancer it made is looked up and adopted")
	lb := e.only(t)
	assert.Equal(t, lb.Addresses[0], st.Ingress[0].IP)

	e.expire()
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes[:2])
	require.ErrorIs(t, err, cloudapi.ErrTransient, "the update's answer is unknown")
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes[:2])
	require.NoError(t, err)
	assert.Len(t, e.only(t).Spec.Targets, 2)
}
