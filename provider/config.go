package provider

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
	"github.com/ccmkit/ccmkit/internal/nodelabels"
	"github.com/ccmkit/ccmkit/internal/sharedlist"
	"github.com/ccmkit/ccmkit/internal/strictyaml"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/sweeper"
)

// Defaults of the cloud config. A zero value in a Config means "use the default".
const (
	// DefaultProviderName is the name the built-in provider registers under.
	DefaultProviderName = "ccmkit"
	// DefaultAnnotationPrefix is the prefix of the load balancer annotations.
	DefaultAnnotationPrefix = loadbalancer.DefaultAnnotationPrefix
	// DefaultQPS is the sustained rate of cloud API calls.
	DefaultQPS = 10
	// DefaultBurst is how many cloud API calls may go out at once after a quiet period.
	DefaultBurst = 20
	// MinQPS is the lowest cloudAPI.qps, one call every 1000 s; a slower rate is no limit
	// anyone means, and below about 1e-10 the interval between two calls would overflow.
	MinQPS = cloudclient.MinQPS
	// MaxBurst is the highest cloudAPI.burst, more calls at once than any cloud API
	// accepts.
	MaxBurst = cloudclient.MaxBurst
	// DefaultTimeout bounds one attempt of one cloud API call.
	DefaultTimeout = cloudclient.DefaultTimeout
	// DefaultMaxAttempts is how often a retryable call is tried in all.
	DefaultMaxAttempts = cloudclient.DefaultMaxAttempts
	// DefaultInitialBackoff is the wait before the first retry.
	DefaultInitialBackoff = cloudclient.DefaultInitialBackoff
	// DefaultMaxBackoff caps the wait between retries.
	DefaultMaxBackoff = cloudclient.DefaultMaxBackoff
	// DefaultMaxRetryAfter caps how long a Retry-After from the cloud holds calls back;
	// internal/cloudclient.DefaultMaxRetryAfter says why five minutes.
	DefaultMaxRetryAfter = cloudclient.DefaultMaxRetryAfter
	// DefaultCacheMaxAge is how old each of the three snapshots (instances, load
	// balancers, routes) may get before a lookup refreshes it.
	DefaultCacheMaxAge = sharedlist.DefaultMaxAge
	// DefaultSweeperGracePeriod is how long a load balancer, route or target group must
	// look orphaned before the sweeper deletes it.
	DefaultSweeperGracePeriod = sweeper.DefaultGracePeriod
	// DefaultSweeperInterval is the time between two sweeps.
	DefaultSweeperInterval = sweeper.DefaultInterval
	// DefaultDeletionBrakeWindow is the default nodes.deletionBrake.window.
	DefaultDeletionBrakeWindow = instances.DefaultBrakeWindow
	// DefaultDeletionBrakeShare is the default nodes.deletionBrake.share.
	DefaultDeletionBrakeShare = instances.DefaultBrakeShare
	// DefaultDeletionBrakeMinimum is the default nodes.deletionBrake.minimum.
	DefaultDeletionBrakeMinimum = instances.DefaultBrakeMinimum
	// DefaultCreationBrakeWindow is the default loadBalancer.creationBrake.window: the
	// deletion brake's.
	DefaultCreationBrakeWindow = DefaultDeletionBrakeWindow
	// DefaultCreationBrakeShare is the default loadBalancer.creationBrake.share: the
	// deletion brake's.
	DefaultCreationBrakeShare = DefaultDeletionBrakeShare
	// DefaultCreationBrakeMinimum is the default loadBalancer.creationBrake.minimum: the
	// deletion brake's.
	DefaultCreationBrakeMinimum = DefaultDeletionBrakeMinimum
)

// Config is a provider's cloud config, the YAML file given to the cloud-controller-manager
// with --cloud-config. Read it with ReadConfig and check it with Validate. The
// configuration reference (docs/reference/config.md) is generated from these doc
// comments.
type Config struct {
	// Backend names the cloud backend (YAML "backend"). Empty means the one backend the
	// provider was registered with. The backend's own settings live under a top-level key
	// of the same name.
	Backend string `yaml:"backend"`
	// Cluster identifies the cluster (YAML "cluster").
	Cluster ClusterConfig `yaml:"cluster"`
	// Region is the cloud region of the cluster (YAML "region"), used where an instance
	// reports none.
	Region string `yaml:"region"`
	// Zone is the zone that Zones.GetZone reports (YAML "zone"). Empty makes GetZone
	// answer NotImplemented: the cloud-controller-manager does not run on the node it
	// would describe.
	Zone string `yaml:"zone"`
	// Credentials for the cloud API (YAML "credentials").
	Credentials CredentialsConfig `yaml:"credentials"`
	// CloudAPI tunes how ccmkit calls the cloud API (YAML "cloudAPI").
	CloudAPI CloudAPIConfig `yaml:"cloudAPI"`
	// Cache tunes the shared instance snapshot (YAML "cache").
	Cache CacheConfig `yaml:"cache"`
	// Enable switches the parts of cloudprovider.Interface on or off (YAML "enable").
	Enable EnableConfig `yaml:"enable"`
	// LoadBalancer configures Service load balancers (YAML "loadBalancer").
	LoadBalancer LoadBalancerConfig `yaml:"loadBalancer"`
	// Nodes configures what Node initialization reports (YAML "nodes").
	Nodes NodesConfig `yaml:"nodes"`
	// Routes configures the routes of the pod network (YAML "routes").
	Routes RoutesConfig `yaml:"routes"`
	// Sweeper configures the sweeper of orphaned load balancers and routes (YAML
	// "sweeper"), the controller of package sweeper.
	Sweeper SweeperConfig `yaml:"sweeper"`

	// sections holds the top-level keys that are not fields above, by key: the backend's
	// own section, and anything misspelt (which Validate reports).
	sections map[string]*yaml.Node
}

// ClusterConfig identifies the cluster.
type ClusterConfig struct {
	// ID is the cluster's unique ID in the cloud account (YAML "id"). ccmkit tags every
	// load balancer and route it creates with it, and touches nothing without it. Required
	// when load balancers or routes are enabled; letters, digits, '.', '_' and '-', at most
	// 63 characters. The cloud names of its load balancers and target groups begin with
	// it when it is at most 24 lower-case letters, digits and '-' (beginning and ending
	// with a letter or digit); any other is shortened and ends with a hash of the ID, so
	// that two clusters' names never meet.
	ID string `yaml:"id"`
	// Name is the cluster's name (YAML "name"), reported by Clusters.ListClusters.
	// Defaults to cluster.id.
	Name string `yaml:"name"`
	// Master is the address of the cluster's API server (YAML "master"), reported by
	// Clusters.Master. Optional.
	Master string `yaml:"master"`
}

// CredentialsConfig holds the cloud API credential. At most one source may be set: the
// token inline, a file holding it, the environment variable <PROVIDER>_CLOUD_TOKEN, or
// the environment variable <PROVIDER>_CLOUD_TOKEN_FILE naming a file (PROVIDER is the
// provider name in upper case, '-' and '.' as '_': CCMKIT_CLOUD_TOKEN for the built-in
// provider ccmkit). ReadConfig resolves them into Token. Credentials never appear in
// logs, errors or %v.
//
// No error about the credentials quotes anything from them, neither a value nor a key,
// tag or anchor of the YAML section, nor the token file's name (a token typed into
// tokenFile would be printed as the name): errors say the line and column and what is
// wrong. So the section may carry no YAML anchor or alias (a copy of the credential
// elsewhere would be quoted by errors about that place), nor any tag but the standard
// ones.
type CredentialsConfig struct {
	// Token is the credential (YAML "token"). Prefer TokenFile or the environment.
	Token Secret `yaml:"token"`
	// TokenFile is the path of a file holding the credential (YAML "tokenFile"), for
	// example a mounted Kubernetes Secret: a regular file of at most 64 KiB. Surrounding
	// white space is trimmed.
	TokenFile string `yaml:"tokenFile"`

	// tokenFileLine is the line of TokenFile in the config file, for errors; 0 when the
	// Config was not read from a file.
	tokenFileLine int
	// fromFile is set when ReadConfig read Token from TokenFile: both are set then.
	fromFile bool
}

// CloudAPIConfig tunes how ccmkit calls the cloud API. All calls of all controllers share
// one rate limit.
type CloudAPIConfig struct {
	// QPS is the sustained rate of calls per second (YAML "qps"); default 10, at least
	// MinQPS (0.001), finite. ccmkit also slows down on its own when the cloud answers
	// "throttled". Zero means the default, not "unlimited": see Unlimited.
	QPS float64 `yaml:"qps"`
	// Burst is how many calls may go out at once (YAML "burst"); default 20, at most
	// MaxBurst (10000).
	Burst int `yaml:"burst"`
	// Unlimited turns the client-side rate limit off (YAML "unlimited"); default false.
	// QPS and Burst must then be unset. ccmkit then only waits for the cloud's
	// Retry-After and cannot lower its rate when the cloud throttles: for clouds that
	// rate-limit on their side and tests, not for production.
	Unlimited bool `yaml:"unlimited"`
	// Timeout bounds one attempt of one call (YAML "timeout"); default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// Retry is the retry policy for calls that are safe to repeat (YAML "retry").
	Retry RetryConfig `yaml:"retry"`
	// PageSize is the page size ccmkit asks for when it lists (YAML "pageSize"); default
	// 0, the backend's own default.
	PageSize int `yaml:"pageSize"`
	// MaxRetryAfter caps the wait that a Retry-After from the cloud imposes on the retry
	// and on every other call (YAML "maxRetryAfter"); default 5m. A longer Retry-After is
	// cut to it and logged at V(2), so that a wrong or hostile answer cannot stop the
	// controllers for long; a cloud that needs longer throttles the next call again.
	MaxRetryAfter time.Duration `yaml:"maxRetryAfter"`
}

// RetryConfig is the retry policy: exponential backoff with jitter, for reads and for
// writes that are safe to repeat. Creates are never retried after an ambiguous failure.
type RetryConfig struct {
	// MaxAttempts is how often a call is tried in all, the first try included (YAML
	// "maxAttempts"); default 4; 1 disables retries.
	MaxAttempts int `yaml:"maxAttempts"`
	// InitialBackoff is the wait before the first retry (YAML "initialBackoff"); default
	// 200ms. It doubles with every retry.
	InitialBackoff time.Duration `yaml:"initialBackoff"`
	// MaxBackoff caps the wait between two tries (YAML "maxBackoff"); default 10s.
	MaxBackoff time.Duration `yaml:"maxBackoff"`
}

// CacheConfig tunes the provider's three snapshots: the instance snapshot that node
// initialization, node lifecycle, zones and routes share, the snapshot of the cluster's
// load balancers, and the snapshot of the cluster's routes that answers the route
// controller's ListRoutes.
type CacheConfig struct {
	// MaxAge is how old any snapshot may get before a lookup refreshes it (YAML
	// "maxAge"); default 1m. An instance missing from the instance snapshot is always
	// confirmed with the cloud before anyone is told it is gone, so a longer MaxAge never
	// deletes a Node; every load balancer write is based on a fresh read, so a longer
	// MaxAge never makes a write wrong, but a load balancer changed behind ccmkit's back
	// while the snapshot still matches its Service is repaired up to MaxAge later; the
	// route snapshot is kept current by ccmkit's own writes and listed again after a
	// failed one, so a route deleted or changed behind ccmkit's back is repaired up to
	// MaxAge plus one route reconcile period (10 s) later, and a route whose instance was
	// deleted is seen as a blackhole and deleted as late.
	MaxAge time.Duration `yaml:"maxAge"`
}

// EnableConfig switches the parts of cloudprovider.Interface on or off. A part is also
// off when the backend lacks the capability; enabling it then is a configuration error.
type EnableConfig struct {
	// Instances enables InstancesV2, Instances and Zones (YAML "instances"); default true.
	Instances *bool `yaml:"instances"`
	// LoadBalancers enables LoadBalancer (YAML "loadBalancers"); default true.
	LoadBalancers *bool `yaml:"loadBalancers"`
	// Routes enables Routes (YAML "routes"); default false, because the route controller
	// of the cloud-controller-manager exits when routes are offered but --cluster-cidr is
	// not set.
	Routes *bool `yaml:"routes"`
}

// NodesConfig configures what Node initialization reports.
type NodesConfig struct {
	// AdditionalLabels are put on every Node at initialization (YAML "additionalLabels").
	// Keys are qualified names; keys under kubernetes.io and k8s.io (and their
	// subdomains, such as node.kubernetes.io) are refused: those belong to Kubernetes.
	AdditionalLabels map[string]string `yaml:"additionalLabels"`
	// LabelsFromTags maps instance tag keys to Node label keys (YAML "labelsFromTags"):
	// at initialization, a Node whose instance carries the tag gets the label with the
	// tag's value. Label keys follow the rules of AdditionalLabels; each comes from one
	// tag and none is in AdditionalLabels too. A tag the instance lacks adds no label; a
	// tag whose value is not a valid label value (at most 63 characters of letters,
	// digits, '-', '_' and '.', starting and ending with a letter or digit) adds none
	// either and is logged with the instance, tag and value, so that the Node still
	// initializes. Labels are set once, at initialization: a tag changed later does not
	// change the Node, and a label the Node already has (from the kubelet's --node-labels)
	// is kept as it is.
	LabelsFromTags map[string]string `yaml:"labelsFromTags"`
	// IPFamilies orders the Node's addresses by family, primary first (YAML
	// "ipFamilies"); default [IPv4, IPv6]. Put IPv6 first in an IPv6-primary cluster, so
	// that the node IP the kubelet and the cluster pick is of the primary family.
	IPFamilies []cloudapi.IPFamily `yaml:"ipFamilies"`
	// DeletionBrake bounds how many instances may read as gone, so that a cloud
	// answering "gone" for the whole cluster cannot have the node lifecycle controller
	// delete its NotReady Nodes (YAML "deletionBrake"); on by default.
	DeletionBrake DeletionBrakeConfig `yaml:"deletionBrake"`
}

// DeletionBrakeConfig configures the deletion brake: within any Window, at most Share of
// the known instances (the most any list within the window had live), and at least
// Minimum, may read as gone; and none while the instance list has none of the instances
// live that the list before had. The rule, its defaults and their reasons are in
// internal/instancecache's documentation ("The deletion brake"); an answer "gone" held back keeps the Node, with a
// Warning event InstanceGoneRefused on it, until the brake allows it, the cloud lists the
// instances again, or the Node is annotated ccmkit.io/acknowledge-instance-gone=true.
type DeletionBrakeConfig struct {
	// Enabled switches the brake on (YAML "enabled"); default true.
	Enabled *bool `yaml:"enabled"`
	// Window is the time over which answers "gone" are counted (YAML "window"); default
	// 10m.
	Window time.Duration `yaml:"window"`
	// Share is the share of the known instances that may read as gone within a window
	// (YAML "share"), more than 0 and at most 1; default 0.5.
	Share float64 `yaml:"share"`
	// Minimum is how many instances may read as gone within a window whatever Share of
	// the known instances is (YAML "minimum"), so that small clusters scale down;
	// default 2.
	Minimum int `yaml:"minimum"`
}

// CreationBrakeConfig configures the creation brake: within any Window, at most Share of
// the load balancers of Services that have an address (and at least Minimum) may be made
// anew. With a Kubernetes client (the cloud-controller-manager's), the brake counts every
// Service that would get a new load balancer at once, so a wrong project is held from its
// first create; without one it counts them as they come. A held Service keeps its
// address in its status, its sync fails with condition reason CreationHeld and a Warning
// event CreationHeld says what to do: correct the cloud config, or annotate the Service
// ccmkit.io/acknowledge-new-load-balancer=<the address it gives up>. A Service without an
// address is never held. The rule is package loadbalancer's CreationBrake.
type CreationBrakeConfig struct {
	// Enabled switches the brake on (YAML "enabled"); default true.
	Enabled *bool `yaml:"enabled"`
	// Window is the time over which new load balancers of Services with an address are
	// counted (YAML "window"); default 10m.
	Window time.Duration `yaml:"window"`
	// Share is the share of the Services with an address (counted by load balancer: a
	// share's Services once) that may get a new load balancer within a window (YAML
	// "share"), more than 0 and at most 1; default 0.5.
	Share float64 `yaml:"share"`
	// Minimum is how many may get a new load balancer within a window whatever Share
	// allows (YAML "minimum"); default 2.
	Minimum int `yaml:"minimum"`
}

// LoadBalancerConfig configures Service load balancers.
type LoadBalancerConfig struct {
	// AnnotationPrefix is the prefix of the Service annotations ccmkit reads (YAML
	// "annotationPrefix"); default "loadbalancer.ccmkit.io/", or the adapter's own.
	// It must be a DNS subdomain followed by "/".
	AnnotationPrefix string `yaml:"annotationPrefix"`
	// KeepOnDelete is the default of the keep-on-delete annotation (YAML "keepOnDelete");
	// default false. When true, the load balancer of a Service that is deleted or stops
	// being of type LoadBalancer is kept in the cloud with its addresses: ccmkit removes
	// its ownership tags and targets instead of deleting it, and a Service can adopt it
	// again with the load-balancer-id annotation. Kept load balancers cost money until
	// someone deletes them in the cloud.
	KeepOnDelete bool `yaml:"keepOnDelete"`
	// ShareAcrossNamespaces makes the names of the share annotation the same in every
	// namespace (YAML "shareAcrossNamespaces"); default false: a share is scoped to its
	// namespace. With it, Services of any namespace that name one share share its load
	// balancer and addresses, so a user of one namespace can add ports to another's
	// address: an operator's decision. Changing it moves every share to a new load
	// balancer; the old ones go as their Services leave them, or with the sweeper.
	ShareAcrossNamespaces bool `yaml:"shareAcrossNamespaces"`
	// CreationBrake bounds how many Services whose status already holds an address may
	// each get a new load balancer, so that a config pointed at another project or
	// account (where none of the cluster's load balancers is found) does not replace
	// every published address (YAML "creationBrake"); on by default.
	CreationBrake CreationBrakeConfig `yaml:"creationBrake"`
	// Class is the load balancer class ccmkit serves (YAML "class"): Services of type
	// LoadBalancer whose spec.loadBalancerClass is Class get their load balancer from
	// ccmkit, through the class controller service-lb-class-controller (package lbclass)
	// that the cloud-controller-manager's main.go adds (controllers.With). The upstream service controller skips
	// every Service with a class. Empty (the default): no class; Services of any class
	// are left to their own controllers. A label-style key, as Kubernetes validates
	// spec.loadBalancerClass: an optional DNS subdomain prefix and "/", then a name of
	// at most 63 letters, digits, '-', '_' or '.', such as "example.com/ccmkit".
	Class string `yaml:"class"`
	// ServeUnclassed says whether ccmkit also serves Services without
	// spec.loadBalancerClass (YAML "serveUnclassed"); default true, as without a class.
	// Those are served by the upstream service controller. false needs Class: the
	// provider's LoadBalancer then answers (nil, false), so the upstream service
	// controller does not start and Services without a class are left to another
	// implementation.
	ServeUnclassed *bool `yaml:"serveUnclassed"`
	// SettingDefaults are the defaults of the adapter's own load balancer settings for every
	// Service (YAML "settings"): setting name to value, overriding the adapter's declared
	// defaults; a Service's annotation overrides them. Each name must be one the adapter
	// declares (provider.Options.LoadBalancerSettings) and each value allowed; checked
	// with the rest of the config. Default: none, the adapter's defaults.
	SettingDefaults map[string]string `yaml:"settings"`
	// TargetGroups says whether load balancers share the cloud's target groups when the
	// adapter offers them (cloudapi.TargetGroupClient) (YAML "targetGroups"); default
	// true. Then the load balancers that want the same Nodes (the same node selector, or
	// none) send traffic to one group tagged ccmkit.io/cluster and
	// ccmkit.io/target-group, and a Node added or removed is one write per group instead
	// of one per load balancer. Existing load balancers move into their group with one
	// update each (addresses kept); a group no load balancer names any more is deleted.
	// false keeps each load balancer's own targets (and moves load balancers out of their
	// groups, one update each, leaving the emptied groups in the cloud). Without the
	// capability it changes nothing.
	TargetGroups *bool `yaml:"targetGroups"`
}

// RoutesConfig configures the routes of the pod network (package routes).
type RoutesConfig struct {
	// ClusterCIDRs are the cluster's pod CIDRs (YAML "clusterCIDRs"), the same as the
	// route controller's --cluster-cidr, which the cloud provider is not told: for
	// example [10.244.0.0/16] or, dual-stack, [10.244.0.0/16, "fd00:10:244::/56"].
	// Required when routes are on and the backend's routes carry no tags
	// (cloudapi.TaglessRouteAPI, such as Hetzner's), refused otherwise: ccmkit then owns
	// a route only when its destination lies inside one of them and its target is the
	// instance of one of the cluster's Nodes. Each a canonical CIDR (no host bits), none
	// covering a whole address family, none overlapping another. The rule assumes one
	// cluster per pod CIDR in a network (docs/operating.md, Routes).
	ClusterCIDRs []string `yaml:"clusterCIDRs"`
}

// podCIDRs returns ClusterCIDRs parsed, leaving out any that Validate refuses.
func (c RoutesConfig) podCIDRs() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range c.ClusterCIDRs {
		if p, err := netip.ParsePrefix(s); err == nil && p.Masked() == p && p.Bits() > 0 {
			out = append(out, p)
		}
	}
	return out
}

// SweeperConfig configures the sweeper (package sweeper): the controller that deletes
// the cluster's load balancers whose Service is gone, routes whose Node is gone and
// target groups that no load balancer names. It
// runs when Enabled is true and the cloud-controller-manager's main.go adds it
// (controllers.With).
type SweeperConfig struct {
	// Enabled switches the sweeper on (YAML "enabled"); default false. The sweeper (the
	// controller ccmkit-sweeper) deletes an orphan after GracePeriod and a live read of
	// the API server that confirms its owner is gone. It sweeps the load
	// balancers when load balancers are on and loadBalancer.keepOnDelete is false (a gone
	// Service's keep-on-delete annotation can no longer be read), the target groups that
	// no load balancer names when load balancers are on and the cloud has target groups
	// (whatever loadBalancer.keepOnDelete says: a released load balancer names none), and
	// the routes when routes are on and carry tags (routes without tags are never swept:
	// package sweeper); with none of them it is an error.
	Enabled bool `yaml:"enabled"`
	// GracePeriod is how long a load balancer, route or target group must look orphaned,
	// sweep after sweep, before it is deleted (YAML "gracePeriod"); default 10m; a target
	// group no load balancer named yet, at least 32 × cache.maxAge (the load balancers' own
	// rule: it may be one made for a Service whose create keeps failing). A restart of the
	// cloud-controller-manager starts it again.
	GracePeriod time.Duration `yaml:"gracePeriod"`
	// Interval is the time between two sweeps (YAML "interval"); default 5m. Each sweep
	// lists the cluster's load balancers and routes (and target groups) once, and the
	// load balancers once more before a target group is deleted.
	Interval time.Duration `yaml:"interval"`
}

// Enabled reports the effective value of a switch: the value if set, else def.
func enabled(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// InstancesEnabled reports whether InstancesV2, Instances and Zones are enabled.
func (c *Config) InstancesEnabled() bool { return enabled(c.Enable.Instances, true) }

// LoadBalancersEnabled reports whether LoadBalancer is enabled.
func (c *Config) LoadBalancersEnabled() bool { return enabled(c.Enable.LoadBalancers, true) }

// RoutesEnabled reports whether Routes is enabled.
func (c *Config) RoutesEnabled() bool { return enabled(c.Enable.Routes, false) }

// ServesUnclassed reports whether ccmkit serves Services of type LoadBalancer without a
// load balancer class (loadBalancer.serveUnclassed, default true).
func (c *Config) ServesUnclassed() bool { return enabled(c.LoadBalancer.ServeUnclassed, true) }

// TargetGroupsEnabled reports whether load balancers use the cloud's target groups when
// it offers them (loadBalancer.targetGroups, default true).
func (c *Config) TargetGroupsEnabled() bool { return enabled(c.LoadBalancer.TargetGroups, true) }

// DeletionBrakeEnabled reports whether the deletion brake is on (nodes.deletionBrake.enabled,
// default true).
func (c *Config) DeletionBrakeEnabled() bool { return enabled(c.Nodes.DeletionBrake.Enabled, true) }

// CreationBrakeEnabled reports whether the creation brake is on
// (loadBalancer.creationBrake.enabled, default true).
func (c *Config) CreationBrakeEnabled() bool {
	return enabled(c.LoadBalancer.CreationBrake.Enabled, true)
}

// SetDefaults fills every zero field that has a default. It is idempotent; ReadConfig and
// New call it.
func (c *Config) SetDefaults() {
	if c.Cluster.Name == "" {
		c.Cluster.Name = c.Cluster.ID
	}
	if c.CloudAPI.QPS == 0 && !c.CloudAPI.Unlimited {
		c.CloudAPI.QPS = DefaultQPS
	}
	if c.CloudAPI.Burst == 0 && !c.CloudAPI.Unlimited {
		c.CloudAPI.Burst = DefaultBurst
	}
	if c.CloudAPI.Timeout == 0 {
		c.CloudAPI.Timeout = DefaultTimeout
	}
	if c.CloudAPI.Retry.MaxAttempts == 0 {
		c.CloudAPI.Retry.MaxAttempts = DefaultMaxAttempts
	}
	if c.CloudAPI.Retry.InitialBackoff == 0 {
		c.CloudAPI.Retry.InitialBackoff = DefaultInitialBackoff
	}
	if c.CloudAPI.Retry.MaxBackoff == 0 {
		c.CloudAPI.Retry.MaxBackoff = DefaultMaxBackoff
	}
	if c.CloudAPI.MaxRetryAfter == 0 {
		c.CloudAPI.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.Cache.MaxAge == 0 {
		c.Cache.MaxAge = DefaultCacheMaxAge
	}
	if c.Sweeper.GracePeriod == 0 {
		c.Sweeper.GracePeriod = DefaultSweeperGracePeriod
	}
	if c.Sweeper.Interval == 0 {
		c.Sweeper.Interval = DefaultSweeperInterval
	}
	if b := &c.Nodes.DeletionBrake; b.Window == 0 {
		b.Window = DefaultDeletionBrakeWindow
	}
	if b := &c.Nodes.DeletionBrake; b.Share == 0 {
		b.Share = DefaultDeletionBrakeShare
	}
	if b := &c.Nodes.DeletionBrake; b.Minimum == 0 {
		b.Minimum = DefaultDeletionBrakeMinimum
	}
	if b := &c.LoadBalancer.CreationBrake; b.Window == 0 {
		b.Window = DefaultCreationBrakeWindow
	}
	if b := &c.LoadBalancer.CreationBrake; b.Share == 0 {
		b.Share = DefaultCreationBrakeShare
	}
	if b := &c.LoadBalancer.CreationBrake; b.Minimum == 0 {
		b.Minimum = DefaultCreationBrakeMinimum
	}
}

// checkBrake reports through bad what is wrong with a brake's window, share and minimum,
// at key (the YAML path); of is what the share is of, for the message.
func checkBrake(bad func(string, ...any), key, of string, window time.Duration, share float64, minimum int, defShare float64, defMinimum int) {
	if window < 0 {
		bad("%s.window: %s must be positive", key, window)
	}
	if math.IsNaN(share) || share < 0 || share > 1 {
		bad("%s.share: %v must be more than 0 and at most 1 (0.5: half %s within a window; unset: the default %v)", key, share, of, defShare)
	}
	if minimum < 0 {
		bad("%s.minimum: %d must not be negative (unset or 0: the default %d)", key, minimum, defMinimum)
	}
}

var clusterIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validate reports every problem of the config at once (errors.Join), each naming its
// YAML key. It does not check the backend's own section (the backend does), nor what
// depends on the backend's capabilities, such as the cluster ID that load balancers and
// routes need (New does).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Cluster.ID != "" && !clusterIDPattern.MatchString(c.Cluster.ID) {
		bad("cluster.id: %q must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", c.Cluster.ID)
	}
	if q := c.CloudAPI.QPS; math.IsNaN(q) || math.IsInf(q, 0) || q < 0 || (q > 0 && q < MinQPS) {
		bad("cloudAPI.qps: %v must be a finite number of calls per second of at least %v (unset: the default %d; no client-side limit: cloudAPI.unlimited: true)", q, MinQPS, DefaultQPS)
	}
	if b := c.CloudAPI.Burst; b < 0 || b > MaxBurst {
		bad("cloudAPI.burst: %d must be from 1 to %d (unset: the default %d)", b, MaxBurst, DefaultBurst)
	}
	if c.CloudAPI.Unlimited && (c.CloudAPI.QPS != 0 || c.CloudAPI.Burst != 0) {
		bad("cloudAPI.unlimited: true turns the client-side rate limit off; leave cloudAPI.qps and cloudAPI.burst unset")
	}
	if c.CloudAPI.Timeout < 0 {
		bad("cloudAPI.timeout: %s must be positive", c.CloudAPI.Timeout)
	}
	r := c.CloudAPI.Retry
	if r.MaxAttempts < 0 {
		bad("cloudAPI.retry.maxAttempts: %d must be at least 1", r.MaxAttempts)
	}
	if r.InitialBackoff < 0 {
		bad("cloudAPI.retry.initialBackoff: %s must be positive", r.InitialBackoff)
	}
	if r.MaxBackoff < 0 {
		bad("cloudAPI.retry.maxBackoff: %s must be positive", r.MaxBackoff)
	}
	if r.InitialBackoff > 0 && r.MaxBackoff > 0 && r.InitialBackoff > r.MaxBackoff {
		bad("cloudAPI.retry.initialBackoff: %s is longer than cloudAPI.retry.maxBackoff %s", r.InitialBackoff, r.MaxBackoff)
	}
	if c.CloudAPI.PageSize < 0 {
		bad("cloudAPI.pageSize: %d must be positive", c.CloudAPI.PageSize)
	}
	if c.CloudAPI.MaxRetryAfter < 0 {
		bad("cloudAPI.maxRetryAfter: %s must be positive", c.CloudAPI.MaxRetryAfter)
	}
	for i, f := range c.Nodes.IPFamilies {
		if !f.Valid() {
			bad("nodes.ipFamilies[%d]: %q must be IPv4 or IPv6", i, f)
		}
	}
	if len(c.Nodes.IPFamilies) > 2 || (len(c.Nodes.IPFamilies) == 2 && c.Nodes.IPFamilies[0] == c.Nodes.IPFamilies[1]) {
		bad("nodes.ipFamilies: %v must name each of IPv4 and IPv6 at most once", c.Nodes.IPFamilies)
	}
	for _, p := range nodelabels.Check(c.Nodes.AdditionalLabels, c.Nodes.LabelsFromTags) {
		field := "nodes.additionalLabels"
		if p.FromTags {
			field = "nodes.labelsFromTags"
		}
		bad("%s: %s", field, p.Msg)
	}
	b := c.Nodes.DeletionBrake
	checkBrake(bad, "nodes.deletionBrake", "the known instances", b.Window, b.Share, b.Minimum, DefaultDeletionBrakeShare, DefaultDeletionBrakeMinimum)
	cb := c.LoadBalancer.CreationBrake
	checkBrake(bad, "loadBalancer.creationBrake", "the load balancers of Services with an address", cb.Window, cb.Share, cb.Minimum, DefaultCreationBrakeShare, DefaultCreationBrakeMinimum)
	if c.Cache.MaxAge < 0 {
		bad("cache.maxAge: %s must be positive", c.Cache.MaxAge)
	}
	if p := c.LoadBalancer.AnnotationPrefix; p != "" {
		if err := validateAnnotationPrefix(p); err != nil {
			bad("loadBalancer.annotationPrefix: %w", err)
		}
	}
	if class := c.LoadBalancer.Class; class != "" {
		for _, msg := range validation.IsQualifiedName(class) {
			bad("loadBalancer.class: %q: %s", class, msg)
		}
	}
	if !c.ServesUnclassed() && c.LoadBalancer.Class == "" {
		bad("loadBalancer.serveUnclassed: false leaves ccmkit no Service to serve; set loadBalancer.class to the class it serves (or enable.loadBalancers: false)")
	}
	cidrs := map[int]netip.Prefix{} // the valid ones, by index
	for i, s := range c.Routes.ClusterCIDRs {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			bad("routes.clusterCIDRs[%d]: %q is not a CIDR such as 10.244.0.0/16", i, s)
			continue
		case p.Masked() != p:
			bad("routes.clusterCIDRs[%d]: %q has host bits set; the CIDR is %s", i, s, p.Masked())
			continue
		case p.Bits() == 0:
			bad("routes.clusterCIDRs[%d]: %q covers every address of its family: every route to a Node would be the cluster's", i, s)
			continue
		}
		for j := range i {
			if q, ok := cidrs[j]; ok && q.Overlaps(p) {
				bad("routes.clusterCIDRs[%d]: %s overlaps routes.clusterCIDRs[%d] %s", i, p, j, q)
			}
		}
		cidrs[i] = p
	}
	if c.Sweeper.GracePeriod < 0 {
		bad("sweeper.gracePeriod: %s must be positive", c.Sweeper.GracePeriod)
	}
	if c.Sweeper.Interval < 0 {
		bad("sweeper.interval: %s must be positive", c.Sweeper.Interval)
	}
	if c.Credentials.Token != "" && c.Credentials.TokenFile != "" && !c.Credentials.fromFile {
		bad("credentials: set token or tokenFile, not both")
	}
	for _, key := range slices.Sorted(maps.Keys(c.sections)) {
		if key != c.Backend {
			bad("line %d: unknown key %q at the top level (the backend section is %q; known keys: %s)",
				c.sections[key].Line, key, c.Backend, strings.Join(strictyaml.Keys[Config](), ", "))
		}
	}
	return errors.Join(errs...)
}

func validateAnnotationPrefix(p string) error {
	domain, ok := strings.CutSuffix(p, "/")
	if !ok || strings.Contains(domain, "/") {
		return fmt.Errorf("%q must be a DNS subdomain followed by one \"/\", like %q", p, DefaultAnnotationPrefix)
	}
	if msgs := validation.IsDNS1123Subdomain(domain); len(msgs) > 0 {
		return fmt.Errorf("%q: %s", p, strings.Join(msgs, "; "))
	}
	return nil
}

// ReadConfig reads a cloud config for providerName from r: decodes it strictly (an
// unknown key is an error naming the key and its line), applies defaults and resolves
// the credential from the file, the environment or a token file. It does not validate;
// call Validate. A nil r yields the defaults, for backends that need no config. It reads
// no adapter's environment fallbacks (Options.EnvFallbacks): the Factory does.
func ReadConfig(r io.Reader, providerName string) (*Config, error) {
	return readConfig(r, providerName, os.Getenv, readTokenFile)
}

// readConfig is ReadConfig with the environment and the file system given.
func readConfig(r io.Reader, providerName string, getenv func(string) string, readFile func(string) ([]byte, error)) (*Config, error) {
	cfg, _, err := readConfigEnv(r, providerName, nil, func(k string) (string, bool) { v := getenv(k); return v, v != "" }, readFile)
	return cfg, err
}

// readConfigEnv is readConfig that also reads the adapter's environment fallbacks
// (applyEnv) where the file (r, not nil) sets no value; it returns the keys it read from
// the environment, as "key from $NAME", also with an error, for the error's reader.
func readConfigEnv(r io.Reader, providerName string, fallbacks []EnvFallback, lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (*Config, []string, error) {
	getenv := func(k string) string { v, _ := lookup(k); return v }
	cfg := &Config{}
	var used []string
	if r != nil {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, nil, fmt.Errorf("reading cloud config: %w", err)
		}
		node, err := strictyaml.Parse(data)
		if err != nil {
			return nil, nil, fmt.Errorf("cloud config: %w", err)
		}
		if len(fallbacks) > 0 {
			tokenEnv, fileEnv := credentialEnv(providerName)
			otherCredential := getenv(tokenEnv) != "" || getenv(fileEnv) != "" || (node != nil && hasKey(node, credentialsKey))
			if node, used, err = applyEnv(node, fallbacks, lookup, otherCredential); err != nil {
				return nil, used, fmt.Errorf("cloud config: %w", err)
			}
		}
		if node != nil {
			if err := decodeTop(node, cfg); err != nil {
				return nil, used, fmt.Errorf("cloud config: %w", err)
			}
		}
	}
	if err := cfg.resolveCredentials(providerName, getenv, readFile); err != nil {
		return nil, used, fmt.Errorf("cloud config: %w", err)
	}
	cfg.SetDefaults()
	return cfg, used, nil
}

// hasKey reports whether the mapping n has the key with a value that is not null.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && !isNull(n.Content[i+1]) {
			return true
		}
	}
	return false
}

// decodeTop decodes the known keys of the top-level mapping strictly into cfg and keeps
// the others as sections.
func decodeTop(node *yaml.Node, cfg *Config) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the cloud config must be a YAML mapping of keys to values", node.Line)
	}
	known := map[string]bool{}
	for _, k := range strictyaml.Keys[Config]() {
		known[k] = true
	}
	var credentials *yaml.Node
	common := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: node.Line, Column: node.Column}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d column %d: a top-level key must be plain text, not %s", key.Line, key.Column, kindName(key))
		}
		if key.Value == credentialsKey {
			if credentials != nil {
				return fmt.Errorf("line %d: key %q appears twice", key.Line, credentialsKey)
			}
			credentials = val
			continue
		}
		if known[key.Value] {
			common.Content = append(common.Content, key, val)
			continue
		}
		if cfg.sections == nil {
			cfg.sections = map[string]*yaml.Node{}
		}
		if _, dup := cfg.sections[key.Value]; dup {
			return fmt.Errorf("line %d: key %q appears twice", key.Line, key.Value)
		}
		// Keep the key node's line for messages about the section itself.
		val.Line, val.Column = key.Line, key.Column
		cfg.sections[key.Value] = val
	}
	var errs []error
	if credentials != nil {
		if node.Anchor != "" && !isNull(credentials) {
			// An alias of the whole file would copy the credentials elsewhere.
			return fmt.Errorf("line %d column %d: the top-level mapping holds the credentials and must not carry a YAML anchor (&name)", node.Line, node.Column)
		}
		var copied bool
		errs, copied = decodeCredentials(credentials, &cfg.Credentials)
		if copied {
			// The rest may quote the credential through an alias: report only this.
			return errors.Join(errs...)
		}
	}
	if err := strictyaml.Decode(common, "", cfg); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Section decodes the top-level section key of cfg strictly into a value of type C. It
// returns the zero C and false when the config has no such section.
func Section[C any](cfg *Config, key string) (C, bool, error) {
	var section C
	node, ok := cfg.sections[key]
	if !ok {
		return section, false, nil
	}
	if err := strictyaml.Decode(node, key, &section); err != nil {
		return section, true, fmt.Errorf("cloud config: %w", err)
	}
	return section, true, nil
}
