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
	// TagAdopted is "true" on a load balancer a Service adopted (named by its
	// load-balancer-id annotation, or taken over from the cloud's earlier
	// cloud-controller-manager by its mark) rather than one ccmkit created. Such a load
	// balancer keeps what its earlier owner set, as long as it is the Service's, of each
	// part the Service sets no annotation for: the health check (whole when the Service
	// sets none of the health-check annotations, else all but the parts it sets; one
	// without a health check gets ccmkit's, but on a cloud that keeps health checks per
	// listener, where none read means the listeners' own, which stay), the
	// adapter's declared settings (such as a type or an algorithm; their defaults are not
	// applied), and the requested addresses. Everything else (listeners, targets, internal
	// or public, the PROXY protocol, source ranges) is what the Service asks for, as on a
	// load balancer ccmkit created. The targets are added and removed, never rewritten: how
	// an existing target is reached (a private or public address) stays as it is.
	TagAdopted = "ccmkit.io/adopted"
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
