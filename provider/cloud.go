package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/internal/nodelabels"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
	"github.com/ccmkit/ccmkit/routes"
	"github.com/ccmkit/ccmkit/sweeper"
	"github.com/ccmkit/ccmkit/zones"
)

// Cloud is ccmkit's cloudprovider.Interface: it holds the config and the instrumented
// cloud client and hands out the sub-interface implementations.
type Cloud struct {
	cfg        Config
	opts       Options
	client     cloudapi.Client
	providerID providerid.Format
	lookup     instances.Lookup
	instances  *instances.Instances                   // nil when disabled
	zones      *zones.Zones                           // nil when disabled
	lbs        *loadbalancer.LoadBalancer             // nil when disabled or absent
	measured   *measuredLoadBalancer                  // lbs, timed; what the service controllers call
	groups     bool                                   // lbs put their targets in target groups
	routes     *routes.Routes                         // nil when disabled or absent
	onSwept    func(kind sweeper.Kind, result string) // nil when the sweeper is off

	mu       sync.Mutex
	recorder record.EventRecorder
	kube     kubernetes.Interface // Initialize's client, nil before: lists the Nodes for routes that carry no tags, writes on Services
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// New assembles a provider from a config and a cloud client, without the global registry.
// It applies the config's defaults, validates it, wraps client in the instrumented client
// (rate limit, retries, timeouts, metrics) and checks that every part the config enables
// explicitly is offered by the backend. It does no I/O and starts no goroutines.
func New(cfg Config, client cloudapi.Client, opts Options) (*Cloud, error) {
	opts = opts.withDefaults()
	if client == nil {
		return nil, errors.New("provider: New needs a cloud client")
	}
	if cfg.LoadBalancer.AnnotationPrefix == "" {
		cfg.LoadBalancer.AnnotationPrefix = opts.AnnotationPrefix
	}
	cfg.SetDefaults()
	if cfg.Backend == "" {
		cfg.Backend = opts.ProviderName
	}
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkSettings(&cfg, opts); err != nil {
		errs = append(errs, err)
	}
	if err := checkNodeLabels(opts.NodeLabels); err != nil {
		errs = append(errs, err)
	}
	format, err := providerid.Compile(opts.ProviderIDTemplate)
	if err != nil {
		errs = append(errs, err)
	}
	_, hasLBs := client.LoadBalancers()
	if !hasLBs && cfg.Enable.LoadBalancers != nil && *cfg.Enable.LoadBalancers {
		errs = append(errs, fmt.Errorf("enable.loadBalancers: the %q backend has no load balancers", cfg.Backend))
	}
	routeAPI, hasRoutes := client.Routes()
	if !hasRoutes && cfg.RoutesEnabled() {
		errs = append(errs, fmt.Errorf("enable.routes: the %q backend has no routes", cfg.Backend))
	}
	tagless := hasRoutes && routeAPI != nil && cloudapi.RoutesCarryNoTags(routeAPI)
	switch {
	case tagless && cfg.RoutesEnabled() && len(cfg.Routes.ClusterCIDRs) == 0:
		errs = append(errs, fmt.Errorf("routes.clusterCIDRs: required because the %q backend's routes carry no tags: ccmkit owns the routes into the cluster's pod CIDRs (the route controller's --cluster-cidr) to its Nodes; or enable.routes: false", cfg.Backend))
	case !tagless && len(cfg.Routes.ClusterCIDRs) > 0:
		errs = append(errs, fmt.Errorf("routes.clusterCIDRs: set, but the %q backend's routes carry ccmkit's tags (or it has no routes): ccmkit owns routes by their tags and does not read it", cfg.Backend))
	}
	if lbsOn := hasLBs && cfg.LoadBalancersEnabled(); cfg.LoadBalancer.Class != "" && !lbsOn {
		errs = append(errs, fmt.Errorf("loadBalancer.class: %q is set, but load balancers are off (enable.loadBalancers: false, or the %q backend has none)", cfg.LoadBalancer.Class, cfg.Backend))
	}
	if cfg.Cluster.ID == "" && ((hasLBs && cfg.LoadBalancersEnabled()) || (hasRoutes && cfg.RoutesEnabled())) {
		errs = append(errs, errors.New("cluster.id: required because load balancers or routes are enabled: ccmkit tags what it creates with it and touches nothing else"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	instrumented, err := instrument(client, cfg, opts)
	if err != nil {
		return nil, err
	}
	c := &Cloud{cfg: cfg, opts: opts, client: instrumented, providerID: format}
	checks, err := instanceChecks(opts)
	if err != nil {
		return nil, err
	}
	c.lookup, err = instances.NewLookup(instrumented.Instances(), instances.LookupOptions{
		MaxAge: cfg.Cache.MaxAge, PageSize: cfg.CloudAPI.PageSize, Clock: opts.Clock, OnCheck: checks,
		Brake: instances.DeletionBrake{
			Off:     !cfg.DeletionBrakeEnabled(),
			Window:  cfg.Nodes.DeletionBrake.Window,
			Share:   cfg.Nodes.DeletionBrake.Share,
			Minimum: cfg.Nodes.DeletionBrake.Minimum,
		}})
	if err != nil {
		return nil, err
	}
	if cfg.InstancesEnabled() {
		c.instances, err = instances.New(c.lookup, instances.Options{
			ProviderID:       format,
			Region:           cfg.Region,
			AdditionalLabels: nodeLabels(opts.NodeLabels, cfg.Nodes),
			LabelsFromTags:   cfg.Nodes.LabelsFromTags,
			IPFamilies:       cfg.Nodes.IPFamilies,
			Recorder:         lateRecorder{c},
		})
		if err != nil {
			errs = append(errs, err)
		}
		c.zones, err = zones.New(c.lookup, zones.Options{ProviderID: format, Zone: cfg.Zone, Region: cfg.Region})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if api, ok := instrumented.LoadBalancers(); ok && cfg.LoadBalancersEnabled() {
		var groups cloudapi.TargetGroupAPI
		if g, ok := cloudapi.TargetGroups(instrumented); ok && cfg.TargetGroupsEnabled() {
			groups = g
			c.groups = true
		}
		held, err := creationsHeld(opts)
		if err != nil {
			return nil, err
		}
		var brake loadbalancer.CreationBrake
		if cfg.CreationBrakeEnabled() {
			b := cfg.LoadBalancer.CreationBrake
			brake = loadbalancer.CreationBrake{Window: b.Window, Share: b.Share, Minimum: b.Minimum}
		}
		c.lbs, err = loadbalancer.New(api, loadbalancer.Options{
			ClusterID:             cfg.Cluster.ID,
			ProviderID:            format,
			AnnotationPrefix:      cfg.LoadBalancer.AnnotationPrefix,
			MaxAge:                cfg.Cache.MaxAge,
			PageSize:              cfg.CloudAPI.PageSize,
			Clock:                 opts.Clock,
			KeepOnDelete:          cfg.LoadBalancer.KeepOnDelete,
			ShareAcrossNamespaces: cfg.LoadBalancer.ShareAcrossNamespaces,
			Serves:                cfg.serves,
			Recorder:              lateRecorder{c},
			Services:              lateServices{c},
			Settings:              opts.LoadBalancerSettings,
			SettingDefaults:       cfg.LoadBalancer.SettingDefaults,
			Shape:                 opts.LoadBalancerShape,
			Aliases:               opts.LoadBalancerAliases,
			TargetGroups:          groups,
			CreationBrake:         brake,
			OnCreationHeld:        held,
			NodeProviderID:        c.nodeProviderID,
		})
		if err != nil {
			errs = append(errs, err)
		} else if c.measured, err = measure(c.lbs, opts); err != nil {
			errs = append(errs, err)
		}
	}
	if api, ok := instrumented.Routes(); ok && cfg.RoutesEnabled() {
		c.routes, err = routes.New(api, c.lookup, routes.Options{ClusterID: cfg.Cluster.ID, MaxAge: cfg.Cache.MaxAge, Clock: opts.Clock,
			ClusterCIDRs: cfg.Routes.podCIDRs(), NodeNames: c.nodeNames})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.Sweeper.Enabled {
		if c.sweptLoadBalancers() == nil && c.sweptRoutes() == nil && c.sweptTargetGroups() == nil {
			errs = append(errs, errors.New("sweeper.enabled: there is nothing to sweep: load balancers are off or kept on delete (loadBalancer.keepOnDelete: true) and the cloud has no target groups, and routes are off or carry no tags"))
		}
		c.onSwept, err = sweptCounter(opts)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Sweeper returns what the sweeper of package sweeper sweeps (the cluster's load
// balancers unless loadBalancer.keepOnDelete is true, its routes when routes are on and
// carry tags, its
// target groups when load balancers are on and the cloud offers groups, whatever
// loadBalancer.keepOnDelete and loadBalancer.targetGroups say) through the same
// instrumented client as every other call, with the cloud config's sweeper settings and
// the counter SweptMetric; ok is false unless sweeper.enabled.
func (c *Cloud) Sweeper() (sweeper.Target, bool) {
	if !c.cfg.Sweeper.Enabled {
		return sweeper.Target{}, false
	}
	t := sweeper.Target{
		LoadBalancers: c.sweptLoadBalancers(),
		Options: sweeper.Options{
			ClusterID:   c.cfg.Cluster.ID,
			GracePeriod: c.cfg.Sweeper.GracePeriod,
			Interval:    c.cfg.Sweeper.Interval,
			PageSize:    c.cfg.CloudAPI.PageSize,
			OnSwept:     c.onSwept,
		},
	}
	if t.LoadBalancers != nil {
		// Shared load balancers: which share a Service is in, read as the load balancers
		// read it (annotation prefix, aliases, loadBalancer.shareAcrossNamespaces).
		t.Options.ShareKey = c.lbs.ShareKey
	}
	t.Routes = c.sweptRoutes()
	if groups := c.sweptTargetGroups(); groups != nil {
		t.Options.TargetGroups = groups
		// The load balancers' collection's, for the one rule of deleting a group.
		t.Options.TargetGroupMaxAge = c.cfg.Cache.MaxAge
		if t.LoadBalancers == nil { // kept on delete: listed, to tell which groups are in use
			t.Options.ListedLoadBalancers, _ = c.client.LoadBalancers()
		}
	}
	return t, true
}

// sweptTargetGroups returns the target group API the sweeper sweeps, or nil. A released
// load balancer names no group, so groups are swept with load balancers kept on delete
// too; and with loadBalancer.targetGroups false, as the groups left from when it was
// true are the cluster's all the same.
func (c *Cloud) sweptTargetGroups() cloudapi.TargetGroupAPI {
	if c.lbs == nil {
		return nil
	}
	api, _ := cloudapi.TargetGroups(c.client)
	return api
}

// sweptRoutes returns the route API the sweeper sweeps, or nil: none when routes are off
// or carry no tags (package sweeper keeps those).
func (c *Cloud) sweptRoutes() cloudapi.RouteAPI {
	if c.routes == nil {
		return nil
	}
	api, _ := c.client.Routes()
	if cloudapi.RoutesCarryNoTags(api) {
		return nil
	}
	return api
}

// sweptLoadBalancers returns the load balancer API the sweeper sweeps, or nil.
func (c *Cloud) sweptLoadBalancers() cloudapi.LoadBalancerAPI {
	if c.lbs == nil || c.cfg.LoadBalancer.KeepOnDelete {
		return nil
	}
	api, _ := c.client.LoadBalancers()
	return api
}

// CloudClient returns the provider's cloud client: the backend's behind the decorator
// every call goes through (rate limit, retries, timeouts, metrics). For tools that work
// on the cloud with the provider's config, such as sweeper.Teardown.
func (c *Cloud) CloudClient() cloudapi.Client { return c.client }

// Options customise a provider beyond its cloud config: what an adapter decides once for
// all its users.
type Options struct {
	// ProviderName is the name of the provider (--cloud-provider), the scheme of default
	// provider IDs and part of the cloud API metric names. Default "ccmkit".
	ProviderName string
	// ProviderIDTemplate is the format of Node provider IDs; see package providerid.
	// Default "<ProviderName>://{id}". A cloud migrating from an existing
	// cloud-controller-manager sets the format that one used.
	ProviderIDTemplate string
	// AnnotationPrefix is the adapter's default prefix of load balancer annotations, used
	// when the config's loadBalancer.annotationPrefix is empty. Default
	// "loadbalancer.ccmkit.io/".
	AnnotationPrefix string
	// Metrics is where the cloud API metrics are registered. Nil means the
	// cloud-controller-manager's global registry (served on /metrics); tests pass their
	// own.
	Metrics MetricsRegistry
	// LoadBalancerSettings are the adapter's own load balancer settings (a size, a type,
	// an algorithm ...), read from Service annotations under the annotation prefix and
	// handed to the backend, checked and canonical, in cloudapi.LoadBalancerSpec.SettingValues;
	// see loadbalancer.Setting. The cloud config's loadBalancer.settings overrides their
	// defaults. Register stops the process when they are declared wrongly; New and the
	// Factory return the error.
	LoadBalancerSettings loadbalancer.Settings
	// LoadBalancerShape declares what the cloud's load balancers do not keep and do not
	// support of a cloudapi.LoadBalancerSpec (see cloudapi.LoadBalancerShape); the zero
	// value, everything kept and supported. Register stops the process when it is
	// declared wrongly; New and the Factory return the error.
	LoadBalancerShape cloudapi.LoadBalancerShape
	// LoadBalancerAliases are the annotation keys of the cloud's earlier
	// cloud-controller-manager that stand for ccmkit's annotations and the
	// LoadBalancerSettings, so that its users' Services keep working unchanged, and the
	// prefixes it owned; see loadbalancer.Aliases. Register stops the process when they
	// are declared wrongly for the adapter's AnnotationPrefix; New and the Factory return
	// the error, also for the config's loadBalancer.annotationPrefix.
	LoadBalancerAliases loadbalancer.Aliases
	// NodeLabels are labels the adapter puts on every Node at initialization, as its
	// cloud's earlier cloud-controller-manager labelled them (Hetzner's:
	// instance.hetzner.cloud/provided-by=cloud), beside the config's
	// nodes.additionalLabels and nodes.labelsFromTags, which win for a label they set. Keys
	// and values follow the rules of nodes.additionalLabels. Register stops the process
	// when they are declared wrongly; New and the Factory return the error.
	NodeLabels map[string]string
	// EnvFallbacks are the environment variables the adapter reads as fallbacks of cloud
	// config keys (see EnvFallback), such as those its cloud's earlier
	// cloud-controller-manager read. The Factory (and so Register) reads them; New, given
	// a Config, does not. Register stops the process when they are declared wrongly; the
	// Factory returns the error.
	EnvFallbacks []EnvFallback
	// Clock is the clock the provider's caches age by (how old a snapshot is, when a
	// failed list may be retried). Nil means the real clock, clock.RealClock{};
	// simulations and tests pass a fake one (k8s.io/utils/clock/testing).
	Clock clock.PassiveClock
}

func (o Options) withDefaults() Options {
	if o.ProviderName == "" {
		o.ProviderName = DefaultProviderName
	}
	if o.ProviderIDTemplate == "" {
		o.ProviderIDTemplate = o.ProviderName + "://{" + providerid.FieldID + "}"
	}
	if o.AnnotationPrefix == "" {
		o.AnnotationPrefix = DefaultAnnotationPrefix
	}
	return o
}

// Config returns the effective config, defaults applied.
func (c *Cloud) Config() Config { return c.cfg }

// Initialize sets up the event recorder that EventRecorder returns, with a client the
// client builder names "<provider>-cloud-provider". The cloud-controller-manager calls it
// after leader election, before any controller runs; nothing cloud-facing happens before.
// The recorder stops when stop closes. The sub-interfaces report problems through their
// errors, which the upstream controllers turn into events on the Service or Node; the
// recorder is there for what ccmkit has to say beyond an error (package loadbalancer's
// AdoptedLoadBalancer, KeptLoadBalancer and CloudThrottled events on the Service, package
// instances' InstanceGoneRefused event on a Node the deletion brake keeps). The same
// client writes, through package loadbalancer's Options.Services, the load balancer's ID
// annotation and LoadBalancerReady condition on the Service, and lists the Nodes when the
// backend's routes carry no tags (package routes' ownership rule). It starts nothing else:
// the load balancers' background work runs as controllers (LoadBalancerWork). A client
// builder that fails leaves the recorder dropping events, nothing written on Services and
// such route lists failing, which the log says.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	logger := klog.FromContext(ctx).WithValues("provider", c.opts.ProviderName)
	kube, err := clientBuilder.Client(c.opts.ProviderName + "-cloud-provider")
	if err != nil {
		cancel()
		logger.Error(err, "No Kubernetes client for events; problems will only be logged")
		return
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: c.opts.ProviderName + "-cloud-provider"})
	c.mu.Lock()
	c.recorder, c.kube = recorder, kube
	c.mu.Unlock()
	go func() {
		<-stop
		broadcaster.Shutdown()
		cancel()
	}()
}

// LoadBalancerWork returns the provider's LoadBalancer and how often its collection of
// unused target groups runs (cache.maxAge; zero when the load balancers use no target
// groups), for the controllers that do its background work: the watch of Node labels
// (labelwatch.Run of package controllers/labelwatch over the LoadBalancer's
// SyncNodeLabels: the service controller does not sync a Service's targets when only a
// Node's labels change) and the periodic collection
// (loadbalancer.LoadBalancer.CollectGroups). controllers.With adds both to a
// cloud-controller-manager; a program that runs the service controller itself starts
// them. ok is false when load balancers are off.
func (c *Cloud) LoadBalancerWork() (lb *loadbalancer.LoadBalancer, collectEvery time.Duration, ok bool) {
	if c.lbs == nil {
		return nil, 0, false
	}
	if c.groups {
		collectEvery = c.cfg.Cache.MaxAge
	}
	return c.lbs, collectEvery, true
}

// EventRecorder returns the recorder set up by Initialize, or a recorder that drops
// events before then.
func (c *Cloud) EventRecorder() record.EventRecorder {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recorder == nil {
		return &record.FakeRecorder{}
	}
	return c.recorder
}

// nodeNames lists the names of the cluster's Nodes for package routes
// (routes.Options.NodeNames) with the client Initialize set up, from the API server's
// cache (resourceVersion "0"): one list per list of a route table whose routes carry no
// tags.
func (c *Cloud) nodeNames(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	kube := c.kube
	c.mu.Unlock()
	if kube == nil {
		return nil, errors.New("no Kubernetes client to list the Nodes with: Initialize has not run, or its client builder failed")
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing the Nodes: %w", err)
	}
	names := make([]string, len(nodes.Items))
	for i := range nodes.Items {
		names[i] = nodes.Items[i].Name
	}
	return names, nil
}

// nodeProviderID is the load balancers' Options.NodeProviderID: the provider ID the
// instances give a Node being initialized, as their snapshot knows it (see
// instances.(*Instances).KnownProviderID); none when the instances are disabled (a Node
// then waits for its provider ID).
func (c *Cloud) nodeProviderID(ctx context.Context, name string) (string, bool) {
	if c.instances == nil {
		return "", false
	}
	return c.instances.KnownProviderID(ctx, name)
}

// lateRecorder records through the recorder that Initialize sets up after New built the
// sub-interfaces: it asks the Cloud for its recorder at every event.
type lateRecorder struct{ c *Cloud }

// Event records an event through the Cloud's current recorder.
func (r lateRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	r.c.EventRecorder().Event(obj, eventType, reason, message)
}

// Eventf records an event through the Cloud's current recorder.
func (r lateRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.c.EventRecorder().Eventf(obj, eventType, reason, format, args...)
}

// AnnotatedEventf records an event through the Cloud's current recorder.
func (r lateRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	r.c.EventRecorder().AnnotatedEventf(obj, annotations, eventType, reason, format, args...)
}

// lateServices hands package loadbalancer the Services of the client that Initialize sets
// up after New built it: none (nil) before then.
type lateServices struct{ c *Cloud }

// Services returns the Services in namespace of Initialize's client, or nil before
// Initialize.
func (s lateServices) Services(namespace string) typedcorev1.ServiceInterface {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.kube == nil {
		return nil
	}
	return s.c.kube.CoreV1().Services(namespace)
}

// ProviderName returns the provider's registered name.
func (c *Cloud) ProviderName() string { return c.opts.ProviderName }

// HasClusterID reports whether the config names a cluster ID.
func (c *Cloud) HasClusterID() bool { return c.cfg.Cluster.ID != "" }

// Clusters returns the cluster described by the config's cluster section.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) {
	return clusters{c.cfg.Cluster}, true
}

// Instances returns the legacy Instances interface, when instances are enabled.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) {
	if c.instances == nil {
		return nil, false
	}
	return c.instances, true
}

// InstancesV2 returns the InstancesV2 interface, when instances are enabled.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if c.instances == nil {
		return nil, false
	}
	return c.instances, true
}

// Zones returns the Zones interface, when instances are enabled. The cloud node controller
// does not call it while InstancesV2 is offered.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) {
	if c.zones == nil {
		return nil, false
	}
	return c.zones, true
}

// LoadBalancer returns package loadbalancer's implementation, each call timed in
// LoadBalancerSyncMetric, or (nil, false) when the backend has no load balancers, the
// config's enable.loadBalancers is false, or its loadBalancer.serveUnclassed is false. The upstream service controller, which serves only
// Services without a load balancer class, calls it once when it starts and does not start
// without one: so with serveUnclassed false it touches no Service at all.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.lbs == nil || !c.cfg.ServesUnclassed() {
		return nil, false
	}
	return c.measured, true
}

// LoadBalancerClass returns the load balancer class the config's loadBalancer.class
// names and the LoadBalancer that serves Services of that class: the same implementation
// LoadBalancer returns, whatever loadBalancer.serveUnclassed says. ok is false when no
// class is configured. The class controller of package lbclass calls it.
func (c *Cloud) LoadBalancerClass() (class string, lb cloudprovider.LoadBalancer, ok bool) {
	if c.lbs == nil || c.cfg.LoadBalancer.Class == "" {
		return "", nil, false
	}
	return c.cfg.LoadBalancer.Class, c.measured, true
}

// Routes returns package routes' implementation, or (nil, false) when the backend has no
// routes or the config's enable.routes is not true (the route controller exits when routes
// are offered but the cloud-controller-manager has no --cluster-cidr).
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// clusters answers cloudprovider.Clusters from the config.
type clusters struct{ cfg ClusterConfig }

// ListClusters returns the configured cluster's name, or nothing when none is configured.
func (c clusters) ListClusters(context.Context) ([]string, error) {
	if c.cfg.Name == "" {
		return nil, nil
	}
	return []string{c.cfg.Name}, nil
}

// Master returns the configured API server address of the named cluster.
func (c clusters) Master(_ context.Context, clusterName string) (string, error) {
	if clusterName != c.cfg.Name {
		return "", fmt.Errorf("cluster %q is unknown; the cloud config describes %q", clusterName, c.cfg.Name)
	}
	if c.cfg.Master == "" {
		return "", fmt.Errorf("cluster %q: cluster.master is not set in the cloud config", clusterName)
	}
	return c.cfg.Master, nil
}

// serves reports whether ccmkit serves the Service's load balancer: one of loadBalancer.class,
// or one without a class when ServesUnclassed.
func (c *Config) serves(svc *corev1.Service) bool {
	if svc.Spec.LoadBalancerClass == nil {
		return c.ServesUnclassed()
	}
	return c.LoadBalancer.Class != "" && *svc.Spec.LoadBalancerClass == c.LoadBalancer.Class
}

// nodeLabels are the additional labels of every Node: the adapter's (declared) and the
// config's nodes.additionalLabels, leaving out a declared label that the config sets
// itself or maps from a tag.
func nodeLabels(declared map[string]string, nodes NodesConfig) map[string]string {
	if len(declared) == 0 {
		return nodes.AdditionalLabels
	}
	out := maps.Clone(nodes.AdditionalLabels)
	if out == nil {
		out = make(map[string]string, len(declared))
	}
	fromTags := slices.Collect(maps.Values(nodes.LabelsFromTags))
	for k, v := range declared {
		if _, set := out[k]; !set && !slices.Contains(fromTags, k) {
			out[k] = v
		}
	}
	return out
}

// checkNodeLabels checks the adapter's Options.NodeLabels by the rules of
// nodes.additionalLabels.
func checkNodeLabels(labels map[string]string) error {
	var errs []error
	for _, p := range nodelabels.Check(labels, nil) {
		errs = append(errs, fmt.Errorf("provider.Options.NodeLabels: %s", p.Msg))
	}
	return errors.Join(errs...)
}
