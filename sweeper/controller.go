package sweeper

import "github.com/ccmkit/ccmkit/cloudapi"

const (
	// ControllerName is the sweeper's name among the cloud-controller-manager's
	// controllers: what --controllers enables or disables ("*" includes it;
	// "-ccmkit-sweeper" leaves it out), and the source of its events.
	ControllerName = "ccmkit-sweeper"
	// ClientName is the identity the sweeper calls the API server as. With
	// --use-service-account-credentials it is the ServiceAccount kube-system/ccmkit-sweeper,
	// which needs get on services and nodes and list on services (the live reads) and
	// create, patch and update on events (in every namespace for Services, in default for
	// Nodes).
	ClientName = "ccmkit-sweeper"
)

// Target is what a cloud provider hands the sweeper: its cloud APIs (through the same
// client decorator as every other call: rate limit, retries, metrics) and the options,
// which carry the target group API when groups are swept (Options.TargetGroups).
type Target struct {
	// LoadBalancers are swept when not nil.
	LoadBalancers cloudapi.LoadBalancerAPI
	// Routes are swept when not nil.
	Routes cloudapi.RouteAPI
	// Options configure the sweeper; Recorder is set by the controller controllers.With adds.
	Options Options
}

// Cloud is a cloud provider that offers a sweeper. ccmkit's provider (*provider.Cloud)
// is one: the cloud config's sweeper section switches it on.
type Cloud interface {
	// Sweeper returns what the sweeper sweeps and how; ok is false when it is off.
	Sweeper() (target Target, ok bool)
}
