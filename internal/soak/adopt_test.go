package soak

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// How the history hands load balancers from Service to Service. keep-on-delete is a
// random annotation; load-balancer-id is set by the run, not the generator, since only the
// run knows the cloud's load balancers. The run acts as a careful user does, so that no
// Service fails by design (as a malformed annotation would, forever):
//
//   - A Service names a load balancer by ID only when it has no ccmkit tags and no other
//     Service names it (create-service with Adopt: one whose name is no live Service's;
//     or the one that already carries the name the Service's load balancer would get, at
//     create-service and when a Service turns LoadBalancer again: its own kept one).
//   - With the ID it sets keep-on-delete (the Service then never deletes what it adopted,
//     so the ID never names a load balancer that is gone), the internal annotation and the
//     IP families the load balancer has (adoption refuses to replace it or drop an
//     address); update-annotations keeps the ID and keep-on-delete, and the internal
//     annotation while the ID or keep-on-delete is set (both refuse an internal switch).
//   - A name annotation that another load balancer carries is not set (the cloud's names
//     are unique; the Service would fail until the name is free).

// Annotation keys the run sets and keeps.
var (
	annotationID       = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationLoadBalancerID
	annotationKeep     = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationKeepOnDelete
	annotationInternal = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationInternal
	annotationName     = loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationName
)

// The load balancers in the cloud before the history: one an operator made, free to
// adopt, and one of another cluster, which nothing may change.
var (
	operatorLB = cloudapi.LoadBalancerSpec{
		Name:      "operators-lb",
		Listeners: []cloudapi.Listener{{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 31443}},
		Tags:      map[string]string{"billing": "team-a"},
	}
	otherClusterLB = cloudapi.LoadBalancerSpec{
		Name:      "other-cluster-lb",
		Listeners: []cloudapi.Listener{{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080}},
		Tags:      map[string]string{cloudapi.TagCluster: otherClusterID, cloudapi.TagService: "uid-elsewhere", cloudapi.TagServiceName: "default/web"},
	}
)

// otherClusterID is the cluster of otherClusterLB.
const otherClusterID = "elsewhere"

// The target groups in a cloud with target groups before the history, each with one
// instance that is no Node's: the operator's, which operatorLB names (a Service that
// adopts operatorLB moves it to the cluster's group and must leave this one alone), and
// the other cluster's group of every Node, which otherClusterLB names. Nothing may change
// or delete either.
var (
	operatorGroup = cloudapi.TargetGroupSpec{
		Name:    "operators-pool",
		Targets: []string{"i-operators-vm"},
		Tags:    map[string]string{"billing": "team-a"},
	}
	otherClusterGroup = cloudapi.TargetGroupSpec{
		Name:    "other-cluster-all-nodes",
		Targets: []string{"i-elsewhere-node"},
		Tags:    map[string]string{cloudapi.TagCluster: otherClusterID, cloudapi.TagTargetGroup: groupAllNodes},
	}
)

// groupAllNodes is the cloudapi.TagTargetGroup value of a cluster's group of every Node,
// the only group of the cluster the history makes (no Service has a node selector).
const groupAllNodes = "all-nodes"

// seedLoadBalancers creates operatorLB and otherClusterLB in the cloud, and with target
// groups operatorGroup and otherClusterGroup (with their instances), which the two load
// balancers then name.
func (s *sim) seedLoadBalancers() error {
	opLB, otherLB := operatorLB.Clone(), otherClusterLB.Clone()
	if groups, ok := s.cloud.TargetGroups(); ok {
		s.rec.foreignGroups = map[string]cloudapi.TargetGroup{}
		for _, spec := range []*cloudapi.TargetGroupSpec{&operatorGroup, &otherClusterGroup} {
			for _, id := range spec.Targets {
				if err := s.cloud.AddInstance(cloudapi.Instance{ID: id, Name: id, Type: "m1.small", Zone: "fake-1a"}); err != nil {
					return err
				}
			}
			g, err := groups.CreateTargetGroup(s.ctx, spec.Clone())
			if err != nil {
				return err
			}
			s.rec.foreignGroups[g.ID] = g.Clone()
			if spec == &operatorGroup {
				opLB.TargetGroup = g.ID
			} else {
				otherLB.TargetGroup = g.ID
			}
		}
	}
	api, _ := s.cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(s.ctx, opLB)
	if err != nil {
		return err
	}
	s.rec.operatorLB = lb.ID
	other, err := api.CreateLoadBalancer(s.ctx, otherLB)
	if err != nil {
		return err
	}
	s.rec.otherLB = other.Spec.Clone()
	return nil
}

// free returns the load balancers without ccmkit's tags that no Service but the one named
// except names by ID, by ID.
func (s *sim) free(except string) []cloudapi.LoadBalancer {
	claimed := map[string]bool{}
	for _, name := range s.w.serviceNames() {
		if id := s.w.service(name).Annotations[annotationID]; id != "" && name != except {
			claimed[id] = true
		}
	}
	var out []cloudapi.LoadBalancer
	for _, lb := range s.cloud.Inventory().LoadBalancers {
		_, cluster := lb.Spec.Tags[cloudapi.TagCluster]
		_, owned := lb.Spec.Tags[cloudapi.TagService]
		if !cluster && !owned && !claimed[lb.ID] {
			out = append(out, lb)
		}
	}
	return out
}

// lbName is the name the Service's load balancer gets, as the provider answers it.
func (s *sim) lbName(svc *corev1.Service) string {
	return s.ccm.lb.GetLoadBalancerName(s.ctx, clusterID, svc)
}

// nameTaken reports whether a load balancer that is not svc's (by its tags or its
// load-balancer-id annotation) has the name svc's load balancer gets.
func (s *sim) nameTaken(svc *corev1.Service) bool {
	name := s.lbName(svc)
	return slices.ContainsFunc(s.cloud.Inventory().LoadBalancers, func(lb cloudapi.LoadBalancer) bool {
		return lb.Spec.Name == name && owner(lb.Spec.Tags) != string(svc.UID) && lb.ID != svc.Annotations[annotationID]
	})
}

// adopt makes svc name lb by ID, with keep-on-delete and lb's internal choice; with
// families, also lb's IP families.
func adopt(svc *corev1.Service, lb cloudapi.LoadBalancer, families bool) {
	svc.Annotations[annotationID] = lb.ID
	svc.Annotations[annotationKeep] = "true"
	delete(svc.Annotations, annotationInternal)
	if lb.Spec.Internal {
		svc.Annotations[annotationInternal] = "true"
	}
	if families && slices.Contains(lb.Spec.IPFamilies, cloudapi.IPv6) && !slices.Contains(svc.Spec.IPFamilies, corev1.IPv6Protocol) {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPv6Protocol)
	}
}

// prepareCreate sets load-balancer-id on a new Service as a careful user would (see the
// rules above). svc has no UID yet: its default name is new, only a name annotation can
// be taken.
func (s *sim) prepareCreate(svc *corev1.Service, o op) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	free := s.free("")
	if name := svc.Annotations[annotationName]; name != "" {
		if i := slices.IndexFunc(free, func(lb cloudapi.LoadBalancer) bool { return lb.Spec.Name == name }); i >= 0 {
			adopt(svc, free[i], true)
			return
		}
		if s.nameTaken(svc) {
			delete(svc.Annotations, annotationName)
		}
	}
	if !o.Adopt {
		return
	}
	wanted := map[string]bool{} // the names the live Services' load balancers get
	for _, name := range s.w.serviceNames() {
		wanted[s.lbName(s.w.service(name))] = true
	}
	free = slices.DeleteFunc(free, func(lb cloudapi.LoadBalancer) bool { return wanted[lb.Spec.Name] })
	if len(free) > 0 {
		adopt(svc, free[o.Index%len(free)], true)
	}
}

// prepareLoadBalancer is what a careful user does before a Service turns LoadBalancer
// again: name its own kept load balancer, which carries the name its load balancer gets.
func (s *sim) prepareLoadBalancer(svc *corev1.Service) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	if svc.Annotations[annotationID] != "" || shareOf(svc) != "" {
		return
	}
	name := s.lbName(svc)
	free := s.free(svc.Name)
	if i := slices.IndexFunc(free, func(lb cloudapi.LoadBalancer) bool { return lb.Spec.Name == name }); i >= 0 {
		adopt(svc, free[i], false)
	}
}

// prepareAnnotations turns a Service's new annotations into what a careful user sets (see
// the rules above).
func (s *sim) prepareAnnotations(svc *corev1.Service, next map[string]string) {
	old := svc.Annotations
	next = maps.Clone(next)
	if next == nil {
		next = map[string]string{}
	}
	if id := old[annotationID]; id != "" {
		next[annotationID] = id
		next[annotationKeep] = "true"
	}
	keepOld := func(key string) {
		if v, ok := old[key]; ok {
			next[key] = v
		} else {
			delete(next, key)
		}
	}
	if next[annotationID] != "" || next[annotationKeep] == "true" {
		keepOld(annotationInternal)
	}
	svc.Annotations = next
	if s.nameTaken(svc) {
		keepOld(annotationName)
	}
}

// handovers counts the updates in history that made a load balancer without this
// cluster's tags a Service's (adoptions; groupAdoptions those of one that named a target
// group in foreign) and those that made a Service's one no cluster's (releases).
func handovers(history []fake.Event, foreign map[string]cloudapi.TargetGroup) (adoptions, groupAdoptions, releases int) {
	was := map[string]string{}   // load balancer ID → owner UID
	group := map[string]string{} // load balancer ID → the target group it names
	for _, e := range history {
		uid := owner(e.Spec.Tags)
		if e.Op == cloudapi.OpUpdateLoadBalancer {
			switch before := was[e.ID]; {
			case before == "" && uid != "":
				adoptions++
				if _, ok := foreign[group[e.ID]]; ok {
					groupAdoptions++
				}
			case before != "" && uid == "":
				releases++
			}
		}
		was[e.ID] = uid
		group[e.ID] = e.Spec.TargetGroup
	}
	return adoptions, groupAdoptions, releases
}
