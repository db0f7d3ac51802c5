package routes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"k8s.io/klog/v2"
)

// owner is the one rule of which routes of the route table are the cluster's (the
// package documentation's "Ownership"): by the cluster tag, or, over a route API whose
// routes carry no tags (cloudapi.RoutesCarryNoTags), by the cluster's pod CIDRs and
// Nodes.
type owner struct {
	clusterID string
	tagless   bool
	cidrs     []netip.Prefix
	lookup    instances.Lookup
	nodeNames func(context.Context) ([]string, error)
}

// filter is the tag filter of a list of the cluster's routes: the cluster tag, or none
// when routes carry no tags.
func (o *owner) filter() map[string]string {
	if o.tagless {
		return nil
	}
	return map[string]string{cloudapi.TagCluster: o.clusterID}
}

// warm fills the instance lookup's snapshot before the process's first list of a table
// without tags, when the lookup can (NewLookup's, joining a list under way: the cloud
// node controller's at a process's start): claim reads each route's target from it
// anyway, and the adapter may answer the table's holders from that very list of the
// instances (cloudapi.GatewayRoutes' Listed) instead of listing them again. For an empty
// table it is a list claim would not have made, which the node controllers' reads then
// share. A failed list is claim's to report, by the reads that need it.
func (o *owner) warm(ctx context.Context) {
	w, ok := o.lookup.(interface{ Warm(context.Context) error })
	if !o.tagless || !ok {
		return
	}
	if err := w.Warm(ctx); err != nil {
		klog.FromContext(ctx).V(2).Info("Listing the instances before the route table's first list failed", "err", err)
	}
}

// inCIDRs reports whether the destination lies inside one of the cluster's pod CIDRs.
func (o *owner) inCIDRs(destination string) bool {
	dst, err := netip.ParsePrefix(destination)
	if err != nil {
		return false
	}
	for _, c := range o.cidrs {
		if c.Bits() <= dst.Bits() && c.Contains(dst.Addr()) {
			return true
		}
	}
	return false
}

// createdByUs reports whether a route found for a destination after a create failed, to
// the Node's instance, is the one ccmkit created: it carries the cluster tag, or, without
// tags, its destination lies in the cluster's pod CIDRs.
func (o *owner) createdByUs(rt *cloudapi.Route) bool {
	_, ok := o.created(rt, "")
	return ok
}

// created returns the snapshot's entry of a route ccmkit created for the Node (or found
// after a create whose answer was lost, to the Node's instance), and whether it is the
// cluster's as a list would see it: it carries the cluster tag, or, without tags, its
// destination lies in the cluster's pod CIDRs (its target is the Node's instance).
func (o *owner) created(rt *cloudapi.Route, node string) (entry, bool) {
	if rt == nil || rt.ID == "" {
		return entry{}, false
	}
	if !o.tagless {
		return entryOf(rt, rt.Tags[cloudapi.TagNode]), cloudapi.MatchTags(rt.Tags, o.filter())
	}
	return entryOf(rt, node), o.inCIDRs(rt.DestinationCIDR)
}

// claim returns the cluster's routes among rts, by ID. With tags, they are the routes
// that carry the cluster tag, each of the Node its cloudapi.TagNode names. Without, a
// route is the cluster's when its destination lies in the cluster's pod CIDRs and its
// target instance is one of a Node of the cluster (the Node named as the instance, as
// instances.Lookup.ByName finds it) or, for a route that known (the snapshot) held as the
// cluster's, while its destination and target are what they were then (its Node may
// have gone, its instance too: the route controller then deletes it). A route whose
// target is no instance, a blackhole, or an instance that is no Node's, is left out: when
// unsure, the route is not the cluster's. A failed lookup other than a certain not-found fails
// the claim.
func (o *owner) claim(ctx context.Context, rts []*cloudapi.Route, known map[string]entry) (map[string]entry, error) {
	out := make(map[string]entry, len(rts))
	if !o.tagless {
		for _, rt := range rts {
			if cloudapi.MatchTags(rt.Tags, o.filter()) {
				out[rt.ID] = entryOf(rt, rt.Tags[cloudapi.TagNode])
			}
		}
		return out, nil
	}
	var nodes map[string]bool // listed at the first route that needs it
	for _, rt := range rts {
		if !o.inCIDRs(rt.DestinationCIDR) {
			continue
		}
		if k, ok := known[rt.ID]; ok && k.destination == rt.DestinationCIDR &&
			(rt.TargetInstanceID == k.instance || (rt.TargetInstanceID == "" && rt.Blackhole)) {
			out[rt.ID] = entryOf(rt, k.node)
			continue
		}
		if rt.TargetInstanceID == "" || rt.Blackhole {
			// The cloud says the target is gone: no Node's now, and not asked for, so that
			// foreign blackholes spend none of the instance lookup's deletion brake.
			continue
		}
		inst, err := o.lookup.ByID(ctx, rt.TargetInstanceID)
		switch {
		case errors.Is(err, cloudapi.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("route %s (%s): finding its target instance %s: %w", rt.ID, rt.DestinationCIDR, rt.TargetInstanceID, err)
		}
		if nodes == nil {
			names, err := o.nodeNames(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing the cluster's Nodes: %w", err)
			}
			nodes = make(map[string]bool, len(names))
			for _, n := range names {
				nodes[instancecache.NameKey(n)] = true
			}
		}
		if node := instancecache.NameKey(inst.Name); nodes[node] {
			out[rt.ID] = entryOf(rt, node)
		}
	}
	return out, nil
}

// refusal says why a route of the table that DeleteRoute was asked to delete is not the
// cluster's, or "" when it is; known holds what the snapshot holds of it (see claim).
func (o *owner) refusal(ctx context.Context, rt *cloudapi.Route, known map[string]entry) (string, error) {
	if !o.tagless {
		if got := rt.Tags[cloudapi.TagCluster]; got != o.clusterID {
			return fmt.Sprintf("it is not a route of cluster %q (cluster tag %q)", o.clusterID, got), nil
		}
		return "", nil
	}
	owned, err := o.claim(ctx, []*cloudapi.Route{rt}, known)
	if err != nil {
		return "", err
	}
	if _, ok := owned[rt.ID]; !ok {
		return fmt.Sprintf("routes carry no tags, and this one (to instance %q) is not a route of cluster %q: its destination lies outside the cluster's pod CIDRs %v, or its target is no instance of a Node of the cluster",
			rt.TargetInstanceID, o.clusterID, o.cidrs), nil
	}
	return "", nil
}

func entryOf(rt *cloudapi.Route, node string) entry {
	return entry{id: rt.ID, destination: rt.DestinationCIDR, node: node, instance: rt.TargetInstanceID, blackhole: rt.Blackhole}
}
