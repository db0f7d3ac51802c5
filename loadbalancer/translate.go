package loadbalancer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	servicehelpers "k8s.io/cloud-provider/service/helpers"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// translate is the translation of a Service into the load balancer it asks for: pure, no
// receiver, no side effect. It returns the spec, the Service's parsed annotations (as far
// as they are well-formed) and the problems it found, which the caller reports (see
// problems). What it reads is all in in.
//
// The spec: listeners from spec.ports (each to its node port; a TCP port's application
// protocol from its appProtocol, else the protocol annotation, TLS termination from the
// tls-ports annotation with the tls-certificates), the targets of the Nodes the
// node-selector annotation selects, the health check (HTTP on spec.healthCheckNodePort at
// /healthz with externalTrafficPolicy Local, else kube-proxy's KubeProxyHealthzPort; each
// part overridden by its annotation; a port's own from the port-health-checks annotation), the source ranges (the upstream helper's rules;
// allow-all is none), session affinity, IP families, the requested addresses (annotation,
// else spec.loadBalancerIP), the adapter's settings (see adapterValues), and the owner
// tags beside the tags others put on in.current.
func translate(in translation) (cloudapi.LoadBalancerSpec, parsedAnnotations, problems) {
	svc, prefix := in.svc, in.prefix
	a, unknown, parseErrs := parseAnnotations(prefix, in.declarations, in.aliases, svc.Annotations)
	var ps problems
	for _, k := range unknown {
		ps = append(ps, problem{severity: severityWarning, key: k, err: errUnknownAnnotation})
	}
	for _, err := range parseErrs {
		ps = append(ps, problem{key: err.Key, err: err})
	}
	fail := func(key string, err error) { ps = append(ps, problem{key: key, err: err}) }

	spec := cloudapi.LoadBalancerSpec{
		Name:          a.name,
		Internal:      a.internal,
		ProxyProtocol: a.proxyProtocol,
		RequestedIPs:  a.ips,
	}
	owner := in.owner
	switch {
	case owner != "":
	case a.share != "":
		owner = shareOwnerPrefix + svc.Namespace + "/" + a.share // a share of the namespace
	default:
		owner = string(svc.UID)
	}
	share, shared := strings.CutPrefix(owner, shareOwnerPrefix)
	if spec.Name == "" {
		spec.Name = defaultName(in.clusterID, svc)
		if shared {
			spec.Name = shareName(in.clusterID, share)
		}
	}
	// adopting: current is the load balancer a Service adopts (by its load-balancer-id
	// annotation, or the earlier cloud-controller-manager's mark), which carries none of
	// ccmkit's ownership tags yet; keep: the parts cloudapi.TagAdopted lists that the Service does not ask
	// for stay as current has them, during the adoption and after it (cloudapi.TagAdopted).
	adopting := in.current != nil && unowned(in.current.Spec.Tags)
	keep := adopting || (in.current != nil && in.current.Spec.Tags[cloudapi.TagAdopted] != "")
	spec.SettingValues = adapterValues(in.declarations, in.settingDefaults, a.adapterValues, in.current, keep)
	if raw := svc.Spec.LoadBalancerIP; raw != "" { //nolint:staticcheck // the deprecated field is still honoured
		addr, perr := netip.ParseAddr(raw)
		ip := addr.Unmap().String() // canonical, as the annotation's and the cloud's
		switch {
		case perr != nil || addr.Zone() != "":
			fail("spec.loadBalancerIP", fmt.Errorf("spec.loadBalancerIP %s is not an IP address", quote.Value(raw)))
		case len(a.ips) == 0:
			spec.RequestedIPs = []string{ip}
		case !slices.Contains(a.ips, ip):
			fail("spec.loadBalancerIP", fmt.Errorf("spec.loadBalancerIP %s is not among the addresses of annotation %s: set one of them", ip, a.key(prefix, AnnotationIPAddresses)))
		}
	}

	if in.current != nil && (a.loadBalancerID != "" || adopting) {
		for _, err := range checkNamed(prefix, in.declarations, a, spec, in.current) {
			fail(a.key(prefix, AnnotationLoadBalancerID), err)
		}
	}
	if in.current != nil && (a.loadBalancerID != "" || keep) && len(spec.RequestedIPs) == 0 {
		// The Service asks for no address: the load balancer keeps its own.
		spec.RequestedIPs = slices.Clone(in.current.Spec.RequestedIPs)
	}

	var lps problems
	spec.Listeners, lps = listeners(prefix, a, svc.Spec.Ports)
	ps = append(ps, lps...)
	if shared {
		for i := range spec.Listeners {
			spec.Listeners[i].Name = plan.ListenerName(string(svc.UID), spec.Listeners[i].Name)
		}
		if a.loadBalancerID != "" {
			fail(a.key(prefix, AnnotationShare), fmt.Errorf("annotations %s and %s cannot be combined: a shared load balancer is one ccmkit makes; remove one of them",
				a.key(prefix, AnnotationShare), a.key(prefix, AnnotationLoadBalancerID)))
		}
		if !in.shape.Keeps(cloudapi.FeatureListenerNames) {
			fail(a.key(prefix, AnnotationShare), fmt.Errorf("annotation %s: this cloud's load balancers do not keep listener names, by which ccmkit tells the listeners of a share's Services apart: sharing is not supported here; remove the annotation",
				a.key(prefix, AnnotationShare)))
		}
	}

	spec.Targets = in.targets(a.nodeSelector)

	var kept *cloudapi.HealthCheck
	keepHC := keep
	if keep {
		// None read is kept only where it means one per port (the ports' own differ, on a
		// cloud that builds a port's own): elsewhere it is none at all, and ccmkit's
		// default is better than none.
		kept = in.current.Spec.HealthCheck
		keepHC = kept != nil || slices.Contains(in.shape.PerListener, cloudapi.FeatureListenerHealthCheck)
	}
	hc, err := healthCheck(prefix, svc, a, keepHC, kept, nil, in.shape)
	if err != nil {
		fail(a.key(prefix, AnnotationHealthCheckTimeout), err)
	}
	for _, d := range []struct {
		name string
		set  time.Duration
	}{{AnnotationHealthCheckInterval, a.hcInterval}, {AnnotationHealthCheckTimeout, a.hcTimeout}} {
		if unit := in.shape.HealthCheckUnit; unit > 0 && d.set%unit != 0 {
			key := a.key(prefix, d.name)
			fail(key, &AnnotationError{Key: key, Value: svc.Annotations[key],
				Allowed: fmt.Sprintf("a whole number of %s, the unit this cloud keeps a health check's times in", unit),
				Err:     fmt.Errorf("%s is not a whole number of %s", d.set, unit)})
		}
	}
	spec.HealthCheck = hc
	if hc != nil {
		// A kept health check's parts are the cloud's: only those the Service sets are its.
		ps = append(ps, healthCheckRanges(prefix, svc, a, hc, in.shape, keepHC && kept != nil)...)
	}
	if keepHC && kept == nil {
		ps = append(ps, keptPortHealthChecks(prefix, svc, a, in.current, spec.Listeners, in.shape)...)
	}
	ps = append(ps, portHealthChecks(prefix, svc, a, keepHC, kept, hc, spec.Listeners, in.shape)...)

	ranges, err := servicehelpers.GetLoadBalancerSourceRanges(svc)
	if err != nil {
		fail("spec.loadBalancerSourceRanges", err)
	} else if !servicehelpers.IsAllowAll(ranges) {
		spec.SourceRanges = ranges.StringSlice()
		slices.Sort(spec.SourceRanges)
	}

	ps = append(ps, sessionAffinity(prefix, svc, a, &spec)...)

	for _, f := range svc.Spec.IPFamilies {
		spec.IPFamilies = append(spec.IPFamilies, cloudapi.IPFamily(f))
	}

	spec.Tags = map[string]string{}
	if in.current != nil {
		maps.Copy(spec.Tags, in.current.Spec.Tags) // keep tags others put on it
	}
	maps.Copy(spec.Tags, ownerTags(in.clusterID, owner))
	if !shared {
		spec.Tags[cloudapi.TagServiceName] = svc.Namespace + "/" + svc.Name
	}
	if keep {
		spec.Tags[cloudapi.TagAdopted] = "true"
	}
	ps = append(ps, shapeProblems(prefix, a, spec, in.shape)...)
	return spec, a, ps
}

// listeners returns the listeners of the Service's ports, sorted by protocol and port,
// and the problems of the ports and of the TLS annotations.
func listeners(prefix string, a parsedAnnotations, ports []corev1.ServicePort) ([]cloudapi.Listener, problems) {
	var out []cloudapi.Listener
	var ps problems
	fail := func(key string, err error) { ps = append(ps, problem{key: key, err: err}) }
	tlsPorts := map[string]bool{}   // the tls-ports annotation's entries that name a port
	protoPorts := map[string]bool{} // the port-protocols annotation's entries that name a port
	terminates := false             // whether a listener terminates TLS
	for _, p := range ports {
		proto := cloudapi.Protocol(p.Protocol)
		if p.Protocol == "" {
			proto = cloudapi.ProtocolTCP
		}
		if !proto.Valid() {
			fail("spec.ports", fmt.Errorf("port %d: protocol %q is not TCP, UDP or SCTP", p.Port, p.Protocol))
			continue
		}
		if p.NodePort == 0 {
			fail("spec.ports", fmt.Errorf("port %d/%s has no node port: this load balancer sends traffic to node ports; do not set spec.allocateLoadBalancerNodePorts to false", p.Port, proto))
			continue
		}
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), p.Port)
		}
		listener := cloudapi.Listener{Name: name, Protocol: proto, Port: p.Port, TargetPort: p.NodePort}
		var err error
		listener.AppProtocol, err = appProtocol(prefix, a, p, proto, tlsPorts, protoPorts)
		if err != nil {
			fail("spec.ports", err)
			continue
		}
		if listener.AppProtocol.TerminatesTLS() {
			terminates = true
			if len(a.certs) == 0 {
				fail(a.key(prefix, AnnotationTLSCertificates), fmt.Errorf("port %d/%s terminates TLS (%s): annotation %s names no certificate", p.Port, proto, listener.AppProtocol, a.key(prefix, AnnotationTLSCertificates)))
				continue
			}
			listener.Certificates = slices.Clone(a.certs)
		}
		out = append(out, listener)
	}
	for _, tp := range a.tlsPorts {
		if !tlsPorts[tp] {
			fail(a.key(prefix, AnnotationTLSPorts), fmt.Errorf("annotation %s: the Service has no port %s", a.key(prefix, AnnotationTLSPorts), tp))
		}
	}
	ps = append(ps, unnamedPortProtocols(prefix, a, protoPorts)...)
	if len(a.certs) > 0 && !terminates {
		fail(a.key(prefix, AnnotationTLSCertificates), fmt.Errorf("annotation %s is set, but no port terminates TLS: name the ports in %s, or set their appProtocol (tls, https) or annotation %s",
			a.key(prefix, AnnotationTLSCertificates), a.key(prefix, AnnotationTLSPorts), a.key(prefix, AnnotationProtocol)))
	}
	plan.SortListeners(out)

	return out, ps
}

// translation is what translate reads.
type translation struct {
	svc *corev1.Service
	// current is the load balancer found in the cloud, or nil; its foreign tags and
	// undeclared settings are kept.
	current *cloudapi.LoadBalancer
	// targets returns the instance IDs of the Nodes sel selects (nil: every Node),
	// sorted: the LoadBalancer's (memoized) targets of the Nodes it was given.
	targets func(sel labels.Selector) []string
	// clusterID and prefix are Options.ClusterID and Options.AnnotationPrefix.
	clusterID, prefix string
	// declarations are the adapter's declared settings (Options.Settings), and
	// adapterDefaults the values every Service starts from (see LoadBalancer).
	declarations    Settings
	settingDefaults map[string]string
	// shape is what the cloud's load balancers do not support (Options.Shape): a spec
	// that uses one is a problem.
	shape cloudapi.LoadBalancerShape
	// aliases are the adapter's annotation aliases (Options.Aliases).
	aliases Aliases
	// owner is the owner of the Service's load balancer (see intents.owner): its UID,
	// or its share; empty means its share in its namespace when it names one, else its
	// UID.
	owner string
}

// severity says what a problem does to the sync.
type severity int

const (
	// severityError fails the sync: it is in the Service's error, which the service
	// controller shows as a Warning event.
	severityError severity = iota
	// severityWarning does not: the LoadBalancer records a Warning event.
	severityWarning
)

// problem is one thing wrong with what a Service asks for.
type problem struct {
	severity severity
	// key is the annotation's whole key, or the Service's field (such as "spec.ports"),
	// that the problem is about.
	key string
	// err says what is wrong. A malformed annotation value is an *AnnotationError, which
	// names the value and what is allowed; an annotation key that nothing reads is
	// errUnknownAnnotation.
	err error
}

// errUnknownAnnotation is the problem of an annotation key under the prefix (or a legacy
// prefix of Aliases) that neither ccmkit nor the adapter reads: probably a typo.
var errUnknownAnnotation = errors.New("an annotation nothing reads")

// problems are what translate found, in the order it found them.
type problems []problem

// err is the Service's error: its problems of severityError joined, nil for none.
func (ps problems) err(svc *corev1.Service) error {
	var errs []error
	for _, p := range ps {
		if p.severity == severityError {
			errs = append(errs, p.err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, errors.Join(errs...))
}

// unknownKeys returns the annotation keys of the problems that are errUnknownAnnotation,
// sorted.
func (ps problems) unknownKeys() []string {
	var keys []string
	for _, p := range ps {
		if errors.Is(p.err, errUnknownAnnotation) {
			keys = append(keys, p.key)
		}
	}
	slices.Sort(keys)
	return keys
}

// checkNamed returns what keeps the Service's load balancer current from being the one its
// load-balancer-id annotation names, or the one it takes over from the earlier
// cloud-controller-manager (Aliases.OwnerTag): another load balancer, or one that only a
// replacement could make what the Service asks for (internal or public).
func checkNamed(prefix string, decls Settings, a parsedAnnotations, spec cloudapi.LoadBalancerSpec, current *cloudapi.LoadBalancer) []error {
	key := a.key(prefix, AnnotationLoadBalancerID)
	named := "named by annotation " + key
	if a.loadBalancerID == "" {
		named = "taken over from the earlier cloud-controller-manager"
	}
	var errs []error
	if a.loadBalancerID != "" && current.ID != a.loadBalancerID {
		errs = append(errs, fmt.Errorf("annotation %s names load balancer %s, but the Service's load balancer is %s: ccmkit neither swaps nor deletes load balancers for it; set the annotation to %s, or remove it",
			key, a.loadBalancerID, current.ID, current.ID))
	}
	if current.Spec.Internal != spec.Internal {
		errs = append(errs, fmt.Errorf("load balancer %s is %s, but annotation %s asks for %s: a load balancer %s is never replaced; set %s",
			current.ID, reach(current.Spec.Internal), a.key(prefix, AnnotationInternal), reach(spec.Internal), named, a.setTo(prefix, AnnotationInternal, strconv.FormatBool(current.Spec.Internal))))
	}
	if name := decls.replaced(current.Spec, spec); name != "" {
		errs = append(errs, fmt.Errorf("load balancer %s has %s %s, but annotation %s asks for %s, which only a new load balancer can have: a load balancer %s is never replaced; set %s",
			current.ID, name, quote.Value(current.Spec.SettingValues[name]), a.key(prefix, name), quote.Value(spec.SettingValues[name]), named, a.setTo(prefix, name, quote.Value(current.Spec.SettingValues[name]))))
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
// port, the port-protocols annotation's entry of it (which it records in protoNamed; an
// appProtocol that disagrees with it is an error), else the protocol annotation's; then
// TLS is terminated when the tls-ports annotation names the port (which it records in
// named).
func appProtocol(prefix string, a parsedAnnotations, p corev1.ServicePort, proto cloudapi.Protocol, named, protoNamed map[string]bool) (cloudapi.AppProtocol, error) {
	app := cloudapi.AppProtocolNone
	if proto == cloudapi.ProtocolTCP {
		app = a.appProtocol
	}
	ppKey := a.key(prefix, AnnotationPortProtocols)
	entry, listed, err := a.portProtocol(ppKey, p, proto, protoNamed)
	if err != nil {
		return "", err
	}
	if listed {
		app = entry
	}
	if p.AppProtocol != nil {
		hint := app
		switch v := strings.ToLower(*p.AppProtocol); v {
		case "tcp", "udp", "sctp":
			hint = cloudapi.AppProtocolNone
		case "tls", "http", "https":
			if proto != cloudapi.ProtocolTCP {
				return "", fmt.Errorf("port %d/%s: appProtocol %s needs TCP", p.Port, proto, v)
			}
			hint = cloudapi.AppProtocol(strings.ToUpper(v))
		}
		if listed && hint != entry {
			return "", fmt.Errorf("port %d/%s: appProtocol %s disagrees with annotation %s, which says %s: remove one, or set them alike", p.Port, proto, *p.AppProtocol, ppKey, cmp.Or(string(entry), "TCP"))
		}
		app = hint
	}
	if len(a.tlsPorts) == 0 {
		return app, nil
	}
	byNumber, byName := strconv.Itoa(int(p.Port)), p.Name
	if !slices.Contains(a.tlsPorts, byNumber) && (byName == "" || !slices.Contains(a.tlsPorts, byName)) {
		return app, nil
	}
	named[byNumber] = true
	if byName != "" {
		named[byName] = true
	}
	switch {
	case proto != cloudapi.ProtocolTCP:
		return "", fmt.Errorf("annotation %s: port %d/%s cannot terminate TLS: it is not TCP", a.key(prefix, AnnotationTLSPorts), p.Port, proto)
	case app == cloudapi.AppProtocolHTTP:
		return cloudapi.AppProtocolHTTPS, nil
	case app == cloudapi.AppProtocolNone:
		return cloudapi.AppProtocolTLS, nil
	}
	return app, nil // TLS or HTTPS already
}
