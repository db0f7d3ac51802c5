package paging

import (
	"context"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// The typed lists: every list ccmkit makes of a cloud goes through one of these. Each
// fetches every page with the page size (0: the backend's default) and the tag filter
// (nil: every item), reads a page the cloud did not answer (nil, no error) as NoPage,
// hands each ID over once (All), and hands over only the items that carry every tag of
// the filter, whatever the backend's filter did: a backend that ignored it must not make
// ccmkit touch another owner's resource. Each returns what All returns.

// Instances lists every instance.
func Instances(ctx context.Context, api cloudapi.InstanceAPI, pageSize int, each func(*cloudapi.Instance) bool) (int, error) {
	fetch := fetcher(api.ListInstances, func(p *cloudapi.InstancePage) ([]cloudapi.Instance, string) { return p.Items, p.NextPageToken })
	return list(ctx, cloudapi.OpListInstances, fetch, cloudapi.ListOptions{PageSize: pageSize}, instanceID, nil, each)
}

// LoadBalancers lists the load balancers that carry every tag of tags.
func LoadBalancers(ctx context.Context, api cloudapi.LoadBalancerAPI, tags map[string]string, pageSize int, each func(*cloudapi.LoadBalancer) bool) (int, error) {
	fetch := fetcher(api.ListLoadBalancers, func(p *cloudapi.LoadBalancerPage) ([]cloudapi.LoadBalancer, string) { return p.Items, p.NextPageToken })
	tagsOf := func(lb *cloudapi.LoadBalancer) map[string]string { return lb.Spec.Tags }
	return list(ctx, cloudapi.OpListLoadBalancers, fetch, cloudapi.ListOptions{Tags: tags, PageSize: pageSize}, loadBalancerID, tagsOf, each)
}

// Routes lists the routes that carry every tag of tags.
func Routes(ctx context.Context, api cloudapi.RouteAPI, tags map[string]string, pageSize int, each func(*cloudapi.Route) bool) (int, error) {
	fetch := fetcher(api.ListRoutes, func(p *cloudapi.RoutePage) ([]cloudapi.Route, string) { return p.Items, p.NextPageToken })
	tagsOf := func(rt *cloudapi.Route) map[string]string { return rt.Tags }
	return list(ctx, cloudapi.OpListRoutes, fetch, cloudapi.ListOptions{Tags: tags, PageSize: pageSize}, routeID, tagsOf, each)
}

// TargetGroups lists the target groups that carry every tag of tags.
func TargetGroups(ctx context.Context, api cloudapi.TargetGroupAPI, tags map[string]string, pageSize int, each func(*cloudapi.TargetGroup) bool) (int, error) {
	fetch := fetcher(api.ListTargetGroups, func(p *cloudapi.TargetGroupPage) ([]cloudapi.TargetGroup, string) { return p.Items, p.NextPageToken })
	tagsOf := func(g *cloudapi.TargetGroup) map[string]string { return g.Spec.Tags }
	return list(ctx, cloudapi.OpListTargetGroups, fetch, cloudapi.ListOptions{Tags: tags, PageSize: pageSize}, targetGroupID, tagsOf, each)
}

// fetcher adapts a cloudapi list call, whose page P holds items of T (unpack), to list's
// fetch.
func fetcher[T, P any](call func(context.Context, cloudapi.ListOptions) (*P, error), unpack func(*P) ([]T, string)) func(context.Context, cloudapi.ListOptions) ([]T, string, bool, error) {
	return func(ctx context.Context, o cloudapi.ListOptions) ([]T, string, bool, error) {
		p, err := call(ctx, o)
		if err != nil || p == nil {
			return nil, "", false, err
		}
		items, next := unpack(p)
		return items, next, true, nil
	}
}

// list is All over fetch, a list call of op that answers a page's items, its next token
// and whether there was a page, with opts's filter and page size; tagsOf, when not nil,
// gives the tags an item must carry all of opts.Tags in to be handed to each.
func list[T any](ctx context.Context, op cloudapi.Operation, fetch func(context.Context, cloudapi.ListOptions) ([]T, string, bool, error),
	opts cloudapi.ListOptions, id ID[T], tagsOf func(*T) map[string]string, each func(*T) bool) (int, error) {
	page := func(ctx context.Context, token string) ([]T, string, error) {
		o := opts
		o.PageToken = token
		items, next, ok, err := fetch(ctx, o)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", NoPage(op)
		}
		if tagsOf != nil {
			// Before All counts an ID as seen: a stale copy without the tags that a page
			// of a backend ignoring the filter repeats must not hide the current one.
			kept := make([]T, 0, len(items)) // a new slice: the answer's may be the backend's
			for i := range items {
				if cloudapi.MatchTags(tagsOf(&items[i]), opts.Tags) {
					kept = append(kept, items[i])
				}
			}
			items = kept
		}
		return items, next, nil
	}
	return All(ctx, op, page, id, each)
}
