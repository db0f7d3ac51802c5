package cloudapi

// The tag keys ccmkit writes to record ownership. Adapters store them as given, or map
// them onto the cloud's tag syntax in both directions; ccmkit relies on finding a resource
// by them with ListOptions.Tags.
const (
	// TagCluster holds the cluster ID of the cluster that owns a load balancer or route.
	TagCluster = "ccmkit.io/cluster"
	// TagService holds the UID of the Service that owns a load balancer.
	TagService = "ccmkit.io/service-uid"
	// TagServiceName holds the namespace/name of the Service that owns a load balancer,
	// for humans; ownership is decided by TagService.
	TagServiceName = "ccmkit.io/service"
	// TagNode holds the name of the Node whose pod CIDR a route serves.
	TagNode = "ccmkit.io/node"
	// TagTargetGroup holds which Nodes a target group of the cluster holds (TargetGroupAPI):
	// "all-nodes" for every Node the service controller passes, or "selector-" and a hash
	// of a node selector's canonical form. The load balancers that want the same Nodes
	// share the group with that value.
	TagTargetGroup = "ccmkit.io/target-group"
	// TagShare holds the share a load balancer serves when several Services share it:
	// "namespace/name" of the share, or "*/name" for a share across namespaces. Such a
	// load balancer carries no TagService; each of its listeners belongs to one Service,
	// whose UID begins the listener's name (ListenerNames must be kept, see
	// LoadBalancerShape).
	TagShare = "ccmkit.io/share"
	// TagShareNodes holds which Nodes a shared load balancer's targets are, in the form of
	// TagTargetGroup's values: what the Services of its share must agree on beside the
	// rest of the spec.
	TagShareNodes = "ccmkit.io/share-nodes"
)

// MatchTags reports whether tags carries every key of filter with the same value.
func MatchTags(tags, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}
