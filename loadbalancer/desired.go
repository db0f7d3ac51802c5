package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// ownerTags are the tags that make a load balancer the Service's: the lookup filter.
func (l *LoadBalancer) ownerTags(svc *corev1.Service) map[string]string {
	return map[string]string{cloudapi.TagCluster: l.opts.ClusterID, cloudapi.TagService: string(svc.UID)}
}

// defaultName is the cloud name of the Service's load balancer without a name annotation:
// the cluster ID (shortened) and the Service UID, so that it is unique, stable and within
// 63 characters.
func (l *LoadBalancer) defaultName(svc *corev1.Service) string {
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
	uid := strings.ReplaceAll(string(svc.UID), "-", "")
	return cluster + "-a" + uid
}

// desired builds the load balancer spec the Service asks for, and reports annotation keys
// that are probably typos. current is the load balancer found in the cloud, or nil; its
// foreign tags are kept.
func (l *LoadBalancer) desired(logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node, current *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, error) {
	s, unknown, err := parseAnnotations(l.opts.AnnotationPrefix, svc.Annotations)
	if len(unknown) > 0 {
		logger.Info("Ignoring unknown load balancer annotations; a typo?", "annotations", unknown, "prefix", l.opts.AnnotationPrefix)
	}
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
	if raw := svc.Spec.LoadBalancerIP; raw != "" { //nolint:staticcheck // the deprecated field is still honoured
		addr, perr := netip.ParseAddr(raw)
		ip := addr.Unmap().String() // canonical, as the annotation's and the cloud's
		switch {
		case perr != nil || addr.Zone() != "":
			errs = append(errs, fmt.Errorf("spec.loadBalancerIP %q is not an IP address", raw))
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
		spec.Listeners = append(spec.Listeners, cloudapi.Listener{Name: name, Protocol: proto, Port: p.Port, TargetPort: p.NodePort})
	}
	slices.SortFunc(spec.Listeners, func(a, b cloudapi.Listener) int {
		if a.Protocol != b.Protocol {
			return strings.Compare(string(a.Protocol), string(b.Protocol))
		}
		return int(a.Port) - int(b.Port)
	})

	spec.Targets = l.targets(logger, svc, nodes)

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
		return spec, fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, errors.Join(errs...))
	}
	return spec, nil
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
	return errs
}

// reach says "internal" or "public", for errors about the internal annotation.
func reach(internal bool) string {
	if internal {
		return "internal"
	}
	return "public"
}

// targets returns the instance IDs of the nodes, sorted. A node without a provider ID, or
// with one of another format, cannot be a target: it is skipped with a log line.
func (l *LoadBalancer) targets(logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node) []string {
	if ids, ok := l.memo.lookup(nodes); ok {
		return ids
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
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
	slices.Sort(ids)
	ids = slices.Compact(ids)
	l.memo.store(nodes, ids)
	return slices.Clone(ids)
}

// targetMemo remembers the targets of the last node set. The service controller hands
// every Service the same Node objects, in a new order each time; parsing and sorting
// 5,000 provider IDs is then most of a converged EnsureLoadBalancer's CPU. A node set
// matches the memo when it holds exactly the memo's Node objects (by pointer, each once)
// and none has a different provider ID than when it was stored: the targets depend on
// nothing else.
type targetMemo struct {
	mu     sync.Mutex
	nodes  map[*corev1.Node]*memoNode
	ids    []string // sorted, without duplicates; never handed out, only copies
	visits uint64   // lookups so far: marks which memo entries a lookup has met
}

type memoNode struct {
	providerID string
	visit      uint64 // the lookup that last met this node
}

// lookup returns a copy of the memo's targets when nodes is the memo's node set.
func (m *targetMemo) lookup(nodes []*corev1.Node) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nodes == nil || len(nodes) != len(m.nodes) {
		return nil, false
	}
	m.visits++
	for _, n := range nodes {
		e := m.nodes[n]
		if e == nil || e.visit == m.visits || e.providerID != n.Spec.ProviderID {
			return nil, false // another Node, one given twice, or a changed provider ID
		}
		e.visit = m.visits
	}
	return slices.Clone(m.ids), true
}

// store makes nodes and their targets ids the memo. A node set that holds a Node twice is
// not stored.
func (m *targetMemo) store(nodes []*corev1.Node, ids []string) {
	byNode := make(map[*corev1.Node]*memoNode, len(nodes))
	for _, n := range nodes {
		byNode[n] = &memoNode{providerID: n.Spec.ProviderID}
	}
	if len(byNode) != len(nodes) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes, m.ids = byNode, ids
}
