package soak

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// settled runs a short history without faults to its end state, which must pass every
// check, and returns the simulation with a LoadBalancer Service, its load balancer and a
// Node with its route. With groups, the cloud has target groups.
func settled(t *testing.T, groups bool) (*sim, *corev1.Service, cloudapi.LoadBalancer, *corev1.Node, cloudapi.Route) {
	t.Helper()
	p := paramsFor(7, 0)
	p.targetGroups = groups
	s, err := newSim(p)
	require.NoError(t, err)
	require.NoError(t, s.execute(generate(7, 80)))
	require.Empty(t, s.finish().violations, "the uncorrupted end state must pass")

	inv := s.cloud.Inventory()
	var svc *corev1.Service
	var lb cloudapi.LoadBalancer
	for _, name := range s.w.serviceNames() {
		cand := s.w.service(name)
		i := slices.IndexFunc(inv.LoadBalancers, func(lb cloudapi.LoadBalancer) bool { return owner(lb.Spec.Tags) == string(cand.UID) })
		if i >= 0 && len(inv.Targets(inv.LoadBalancers[i])) > 0 {
			svc, lb = cand, inv.LoadBalancers[i]
			break
		}
	}
	require.NotNil(t, svc, "the history must leave a LoadBalancer Service with targets")
	require.NotEmpty(t, inv.Routes, "the history must leave a route")
	route := inv.Routes[0]
	node := s.w.node(route.Tags[cloudapi.TagNode])
	require.NotNil(t, node)
	s.res = result{} // finish again after the corruption
	return s, svc, lb, node, route
}

// TestChecksCatchCorruptedEndStates plants each kind of damage into a converged end state
// and expects the check that must report it: the soak's checks are not vacuous.
func TestChecksCatchCorruptedEndStates(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		corrupt func(t *testing.T, s *sim, svc *corev1.Service, lb cloudapi.LoadBalancer, node *corev1.Node, route cloudapi.Route)
		want    string
	}{
		{
			name: "orphaned load balancer",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				spec.Name = "planted-orphan"
				spec.Tags[cloudapi.TagService] = "00000000-0000-4000-8000-999999999999"
				createLB(ctx, t, s, spec)
			},
			want: checkOrphanLB,
		},
		{
			name: "duplicate load balancer",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				spec.Name = "planted-duplicate"
				createLB(ctx, t, s, spec)
			},
			want: checkDuplicateLB,
		},
		{
			name: "missing load balancer",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				api, _ := s.cloud.LoadBalancers()
				require.NoError(t, api.DeleteLoadBalancer(ctx, lb.ID))
			},
			want: checkMissingLB,
		},
		{
			name: "targets out of date",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				spec.Targets = nil
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkLBSpec,
		},
		{
			name: "listener missing",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				spec.Listeners = spec.Listeners[1:]
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkLBSpec,
		},
		{
			name: "update with a stale diff",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				spec.ProxyProtocol = !spec.ProxyProtocol
				updateLB(ctx, t, s, lb, spec, cloudapi.LoadBalancerChanges{})
			},
			want: checkStaleDiff,
		},
		{
			name: "status not the load balancer's address",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.w.updateService(svc.Name, func(s *corev1.Service) {
					s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.99"}}
				})
			},
			want: checkStatus,
		},
		{
			name: "wrong load balancer ID annotation",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.w.updateService(svc.Name, func(s *corev1.Service) { s.Annotations[loadbalancer.StatusAnnotationLoadBalancerID] = "lb-planted" })
			},
			want: checkSays,
		},
		{
			name: "no ready condition",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.w.updateService(svc.Name, func(s *corev1.Service) { s.Status.Conditions = nil })
			},
			want: checkSays,
		},
		{
			name: "finalizer missing",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.w.updateService(svc.Name, func(s *corev1.Service) {
					s.Finalizers = slices.DeleteFunc(s.Finalizers, func(f string) bool { return f == servicehelpers.LoadBalancerCleanupFinalizer })
				})
			},
			want: checkFinalizer,
		},
		{
			name: "orphaned route",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, route cloudapi.Route) {
				api, _ := s.cloud.Routes()
				_, err := api.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.127.0.0/24", TargetInstanceID: route.TargetInstanceID,
					Tags: map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagNode: "node-that-never-was"}})
				require.NoError(t, err)
			},
			want: checkOrphanRoute,
		},
		{
			name: "route missing",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, route cloudapi.Route) {
				api, _ := s.cloud.Routes()
				require.NoError(t, api.DeleteRoute(ctx, route.ID))
			},
			want: checkMissingRoute,
		},
		{
			name: "node deleted while its instance runs",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, node *corev1.Node, _ cloudapi.Route) {
				s.rec.lifecycleDeletes(node)
				s.w.deleteNode(node.Name)
			},
			want: checkNodeDeleted,
		},
		{
			name: "node left after its instance was deleted",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, node *corev1.Node, _ cloudapi.Route) {
				require.NoError(t, s.cloud.DeleteInstance(instanceOf(node, s.cloud.Inventory().Instances).ID))
			},
			want: checkNodeLeft,
		},
		{
			name: "node uninitialized",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, node *corev1.Node, _ cloudapi.Route) {
				s.w.updateNode(node.Name, func(n *corev1.Node) {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule})
				})
			},
			want: checkNodeInit,
		},
		{
			name: "shutdown taint on a Ready node",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, node *corev1.Node, _ cloudapi.Route) {
				s.w.updateNode(node.Name, func(n *corev1.Node) {
					setReady(n, corev1.ConditionTrue)
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule})
				})
			},
			want: checkShutdownTaint,
		},
		{
			name: "the other cluster's load balancer changed",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				other := byName(t, s, otherClusterLB.Name)
				spec := other.Spec.Clone()
				spec.Listeners[0].TargetPort++
				updateLB(ctx, t, s, other, spec, cloudapi.DiffLoadBalancer(other.Spec, spec))
			},
			want: checkNotOurs,
		},
		{
			name: "a load balancer without tags changed, not adopted",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				createLB(ctx, t, s, cloudapi.LoadBalancerSpec{Name: "planted-free"})
				free := byName(t, s, "planted-free")
				spec := free.Spec.Clone()
				spec.ProxyProtocol = true
				updateLB(ctx, t, s, free, spec, cloudapi.DiffLoadBalancer(free.Spec, spec))
			},
			want: checkNotOurs,
		},
		{
			name: "a load balancer without tags deleted",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				createLB(ctx, t, s, cloudapi.LoadBalancerSpec{Name: "planted-free"})
				api, _ := s.cloud.LoadBalancers()
				require.NoError(t, api.DeleteLoadBalancer(ctx, byName(t, s, "planted-free").ID))
			},
			want: checkNotOurs,
		},
		{
			name: "an adoption that changes what decides the addresses",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				createLB(ctx, t, s, cloudapi.LoadBalancerSpec{Name: "planted-free"})
				free := byName(t, s, "planted-free")
				spec := free.Spec.Clone()
				spec.Tags = map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagService: "00000000-0000-4000-8000-999999999999"}
				spec.RequestedIPs = []string{free.Addresses[0]}
				updateLB(ctx, t, s, free, spec, cloudapi.DiffLoadBalancer(free.Spec, spec))
			},
			want: checkNotOurs,
		},
		{
			name: "a released load balancer keeps its targets",
			corrupt: func(t *testing.T, s *sim, _ *corev1.Service, lb cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				spec := lb.Spec.Clone()
				delete(spec.Tags, cloudapi.TagCluster)
				delete(spec.Tags, cloudapi.TagService)
				delete(spec.Tags, cloudapi.TagServiceName)
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkKeptLB,
		},
		{
			name: "the Service's load balancer is not the one it names",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.w.updateService(svc.Name, func(s *corev1.Service) {
					if s.Annotations == nil {
						s.Annotations = map[string]string{}
					}
					s.Annotations[annotationID] = "lb-planted"
				})
			},
			want: checkLBSpec,
		},
		{
			name: "a service still retrying",
			corrupt: func(t *testing.T, s *sim, svc *corev1.Service, _ cloudapi.LoadBalancer, _ *corev1.Node, _ cloudapi.Route) {
				s.ccm.svcQ.addRateLimited(svc.Name, s.clock.Now())
			},
			want: checkSettled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, svc, lb, node, route := settled(t, false)
			tt.corrupt(t, s, svc, lb, node, route)
			vs := s.finish().violations
			assert.Contains(t, checks(vs), tt.want, "violations: %v", vs)
		})
	}
}

// TestGroupChecksCatchCorruptedEndStates plants damage to the target groups into a
// converged end state on a cloud with target groups and expects the check that must
// report it.
func TestGroupChecksCatchCorruptedEndStates(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		corrupt func(t *testing.T, s *sim, lb cloudapi.LoadBalancer)
		want    string
	}{
		{
			name: "orphaned target group",
			corrupt: func(t *testing.T, s *sim, _ cloudapi.LoadBalancer) {
				createGroup(ctx, t, s, "planted-orphan", map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagTargetGroup: "selector-planted"})
			},
			want: checkOrphanGroup,
		},
		{
			name: "two groups of the cluster for every Node",
			corrupt: func(t *testing.T, s *sim, lb cloudapi.LoadBalancer) {
				g := createGroup(ctx, t, s, "planted-duplicate", map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagTargetGroup: groupAllNodes})
				spec := lb.Spec.Clone()
				spec.TargetGroup = g.ID
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkDuplicateGroup,
		},
		{
			name: "group members out of date",
			corrupt: func(t *testing.T, s *sim, lb cloudapi.LoadBalancer) {
				g := groupByID(t, s, lb.Spec.TargetGroup)
				spec := g.Spec.Clone()
				spec.Targets = spec.Targets[1:]
				groups, _ := s.cloud.TargetGroups()
				_, err := groups.UpdateTargetGroup(ctx, g.ID, cloudapi.DiffTargetGroup(g.Spec, spec))
				require.NoError(t, err)
			},
			want: checkLBSpec,
		},
		{
			name: "a load balancer with targets of its own",
			corrupt: func(t *testing.T, s *sim, lb cloudapi.LoadBalancer) {
				spec := lb.Spec.Clone()
				spec.Targets = groupByID(t, s, lb.Spec.TargetGroup).Spec.Targets
				spec.TargetGroup = ""
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkLBSpec,
		},
		{
			name: "a load balancer names the operator's group",
			corrupt: func(t *testing.T, s *sim, lb cloudapi.LoadBalancer) {
				spec := lb.Spec.Clone()
				spec.TargetGroup = foreignGroupByName(t, s, operatorGroup.Name).ID
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkLBSpec,
		},
		{
			name: "a released load balancer names the cluster's group",
			corrupt: func(t *testing.T, s *sim, lb cloudapi.LoadBalancer) {
				spec := lb.Spec.Clone()
				delete(spec.Tags, cloudapi.TagCluster)
				delete(spec.Tags, cloudapi.TagService)
				delete(spec.Tags, cloudapi.TagServiceName)
				updateLB(ctx, t, s, lb, spec, cloudapi.DiffLoadBalancer(lb.Spec, spec))
			},
			want: checkKeptLB,
		},
		{
			// Written back as it was: only the watch of the writes sees it.
			name: "the other cluster's group changed and restored",
			corrupt: func(t *testing.T, s *sim, _ cloudapi.LoadBalancer) {
				g := foreignGroupByName(t, s, otherClusterGroup.Name)
				groups, _ := cloudapi.TargetGroups(s.watched)
				changed := g.Spec.Clone()
				changed.Targets = nil
				_, err := groups.UpdateTargetGroup(ctx, g.ID, cloudapi.DiffTargetGroup(g.Spec, changed))
				require.NoError(t, err)
				_, err = groups.UpdateTargetGroup(ctx, g.ID, cloudapi.DiffTargetGroup(changed, g.Spec))
				require.NoError(t, err)
				require.Empty(t, checkGroups(s.cloud.Inventory(), s.rec.foreignGroups), "the end state is as it was")
			},
			want: checkNotOurs,
		},
		{
			name: "an operator's group deleted",
			corrupt: func(t *testing.T, s *sim, _ cloudapi.LoadBalancer) {
				g := createGroup(ctx, t, s, "planted-operators", map[string]string{"billing": "team-b"})
				s.rec.foreignGroups[g.ID] = g // as if it was there before the history
				groups, _ := cloudapi.TargetGroups(s.watched)
				require.NoError(t, groups.DeleteTargetGroup(ctx, g.ID))
			},
			want: checkNotOurs,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, lb, _, _ := settled(t, true)
			tt.corrupt(t, s, lb)
			vs := s.finish().violations
			assert.Contains(t, checks(vs), tt.want, "violations: %v", vs)
		})
	}
}

// createGroup creates a target group in the cloud, around the watch of the writes.
func createGroup(ctx context.Context, t *testing.T, s *sim, name string, tags map[string]string) cloudapi.TargetGroup {
	t.Helper()
	groups, ok := s.cloud.TargetGroups()
	require.True(t, ok)
	g, err := groups.CreateTargetGroup(ctx, cloudapi.TargetGroupSpec{Name: name, Tags: tags})
	require.NoError(t, err)
	return *g
}

// groupByID returns the target group with the ID from the cloud's inventory.
func groupByID(t *testing.T, s *sim, id string) cloudapi.TargetGroup {
	t.Helper()
	groups := s.cloud.Inventory().TargetGroups
	i := slices.IndexFunc(groups, func(g cloudapi.TargetGroup) bool { return g.ID == id })
	require.GreaterOrEqual(t, i, 0, "no target group %q", id)
	return groups[i]
}

// foreignGroupByName returns the target group made before the history with the name.
func foreignGroupByName(t *testing.T, s *sim, name string) cloudapi.TargetGroup {
	t.Helper()
	for _, g := range s.rec.foreignGroups {
		if g.Spec.Name == name {
			return g
		}
	}
	require.Failf(t, "no foreign target group", "%q", name)
	return cloudapi.TargetGroup{}
}

func createLB(ctx context.Context, t *testing.T, s *sim, spec cloudapi.LoadBalancerSpec) {
	t.Helper()
	api, _ := s.cloud.LoadBalancers()
	_, err := api.CreateLoadBalancer(ctx, spec)
	require.NoError(t, err)
}

func updateLB(ctx context.Context, t *testing.T, s *sim, lb cloudapi.LoadBalancer, spec cloudapi.LoadBalancerSpec, changes cloudapi.LoadBalancerChanges) {
	t.Helper()
	api, _ := s.cloud.LoadBalancers()
	_, err := api.UpdateLoadBalancer(ctx, lb.ID, cloudapi.LoadBalancerUpdate{Spec: spec, Changes: changes})
	require.NoError(t, err)
}

// byName returns the load balancer with the name from the cloud's inventory.
func byName(t *testing.T, s *sim, name string) cloudapi.LoadBalancer {
	t.Helper()
	lbs := s.cloud.Inventory().LoadBalancers
	i := slices.IndexFunc(lbs, func(lb cloudapi.LoadBalancer) bool { return lb.Spec.Name == name })
	require.GreaterOrEqual(t, i, 0, "no load balancer %q", name)
	return lbs[i]
}
