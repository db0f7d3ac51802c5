package cloudapi

import (
	"context"
	"maps"
	"slices"
)

// TargetGroupAPI manages target groups: sets of instances that load balancers send
// traffic to by reference (LoadBalancerSpec.TargetGroup), as GCE's instance groups and
// other clouds' target groups or pools do. Load balancers of one cluster that want the
// same instances share one group, so that a Node added or removed is one write to the
// group instead of one per load balancer.
//
// It is optional: a Client offers it by also implementing TargetGroupClient (see
// TargetGroups). A cloud without it keeps each load balancer's own Targets.
//
// Zones are not modelled: a group may hold instances of any zone. An adapter whose cloud
// has zonal groups keeps one cloud group per zone behind one TargetGroup (creating and
// deleting the zonal ones as their members come and go), so a write that adds one
// instance is one call to its zone's group.
//
// A group is this cluster's when it carries TagCluster with the cluster's ID, as a load
// balancer is; the same rules hold: ErrNotFound only when the cloud is certain the group
// does not exist, a list's not-found is no answer, and a create is never retried blindly.
// As for a load balancer, the spec and the update a write is given are the caller's, read
// only (ccmkit hands the same target list to every Service's write), and a backend copies
// what it keeps (cloudapitest checks both).
type TargetGroupAPI interface {
	// ListTargetGroups returns one page of the target groups that carry every tag in
	// opts.Tags, ordered by ID, with the same paging guarantees as ListInstances.
	ListTargetGroups(ctx context.Context, opts ListOptions) (*TargetGroupPage, error)

	// CreateTargetGroup creates a target group from spec and returns it as the cloud
	// stored it. It returns an error matching ErrConflict when a group with the same name
	// exists, and ErrInvalidRequest when the spec cannot be built. After an error matching
	// ErrTransient the group may exist: callers look it up by its tags before creating
	// again.
	CreateTargetGroup(ctx context.Context, spec TargetGroupSpec) (*TargetGroup, error)

	// UpdateTargetGroup makes the group with the given ID match update.Spec (its targets
	// and tags; the name does not change) and returns it as the cloud stored it.
	// update.AddTargets and update.RemoveTargets say which targets differ from what the
	// caller last read, for an API that adds and removes members one call at a time. It
	// returns an error matching ErrNotFound when the group does not exist.
	UpdateTargetGroup(ctx context.Context, id string, update TargetGroupUpdate) (*TargetGroup, error)

	// DeleteTargetGroup deletes the group with the given ID. It returns an error matching
	// ErrNotFound when the group does not exist, and ErrConflict while a load balancer
	// names it in its LoadBalancerSpec.TargetGroup: a group in use is never deleted.
	DeleteTargetGroup(ctx context.Context, id string) error
}

// TargetGroupClient is implemented by a Client whose cloud has target groups.
type TargetGroupClient interface {
	// TargetGroups returns the target group API and true, or (nil, false) when the cloud
	// has none (a client that wraps another answers for the one it wraps).
	TargetGroups() (TargetGroupAPI, bool)
}

// TargetGroups returns c's target group API when c implements TargetGroupClient and has
// one, else (nil, false).
func TargetGroups(c Client) (TargetGroupAPI, bool) {
	tc, ok := c.(TargetGroupClient)
	if !ok {
		return nil, false
	}
	api, ok := tc.TargetGroups()
	if !ok || api == nil {
		return nil, false
	}
	return api, true
}

// TargetGroupSpec is everything a caller decides about a target group.
type TargetGroupSpec struct {
	// Name is the group's name in the cloud: for humans and the cloud's uniqueness rules;
	// ccmkit finds its groups by Tags.
	Name string
	// Targets are the IDs of the member instances. The order carries no meaning.
	Targets []string
	// Tags are key/value labels stored with the group; ccmkit records its ownership in
	// them (TagCluster).
	Tags map[string]string
}

// Clone returns a deep copy of the spec.
func (s TargetGroupSpec) Clone() TargetGroupSpec {
	s.Targets = slices.Clone(s.Targets)
	s.Tags = maps.Clone(s.Tags)
	return s
}

// TargetGroup is a target group as the cloud reports it.
type TargetGroup struct {
	// ID is the cloud's ID of the group, which LoadBalancerSpec.TargetGroup names.
	ID string
	// Spec is the group's configuration.
	Spec TargetGroupSpec
}

// Clone returns a deep copy of the group.
func (g TargetGroup) Clone() TargetGroup {
	g.Spec = g.Spec.Clone()
	return g
}

// TargetGroupPage is one page of ListTargetGroups.
type TargetGroupPage struct {
	// Items are the groups of this page.
	Items []TargetGroup
	// NextPageToken continues the list; empty on the last page.
	NextPageToken string
}

// TargetGroupUpdate is the argument of UpdateTargetGroup.
type TargetGroupUpdate struct {
	// Spec is the complete desired group after the update.
	Spec TargetGroupSpec
	// AddTargets are the instance IDs in Spec.Targets that the group the caller read
	// lacks, sorted.
	AddTargets []string
	// RemoveTargets are the instance IDs of the group the caller read that Spec.Targets
	// lacks, sorted.
	RemoveTargets []string
	// Tags is true when Spec.Tags differ from the group the caller read.
	Tags bool
}

// Empty reports whether the update changes nothing.
func (u TargetGroupUpdate) Empty() bool {
	return len(u.AddTargets) == 0 && len(u.RemoveTargets) == 0 && !u.Tags
}

// DiffTargetGroup returns the update that makes a group configured as current one
// configured as desired: targets compared as sets, tags as maps. The name is not compared:
// a group keeps its name.
func DiffTargetGroup(current, desired TargetGroupSpec) TargetGroupUpdate {
	u := TargetGroupUpdate{Spec: desired}
	u.AddTargets, u.RemoveTargets = setDiff(current.Targets, desired.Targets)
	u.Tags = !maps.Equal(current.Tags, desired.Tags)
	return u
}
