package cloudapi

// Operation names one method of the cloud API. Counters, fault injection, metrics and
// logs use these values, so that no layer types an operation name by hand.
type Operation string

// The operations, one per method of InstanceAPI, LoadBalancerAPI, RouteAPI and
// TargetGroupAPI.
const (
	OpGetInstance        Operation = "GetInstance"
	OpListInstances      Operation = "ListInstances"
	OpGetLoadBalancer    Operation = "GetLoadBalancer"
	OpListLoadBalancers  Operation = "ListLoadBalancers"
	OpCreateLoadBalancer Operation = "CreateLoadBalancer"
	OpUpdateLoadBalancer Operation = "UpdateLoadBalancer"
	OpDeleteLoadBalancer Operation = "DeleteLoadBalancer"
	OpListRoutes         Operation = "ListRoutes"
	OpCreateRoute        Operation = "CreateRoute"
	OpDeleteRoute        Operation = "DeleteRoute"

	OpListTargetGroups  Operation = "ListTargetGroups"
	OpCreateTargetGroup Operation = "CreateTargetGroup"
	OpUpdateTargetGroup Operation = "UpdateTargetGroup"
	OpDeleteTargetGroup Operation = "DeleteTargetGroup"
)

// Operations returns every operation, reads first.
func Operations() []Operation {
	return []Operation{
		OpGetInstance, OpListInstances, OpGetLoadBalancer, OpListLoadBalancers, OpListRoutes, OpListTargetGroups,
		OpCreateLoadBalancer, OpUpdateLoadBalancer, OpDeleteLoadBalancer, OpCreateRoute, OpDeleteRoute,
		OpCreateTargetGroup, OpUpdateTargetGroup, OpDeleteTargetGroup,
	}
}

// IsWrite reports whether the operation changes cloud state. Reads are always safe to
// retry; writes are not (see ErrTransient).
func (o Operation) IsWrite() bool {
	switch o {
	case OpCreateLoadBalancer, OpUpdateLoadBalancer, OpDeleteLoadBalancer, OpCreateRoute, OpDeleteRoute,
		OpCreateTargetGroup, OpUpdateTargetGroup, OpDeleteTargetGroup:
		return true
	}
	return false
}

// Valid reports whether o is one of the defined operations.
func (o Operation) Valid() bool {
	switch o {
	case OpGetInstance, OpListInstances, OpGetLoadBalancer, OpListLoadBalancers, OpCreateLoadBalancer,
		OpUpdateLoadBalancer, OpDeleteLoadBalancer, OpListRoutes, OpCreateRoute, OpDeleteRoute,
		OpListTargetGroups, OpCreateTargetGroup, OpUpdateTargetGroup, OpDeleteTargetGroup:
		return true
	}
	return false
}
