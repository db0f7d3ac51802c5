package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// ownerTags are the tags that make a load balancer the Service's: the lookup filter.
func (l *LoadBalancer) ownerTags(svc *corev1.Service) map[string]string {
	return map[string]string{cloudapi.TagCluster: l.opts.ClusterID, cloudapi.TagService: string(svc.UID)}
}

// defaultName is the cloud name of the Service's load balancer without a name annotation:
// the cluster ID (shortened) and the Service UID, so that it is unique, stable and within
// 63 characters.
func (l *LoadBalancer) defaultName(svc *corev1.Service) string {
	uid := strings.ReplaceAll(string(svc.UID), "-", "")
	return l.namePrefix() + "-a" + uid
}

// namePrefix is the cluster ID made fit for a cloud name: lower case letters, digits and
// '-', at most 24 characters, "k8s" when nothing is left.
func (l *LoadBalancer) namePrefix() string {
	cluster := strings.ToLower(l.opts.ClusterID)
	cluster = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cluster)
	if len(cluster) > 24 {
		cluster = cluster[:24]
	}
	if cluster = strings.Trim(cluster, "-"); cluster == "" {
		cluster = "k8s" // a cluster ID without letters or digits
	}
	return cluster
}

// desired builds the load balancer spec the Service asks for, and reports annotation keys
// that are probably typos. current is the load balancer found in the cloud, or nil; its
// foreign tags are kept. It returns the annotations' settings too, as far as they are
// well-formed.
func (l *LoadBalancer) desired(logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node, current *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, settings, error) {
	s, unknown, err := parseAnnotations(l.opts.AnnotationPrefix, l.opts.Settings, svc.Annotations)
	l.reportUnknown(logger, svc, unknown)
	errs := []error{}
	if err != nil {
		errs = append(errs, err)
	}

	spec := cloudapi.LoadBalancerSpec{
		Name:          s.name,
		Internal:      s.internal,
		ProxyProtocol: s.proxyProtocol,
		RequestedIPs:  s.ips,
	}
	if spec.Name == "" {
		spec.Name = l.defaultName(svc)
	}
	spec.Settings = l.adapterSettings(s.adapter, current)
	if raw := svc.Spec.LoadBalancerIP; raw != "" { //nolint:staticcheck // the deprecated field is still honoured
		addr, perr := netip.ParseAddr(raw)
		ip := addr.Unmap().String() // canonical, as the annotation's and the cloud's
		switch {
		case perr != nil || addr.Zone() != "":
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP %s is not an IP address", quote.Value(raw)))
		case len(s.ips) == 0:
			spec.RequestedIPs = []string{ip}
		case !slices.Contains(s.ips, ip):
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP %s is not among the addresses of annotation %s%s: set one of them", ip, l.opts.AnnotationPrefix, AnnotationIPAddresses))
		}
	}

	if s.loadBalancerID != "" && current != nil {
		errs = append(errs, l.checkNamed(s, spec, current)...)
		if len(spec.RequestedIPs) == 0 {
			// The Service asks for no address: the load balancer keeps its own.
			spec.RequestedIPs = slices.Clone(current.Spec.RequestedIPs)
		}
	}

	tlsPorts := map[string]bool{} // the tls-ports annotation's entries that name a port
	terminates := false           // whether a listener terminates TLS
	for _, p := range svc.Spec.Ports {
		proto := cloudapi.Protocol(p.Protocol)
		if p.Protocol == "" {
			proto = cloudapi.ProtocolTCP
		}
		if !proto.Valid() {
			errs = append(errs, fmt.Errorf("port %d: protocol %q is not TCP, UDP or SCTP", p.Port, p.Protocol))
			continue
		}
		if p.NodePort == 0 {
			errs = append(errs, fmt.Errorf("port %d/%s has no node port: this load balancer sends traffic to node ports; do not set spec.allocateLoadBalancerNodePorts to false", p.Port, proto))
			continue
		}
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), p.Port)
		}
		listener := cloudapi.Listener{Name: name, Protocol: proto, Port: p.Port, TargetPort: p.NodePort}
		var err error
		listener.AppProtocol, err = l.appProtocol(s, p, proto, tlsPorts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if listener.AppProtocol.TerminatesTLS() {
			terminates = true
			if len(s.certs) == 0 {
				errs = append(errs, fmt.Errorf("port %d/%s terminates TLS (%s): annotation %s%s names no certificate", p.Port, proto, listener.AppProtocol, l.opts.AnnotationPrefix, AnnotationTLSCertificates))
				continue
			}
			listener.Certificates = slices.Clone(s.certs)
		}
		spec.Listeners = append(spec.Listeners, listener)
	}
	for _, tp := range s.tlsPorts {
		if !tlsPorts[tp] {
			errs = append(errs, fmt.Errorf("annotation %s%s: the Service has no port %s", l.opts.AnnotationPrefix, AnnotationTLSPorts, tp))
		}
	}
	if len(s.certs) > 0 && !terminates {
		errs = append(errs, fmt.Errorf("annotation %s%s is set, but no port terminates TLS: name the ports in %s%s, or set their appProtocol (tls, https) or annotation %s%s",
			l.opts.AnnotationPrefix, AnnotationTLSCertificates, l.opts.AnnotationPrefix, AnnotationTLSPorts, l.opts.AnnotationPrefix, AnnotationProtocol))
	}
	slices.SortFunc(spec.Listeners, func(a, b cloudapi.Listener) int {
		if a.Protocol != b.Protocol {
			return strings.Compare(string(a.Protocol), string(b.Protocol))
		}
		return int(a.Port) - int(b.Port)
	})

	spec.Targets = l.targets(logger, nodes, s.nodeSelector)

	hc := &cloudapi.HealthCheck{
		Protocol:           cloudapi.HealthCheckHTTP,
		Port:               KubeProxyHealthzPort,
		Path:               defaultHealthCheckPath,
		Interval:           defaultInterval,
		Timeout:            defaultTimeout,
		HealthyThreshold:   defaultHealthyThreshold,
		UnhealthyThreshold: defaultUnhealthyThreshold,
	}
	if path, port := servicehelpers.GetServiceHealthCheckPathPort(svc); port != 0 {
		hc.Path, hc.Port = path, port
	}
	if s.hcProtocol != "" {
		hc.Protocol = s.hcProtocol
	}
	if s.hcPort != 0 {
		hc.Port = s.hcPort
	}
	if s.hcPath != "" {
		hc.Path = s.hcPath
	}
	if s.hcInterval != 0 {
		hc.Interval = s.hcInterval
	}
	if s.hcTimeout != 0 {
		hc.Timeout = s.hcTimeout
	}
	if s.hcHealthy != 0 {
		hc.HealthyThreshold = s.hcHealthy
	}
	if s.hcUnhealthy != 0 {
		hc.UnhealthyThreshold = s.hcUnhealthy
	}
	if hc.Protocol == cloudapi.HealthCheckTCP {
		hc.Path = ""
	}
	if s.hcTimeout == 0 && hc.Timeout > hc.Interval {
		hc.Timeout = hc.Interval // a short interval alone shortens the default timeout
	}
	if hc.Timeout > hc.Interval {
		errs = append(errs, fmt.Errorf("annotation %s%s: the health check timeout %s is longer than its interval %s", l.opts.AnnotationPrefix, AnnotationHealthCheckTimeout, hc.Timeout, hc.Interval))
	}
	spec.HealthCheck = hc

	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		errs = append(errs, err)
	} else if !servicehelpers.IsAllowAll(ranges) {
		spec.SourceRanges = ranges.StringSlice()
		slices.Sort(spec.SourceRanges)
	}

	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		secs := corev1.DefaultClientIPServiceAffinitySeconds // the API server's default, for Services it did not default
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			secs = *c.ClientIP.TimeoutSeconds
		}
		spec.SessionAffinity = cloudapi.SessionAffinityClientIP
		spec.SessionAffinityTimeout = time.Duration(secs) * time.Second
	}

	for _, f := range svc.Spec.IPFamilies {
		spec.IPFamilies = append(spec.IPFamilies, cloudapi.IPFamily(f))
	}

	spec.Tags = map[string]string{}
	if current != nil {
		maps.Copy(spec.Tags, current.Spec.Tags) // keep tags others put on it
	}
	maps.Copy(spec.Tags, l.ownerTags(svc))
	spec.Tags[cloudapi.TagServiceName] = svc.Namespace + "/" + svc.Name

	if len(errs) > 0 {
		return spec, s, fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, errors.Join(errs...))
	}
	return spec, s, nil
}

// adapterSettings returns the adapter's settings of the spec: the defaults, overridden by
// the Service's annotations (annotated); nil for none. The settings of current (the load
// balancer found, or nil) whose names the adapter does not declare are kept as they are,
// as foreign tags are: they are not ccmkit's to change (an adapter that stopped declaring
// one, a setting made outside ccmkit). A setting declared Replace that current lacks and
// the Service does not annotate stays absent: a load balancer made before the setting was
// declared, or before it had a default, is not replaced for a value nobody asked for.
func (l *LoadBalancer) adapterSettings(annotated map[string]string, current *cloudapi.LoadBalancer) map[string]string {
	out := maps.Clone(l.settingDefaults)
	if out == nil {
		out = make(map[string]string, len(annotated))
	}
	maps.Copy(out, annotated)
	if current != nil {
		for name, v := range current.Spec.Settings {
			if !l.declared(name) {
				out[name] = v
			}
		}
		for _, d := range l.opts.Settings {
			if !d.Replace || annotated[d.Name] != "" {
				continue
			}
			// A default is no reason to replace a load balancer: one made before the
			// setting was declared or had a default, or before the default changed (in
			// the cloud config or in the adapter), keeps the value it has.
			if v, ok := canonicalSetting(d, current.Spec.Settings); ok {
				out[d.Name] = v
			} else {
				delete(out, d.Name)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// declared reports whether the adapter declares the setting name.
func (l *LoadBalancer) declared(name string) bool {
	return slices.ContainsFunc(l.opts.Settings, func(d Setting) bool { return d.Name == name })
}

// replacedSetting returns the name of a setting declared Replace whose value differs
// between current and want, or "" when none does. Only a value the cloud reports, in any
// spelling the declaration accepts, differing from one the Service asks for counts: a
// value the cloud does not report, or one the declaration cannot read, is no reason to
// replace a load balancer and change its address (an in-place update carries the wanted
// value instead, and the cloud refuses it if it must).
func (l *LoadBalancer) replacedSetting(current, want cloudapi.LoadBalancerSpec) string {
	for _, d := range l.opts.Settings {
		if !d.Replace {
			continue
		}
		cur, known := canonicalSetting(d, current.Settings)
		w, wanted := want.Settings[d.Name]
		if known && wanted && cur != w {
			return d.Name
		}
	}
	return ""
}

// canonicalSetting returns the canonical form of the value of d in settings (a cloud's
// answer), and whether there is one that d accepts.
func canonicalSetting(d Setting, settings map[string]string) (string, bool) {
	v, ok := settings[d.Name]
	if !ok {
		return "", false
	}
	c, err := d.parse(v)
	if err != nil {
		return "", false
	}
	return c, true
}

// comparable returns current as DiffLoadBalancer compares it with a desired spec: the
// adapter's declared settings in their canonical spelling (a cloud that answers "Large"
// for "large" holds the wanted value, and costs no write), a value no declaration accepts
// kept as the cloud spells it (so a wanted value replaces it), and the names the adapter
// does not declare as they are (desired carries them over unchanged: no difference).
func (l *LoadBalancer) comparable(current cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	if len(current.Settings) == 0 {
		return current
	}
	settings := maps.Clone(current.Settings)
	for _, d := range l.opts.Settings {
		if c, ok := canonicalSetting(d, settings); ok {
			settings[d.Name] = c
		}
	}
	current.Settings = settings
	return current
}

// keepReplaced sets want's settings declared Replace to current's: what UpdateLoadBalancer
// and a load balancer that is never replaced get.
func (l *LoadBalancer) keepReplaced(current cloudapi.LoadBalancerSpec, want *cloudapi.LoadBalancerSpec) {
	if l.replacedSetting(current, *want) == "" {
		return
	}
	want.Settings = maps.Clone(want.Settings)
	if want.Settings == nil {
		want.Settings = map[string]string{}
	}
	for _, d := range l.opts.Settings {
		if !d.Replace {
			continue
		}
		if v, ok := current.Settings[d.Name]; ok {
			if c, err := d.parse(v); err == nil {
				v = c // as comparable has it, so the diff sees no change
			}
			want.Settings[d.Name] = v
		} else {
			delete(want.Settings, d.Name)
		}
	}
	if len(want.Settings) == 0 {
		want.Settings = nil
	}
}

// reportUnknown logs the annotation keys under the prefix that nothing reads (probable
// typos), and records a Warning event UnknownAnnotation on the Service when they differ
// from those it last reported for it: once per change, not on every resync.
func (l *LoadBalancer) reportUnknown(logger klog.Logger, svc *corev1.Service, unknown []string) {
	joined := strings.Join(unknown, ", ")
	uid := string(svc.UID)
	l.mu.Lock()
	last, seen := l.unknown[uid]
	switch {
	case joined == "":
		delete(l.unknown, uid)
	case joined != last || !seen:
		l.unknown[uid] = joined
	}
	l.mu.Unlock()
	if joined == "" || joined == last {
		return
	}
	keys := quote.Text(joined) // keys a user typed: bounded, in the log line and the event
	logger.Info("Ignoring unknown load balancer annotations; a typo?", "annotations", keys, "prefix", l.opts.AnnotationPrefix)
	l.event(svc, corev1.EventTypeWarning, "UnknownAnnotation", fmt.Sprintf(
		"Ignoring annotation %s: neither ccmkit nor the cloud's adapter reads it under the prefix %s (a typo?); see the annotation reference",
		keys, l.opts.AnnotationPrefix))
}

// checkNamed returns what keeps the Service's load balancer current from being the one its
// load-balancer-id annotation names: another load balancer, or one that only a
// replacement could make what the Service asks for (internal or public).
func (l *LoadBalancer) checkNamed(s settings, spec cloudapi.LoadBalancerSpec, current *cloudapi.LoadBalancer) []error {
	key := l.opts.AnnotationPrefix + AnnotationLoadBalancerID
	var errs []error
	if current.ID != s.loadBalancerID {
		errs = append(errs, fmt.Errorf("annotation %s names load balancer %s, but the Service's load balancer is %s: ccmkit neither swaps nor deletes load balancers for it; set the annotation to %s, or remove it",
			key, s.loadBalancerID, current.ID, current.ID))
	}
	if current.Spec.Internal != spec.Internal {
		errs = append(errs, fmt.Errorf("load balancer %s is %s, but annotation %s%s asks for %s: a load balancer named by annotation %s is never replaced; set %s%s to %t",
			current.ID, reach(current.Spec.Internal), l.opts.AnnotationPrefix, AnnotationInternal, reach(spec.Internal), key, l.opts.AnnotationPrefix, AnnotationInternal, current.Spec.Internal))
	}
	if name := l.replacedSetting(current.Spec, spec); name != "" {
		errs = append(errs, fmt.Errorf("load balancer %s has %s %s, but annotation %s%s asks for %s, which only a new load balancer can have: a load balancer named by annotation %s is never replaced; set %s%s to %s",
			current.ID, name, quote.Value(current.Spec.Settings[name]), l.opts.AnnotationPrefix, name, quote.Value(spec.Settings[name]), key, l.opts.AnnotationPrefix, name, quote.Value(current.Spec.Settings[name])))
	}
	return errs
}

// reach says "internal" or "public", for errors about the internal annotation.
func reach(internal bool) string {
	if internal {
		return "internal"
	}
	return "public"
}

// appProtocol returns what port p (of transport protocol proto) speaks at the load
// balancer: the Service port's appProtocol when it names tcp, udp, sctp, tls, http or https
// (any other is a hint for others, which this load balancer ignores), else, for a TCP
// port, the protocol annotation's; then TLS is terminated when the tls-ports annotation
// names the port (which it records in named).
func (l *LoadBalancer) appProtocol(s settings, p corev1.ServicePort, proto cloudapi.Protocol, named map[string]bool) (cloudapi.AppProtocol, error) {
	app := cloudapi.AppProtocolNone
	if proto == cloudapi.ProtocolTCP {
		app = s.appProtocol
	}
	if p.AppProtocol != nil {
		switch v := strings.ToLower(*p.AppProtocol); v {
		case "tcp", "udp", "sctp":
			app = cloudapi.AppProtocolNone
		case "tls", "http", "https":
			if proto != cloudapi.ProtocolTCP {
				return "", fmt.Errorf("port %d/%s: appProtocol %s needs TCP", p.Port, proto, v)
			}
			app = cloudapi.AppProtocol(strings.ToUpper(v))
		}
	}
	if len(s.tlsPorts) == 0 {
		return app, nil
	}
	byNumber, byName := strconv.Itoa(int(p.Port)), p.Name
	listed := slices.Contains(s.tlsPorts, byNumber) || (byName != "" && slices.Contains(s.tlsPorts, byName))
	if !listed {
		return app, nil
	}
	named[byNumber] = true
	if byName != "" {
		named[byName] = true
	}
	switch {
	case proto != cloudapi.ProtocolTCP:
		return "", fmt.Errorf("annotation %s%s: port %d/%s cannot terminate TLS: it is not TCP", l.opts.AnnotationPrefix, AnnotationTLSPorts, p.Port, proto)
	case app == cloudapi.AppProtocolHTTP:
		return cloudapi.AppProtocolHTTPS, nil
	case app == cloudapi.AppProtocolNone:
		return cloudapi.AppProtocolTLS, nil
	}
	return app, nil // TLS or HTTPS already
}

// targets returns the instance IDs of the nodes that sel selects (every node when sel is
// nil), sorted. A node without a provider ID, or with one of another format, cannot be a
// target: it is skipped with a log line. A selector that selects none of the nodes is
// logged.
func (l *LoadBalancer) targets(logger klog.Logger, nodes []*corev1.Node, sel labels.Selector) []string {
	key := "" // the selector in its canonical form; "" selects every node, as nil does
	if sel != nil {
		key = sel.String()
	}
	if ids, ok := l.memo.lookup(nodes, key); ok {
		return ids
	}
	ids := make([]string, 0, len(nodes))
	selected := 0
	for _, n := range nodes {
		if key != "" && !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		selected++
		if n.Spec.ProviderID == "" {
			logger.V(2).Info("Skipping node without a provider ID as load balancer target", "node", klog.KObj(n))
			continue
		}
		id, err := l.opts.ProviderID.InstanceID(n.Spec.ProviderID)
		if err != nil {
			logger.Info("Skipping node as load balancer target", "node", klog.KObj(n), "err", err)
			continue
		}
		ids = append(ids, id)
	}
	if selected == 0 && len(nodes) > 0 {
		logger.Info("The node selector selects none of the nodes: the load balancer has no targets", "nodeSelector", quote.Text(key), "nodes", len(nodes))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	l.memo.store(nodes, key, ids)
	return slices.Clone(ids)
}

// maxMemoSelectors bounds how many selectors' targets the memo keeps for one node set.
const maxMemoSelectors = 64

// targetMemo remembers the targets of the last node set, per node selector. The service
// controller hands every Service the same Node objects, in a new order each time; parsing
// and sorting 5,000 provider IDs is then most of a converged EnsureLoadBalancer's CPU. A
// node set matches the memo when it is the memo's (see nodeSet). The targets depend on
// nothing else but the labels, which are read when a selector's targets are stored. The
// Node objects the service controller passes come from its informer, which replaces a Node
// whose labels change with a new object; the node set then differs.
type targetMemo struct {
	mu  sync.Mutex
	set nodeSet
	ids map[string][]string // by selector ("" for every node); sorted, without duplicates; never handed out, only copies
}

// lookup returns a copy of the memo's targets of the selector key when nodes is the
// memo's node set.
func (m *targetMemo) lookup(nodes []*corev1.Node, key string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids, ok := m.ids[key]
	if !ok || !m.set.holds(nodes) {
		return nil, false
	}
	return slices.Clone(ids), true
}

// store records ids as the targets of the selector key on nodes: beside the other
// selectors' when nodes is the memo's node set, else as the memo's only entry. A node set
// that holds a Node twice is not stored.
func (m *targetMemo) store(nodes []*corev1.Node, key string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set.holds(nodes) {
		if len(m.ids) >= maxMemoSelectors {
			clear(m.ids)
		}
		m.ids[key] = ids
		return
	}
	if m.set.reset(nodes) {
		m.ids = map[string][]string{key: ids}
	}
}

// nodeSet remembers one set of Node objects, to tell whether a later node set is the same:
// it holds exactly these Node objects (by pointer, each once, in any order), none with a
// different provider ID than when it was remembered. It is not safe for concurrent use.
//
// The per-Node state lives in two dense slices rather than behind a pointer per Node: a
// check of 20,000 Nodes in a random order is bound by cache misses, and this saves one a
// Node.
type nodeSet struct {
	index       map[*corev1.Node]int32 // each Node object's position in providerIDs and seen; nil: none remembered
	providerIDs []string               // each Node's provider ID when remembered
	seen        []uint64               // the check that last met each Node
	visits      uint64                 // checks so far: marks which Nodes a check has met
}

// holds reports whether nodes is the remembered node set.
func (s *nodeSet) holds(nodes []*corev1.Node) bool {
	if s.index == nil || len(nodes) != len(s.index) {
		return false
	}
	s.visits++
	for _, n := range nodes {
		i, ok := s.index[n]
		if !ok || s.seen[i] == s.visits || s.providerIDs[i] != n.Spec.ProviderID {
			return false // another Node, one given twice, or a changed provider ID
		}
		s.seen[i] = s.visits
	}
	return true
}

// reset remembers nodes instead, and reports whether it could: a node set that holds a
// Node twice (or more Nodes than an int32 counts) is not remembered, and the previous one
// is kept.
func (s *nodeSet) reset(nodes []*corev1.Node) bool {
	if len(nodes) > math.MaxInt32 {
		return false
	}
	index := make(map[*corev1.Node]int32, len(nodes))
	providerIDs := make([]string, len(nodes))
	for i, n := range nodes {
		index[n] = int32(i)
		providerIDs[i] = n.Spec.ProviderID
	}
	if len(index) != len(nodes) {
		return false
	}
	s.index, s.providerIDs, s.seen = index, providerIDs, make([]uint64, len(nodes))
	return true
}
