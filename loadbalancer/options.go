package loadbalancer

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/providerid"
)

// ProvisioningRetryDelay is how long the service controller waits before it asks again
// about a load balancer that the cloud is still provisioning.
const ProvisioningRetryDelay = 5 * time.Second

// DefaultAnnotationPrefix is the prefix of the annotations when Options.AnnotationPrefix
// is empty.
const DefaultAnnotationPrefix = "loadbalancer.ccmkit.io/"

// Options configure a LoadBalancer.
type Options struct {
	// ClusterID is the cluster's ID. Every load balancer is tagged with it, and nothing
	// without it is read or changed. Required.
	ClusterID string
	// ProviderID is the format of the Nodes' provider IDs, to find the targets' instance
	// IDs. Required.
	ProviderID providerid.Format
	// AnnotationPrefix is the prefix of the Service annotations, ending in "/". Default
	// DefaultAnnotationPrefix.
	AnnotationPrefix string
	// MaxAge is how old the snapshot of the cluster's load balancers may get before a call
	// refreshes it with one paged list by the cluster tag. Zero means DefaultMaxAge. A load
	// balancer changed behind ccmkit's back while it matches its Service in the snapshot
	// is repaired at most MaxAge later; a longer MaxAge never makes a write wrong, since
	// every write is based on a fresh read.
	MaxAge time.Duration
	// PageSize is the page size asked for when listing the snapshot. Zero means the
	// backend's default.
	PageSize int
	// Clock is the clock the snapshot ages by. Nil means the real clock,
	// clock.RealClock{}; simulations and tests pass a fake one.
	Clock clock.PassiveClock
	// KeepOnDelete is what a Service without the keep-on-delete annotation gets. When
	// true, EnsureLoadBalancerDeleted releases the load balancer (removes its owner tags
	// and targets, keeps it and its addresses) instead of deleting it, and
	// EnsureLoadBalancer refuses an internal switch, which would replace it. Default false.
	KeepOnDelete bool
	// Recorder receives the events that say what ccmkit did beyond an error: a load
	// balancer adopted (AdoptedLoadBalancer) or kept in the cloud (KeptLoadBalancer),
	// annotation keys under the prefix or a legacy prefix that nothing reads
	// (UnknownAnnotation, a Warning), an annotation and its alias that disagree
	// (ConflictingAnnotations, a Warning),
	// and addresses or a hostname of the cloud's that the Service's status cannot hold
	// (AddressNotPublished, a Warning), calls the cloud throttled (EventCloudThrottled, a
	// Warning), ports or shared parts a share's other Services have (ShareConflict, a
	// Warning) and a new load balancer the creation brake holds (ReasonCreationHeld, a
	// Warning), on the Service. Nil records none.
	Recorder record.EventRecorder
	// Services is the Kubernetes API through which EnsureLoadBalancer,
	// UpdateLoadBalancer and EnsureLoadBalancerDeleted (and GetLoadBalancer, for a Service
	// that wants no load balancer) write on the Service what they found: the annotation
	// StatusAnnotationLoadBalancerID (a merge patch of the Service) and the condition
	// ConditionLoadBalancerReady (a strategic merge patch of its status subresource that
	// touches no other condition and not status.loadBalancer), each only when it changes.
	// A failed write is logged, does not fail the call and holds the writes on that
	// Service for a minute. It also lists Services: of a share's scope, whether another
	// Service of the share exists before its load balancer is deleted; of every
	// namespace, how many Services with an address would get a new load balancer at once
	// (CreationBrake). Nil writes and lists nothing (a share's members are then the ones
	// this process synced, and the creation brake counts the creates as they come), and
	// so does a nil ServiceInterface from it (a client not set up yet).
	Services typedcorev1.ServicesGetter
	// Settings are the adapter's declarations of its own load balancer settings (see
	// Setting); their values are read from the Service's annotations and handed to the
	// cloud in cloudapi.LoadBalancerSpec.SettingValues. New refuses declarations that
	// Settings.Validate refuses.
	Settings Settings
	// SettingDefaults override the declared defaults of Settings for every Service
	// (setting name to value, as the cloud config's loadBalancer.settings). New refuses a
	// name not declared, a value not allowed and a setting declared ServiceOnly.
	SettingDefaults map[string]string
	// Shape declares what the cloud's load balancers do not keep (never compared, so a
	// converged load balancer costs no write) and do not support (a Service asking for
	// one fails its sync with an error naming it, and nothing is written). The zero value
	// keeps and supports everything. New refuses a shape that Validate refuses.
	Shape cloudapi.LoadBalancerShape
	// Aliases are the annotation keys of the cloud's earlier cloud-controller-manager that
	// stand for ccmkit's annotations and the Settings, and its prefixes (see Aliases). New
	// refuses declarations that Aliases.Validate refuses for AnnotationPrefix.
	Aliases Aliases
	// TargetGroups is the cloud's target group API, or nil when the cloud has none (see
	// cloudapi.TargetGroups). With it, the load balancers that want the same Nodes (the
	// same node selector, or none) send traffic to one shared target group instead of
	// their own targets, so that a Node added or removed is one write to each group
	// rather than one per load balancer (see groups.go and internal/targetgroups).
	// Existing load balancers move into their group with one update
	// each, addresses kept. Nil keeps each load balancer's own targets.
	TargetGroups cloudapi.TargetGroupAPI
	// Serves reports whether this LoadBalancer serves the Service (its load balancer
	// class, see lbclass): a Service it does not serve is no member of a share, whatever
	// its annotations. Nil serves every Service.
	Serves func(svc *corev1.Service) bool
	// ShareAcrossNamespaces makes the share annotation's names the same in every
	// namespace: Services of any namespace that name one share share its load balancer.
	// False (the default) scopes a share to its namespace. It is the operator's decision,
	// never a user's: with it, a user of one namespace can add listeners to the address of
	// another's. Changing it moves every share to a new load balancer (the shares' keys,
	// cloudapi.TagShare, change); the old ones go as their Services leave them (the last
	// one out deletes it), or with the sweeper.
	ShareAcrossNamespaces bool
	// CreationBrake bounds how many Services whose status already holds an address may
	// each get a new load balancer (see CreationBrake); the zero value is off. New
	// refuses one that CreationBrake.Validate refuses.
	CreationBrake CreationBrake
	// OnCreationHeld, when set, is called each time the creation brake holds a create.
	OnCreationHeld func()
	// NodeProviderID, when set, returns the provider ID that the cloud node controller
	// gives the Node named name, which has none yet, when the instances know it (package
	// instances' KnownProviderID: from the instance snapshot, listed once for the new
	// names it lacks, the list the node controller's lookup of a new Node shares); ok
	// false otherwise. UpdateLoadBalancer then
	// targets a Node being initialized from the service controller's first node sync of
	// it on, instead of its next one, once the Node has its provider ID (see
	// nodeSetClock). Nil skips a Node without a provider ID until it has one.
	NodeProviderID func(ctx context.Context, name string) (providerID string, ok bool)
}
