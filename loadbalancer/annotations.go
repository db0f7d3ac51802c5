package loadbalancer

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// Annotation is one Service annotation that ccmkit reads, under the configured prefix
// (default "loadbalancer.ccmkit.io/"). Annotations lists them all; the annotation reference
// (docs/reference/annotations.md) is generated from it.
type Annotation struct {
	// Name is the key after the prefix, for example "internal".
	Name string
	// Values says what values are allowed.
	Values string
	// Default is what an absent annotation means.
	Default string
	// Doc says what the annotation does.
	Doc string

	apply func(value string, a *parsedAnnotations) error
	// check returns the CEL expression that accepts the values apply accepts, given the
	// CEL of the value (AdmissionPolicy); nil when CEL cannot check the values, which
	// then only the sync checks.
	check func(value string) string
	// same returns the CEL expression that is true when the values x and y, both accepted
	// by check, have the same effect (two spellings of the annotation agree); nil when
	// CEL cannot compare them simply, which then only the sync does.
	same func(x, y string) string
}

// The annotation names, after the prefix.
const (
	AnnotationInternal                      = "internal"
	AnnotationProxyProtocol                 = "proxy-protocol"
	AnnotationIPAddresses                   = "ip-addresses"
	AnnotationName                          = "name"
	AnnotationHealthCheckProtocol           = "health-check-protocol"
	AnnotationHealthCheckPort               = "health-check-port"
	AnnotationHealthCheckPath               = "health-check-path"
	AnnotationHealthCheckInterval           = "health-check-interval"
	AnnotationHealthCheckTimeout            = "health-check-timeout"
	AnnotationHealthCheckHealthyThreshold   = "health-check-healthy-threshold"
	AnnotationHealthCheckUnhealthyThreshold = "health-check-unhealthy-threshold"
	AnnotationPortHealthChecks              = "port-health-checks"
	AnnotationHostname                      = "hostname"
	AnnotationNodeSelector                  = "node-selector"
	AnnotationProtocol                      = "protocol"
	AnnotationPortProtocols                 = "port-protocols"
	AnnotationTLSPorts                      = "tls-ports"
	AnnotationTLSCertificates               = "tls-certificates"
	AnnotationLoadBalancerID                = "load-balancer-id"
	AnnotationKeepOnDelete                  = "keep-on-delete"
	AnnotationShare                         = "share"
)

// Health check defaults.
const (
	// KubeProxyHealthzPort is kube-proxy's health port, checked for externalTrafficPolicy
	// Cluster: a node whose kube-proxy is down cannot forward traffic.
	KubeProxyHealthzPort      = 10256
	defaultHealthCheckPath    = "/healthz"
	defaultInterval           = 10 * time.Second
	defaultTimeout            = 5 * time.Second
	defaultHealthyThreshold   = 2
	defaultUnhealthyThreshold = 3
)

// maxNameLength is the longest load balancer name ccmkit asks for, the common limit of clouds.
const maxNameLength = 63

// maxIDLength is the longest load balancer ID the load-balancer-id annotation takes.
const maxIDLength = 255

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// parsedAnnotations are a Service's annotations as parsed: their effect on the desired
// load balancer. A zero health check field means the default.
type parsedAnnotations struct {
	internal      bool
	proxyProtocol bool
	ips           []string
	name          string
	// loadBalancerID is the load balancer to adopt; empty for none.
	loadBalancerID string
	// keepOnDelete is the keep-on-delete annotation's value; nil when it is absent.
	keepOnDelete *bool
	// share is the name of the share the Service joins; empty for none.
	share string

	// hostname is the hostname the status publishes; empty for none.
	hostname string

	// nodeSelector selects the targets among the nodes; nil selects every node.
	// nodeSelectorBad is true when the annotation is malformed, or spelled twice with
	// values that disagree: the targets then stay.
	nodeSelector    labels.Selector
	nodeSelectorBad bool

	appProtocol cloudapi.AppProtocol // of the TCP ports whose appProtocol names none
	// portProtocols are the entries of the port-protocols annotation, sorted by port.
	portProtocols []portProtocol
	tlsPorts      []string // port numbers and names, as written
	certs         []string

	hcProtocol             cloudapi.HealthCheckProtocol
	hcPort                 int32
	hcPath                 string
	hcInterval, hcTimeout  time.Duration
	hcHealthy, hcUnhealthy int32
	// portHCs are the entries of the port-health-checks annotation, in its order.
	portHCs []portHealthCheck

	sticky stickiness // the cookie stickiness annotations

	// adapterValues are the values of the adapter's declared settings (Options.Settings)
	// that the Service annotates, canonical; nil when it annotates none.
	adapterValues map[string]string

	// keys are the keys the Service spells its annotations with, by name (see key).
	keys map[string]spelling
}

// Annotations returns every annotation ccmkit reads, in the order of the reference.
func Annotations() []Annotation { return slices.Clone(annotationTable()) }

// annotationTable returns Annotations, built once (every sync parses a Service's
// annotations with it); read only. It is a function over a sync.Once, not a
// sync.OnceValue variable: the table's port-health-checks parser reads the table, which a
// variable's initializer may not.
func annotationTable() []Annotation {
	annotationsOnce.Do(func() { annotationList = buildAnnotations() })
	return annotationList
}

var (
	annotationsOnce sync.Once
	annotationList  []Annotation // annotationTable's
)

// buildAnnotations returns every annotation ccmkit reads, in the order of the reference.
func buildAnnotations() []Annotation {
	return append([]Annotation{
		{
			Name: AnnotationInternal, check: celBool, same: celSameBool, Values: "true, false", Default: "false",
			Doc: "An internal load balancer, with an address from the cloud's private network. Changing it replaces the load balancer (new address).",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.internal, err = parseBool(v)
				return err
			},
		},
		{
			Name: AnnotationProxyProtocol, check: celBool, same: celSameBool, Values: "true, false", Default: "false",
			Doc: "Send the PROXY protocol header to the targets. The Service's status then reports ipMode Proxy, so that kube-proxy sends in-cluster traffic through the load balancer too.",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.proxyProtocol, err = parseBool(v)
				return err
			},
		},
		{
			Name: AnnotationIPAddresses, check: celIPs, Values: "comma-separated IPs, at most one per IP family", Default: "spec.loadBalancerIP, else addresses from the cloud's pool",
			Doc: "The addresses to request; the cloud refuses an address in use or outside its pools.",
			apply: func(v string, a *parsedAnnotations) error {
				a.ips = nil
				seen := map[bool]bool{}
				for _, f := range strings.Split(v, ",") {
					ip, err := netip.ParseAddr(strings.TrimSpace(f))
					if err != nil || ip.Zone() != "" {
						return fmt.Errorf("%s is not an IP address", quote.Value(strings.TrimSpace(f)))
					}
					ip = ip.Unmap()
					if seen[ip.Is4()] {
						return errors.New("more than one address of one IP family")
					}
					seen[ip.Is4()] = true
					a.ips = append(a.ips, ip.String())
				}
				return nil
			},
		},
		{
			Name: AnnotationName, check: celName, Values: "a DNS label: lower-case letters, digits and '-', at most 63 characters", Default: "derived from the cluster ID and the Service UID",
			Doc: "The load balancer's name in the cloud, for humans. Renaming renames in place; ownership is by tags, never by name.",
			apply: func(v string, a *parsedAnnotations) error {
				if len(v) > maxNameLength || !nameRE.MatchString(v) {
					return errors.New("not a DNS label of at most 63 lower-case letters, digits and '-'")
				}
				a.name = v
				return nil
			},
		},
		{
			Name: AnnotationHealthCheckProtocol, check: celEnum("TCP", "HTTP", "HTTPS"), same: celSameEnum, Values: "TCP, HTTP, HTTPS", Default: "HTTP",
			Doc: "The health check's protocol.",
			apply: func(v string, a *parsedAnnotations) error {
				p := cloudapi.HealthCheckProtocol(strings.ToUpper(v))
				if !p.Valid() {
					return errors.New("not one of TCP, HTTP, HTTPS")
				}
				a.hcProtocol = p
				return nil
			},
		},
		{
			Name: AnnotationHealthCheckPort, check: celInt(1, 65535), same: celSameInt, Values: "1-65535", Default: "spec.healthCheckNodePort with externalTrafficPolicy Local, else 10256 (kube-proxy)",
			Doc: "The node port the health check probes.",
			apply: func(v string, a *parsedAnnotations) error {
				n, err := parseInt(v, 1, 65535)
				a.hcPort = n
				return err
			},
		},
		{
			Name: AnnotationHealthCheckPath, check: celPath, Values: "a path starting with /", Default: "/healthz",
			Doc: "The path of an HTTP or HTTPS health check.",
			apply: func(v string, a *parsedAnnotations) error {
				if !strings.HasPrefix(v, "/") || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
					return errors.New("not a path starting with / without white space or control characters")
				}
				a.hcPath = v
				return nil
			},
		},
		{
			Name: AnnotationHealthCheckInterval, check: celDuration, Values: "a duration from 1s to 5m, such as 10s", Default: "10s",
			Doc: "How often the health check probes.",
			apply: func(v string, a *parsedAnnotations) error {
				d, err := parseDuration(v)
				a.hcInterval = d
				return err
			},
		},
		{
			Name: AnnotationHealthCheckTimeout, check: celDuration, Values: "a duration from 1s to 5m, at most the interval", Default: "5s",
			Doc: "How long a probe may take.",
			apply: func(v string, a *parsedAnnotations) error {
				d, err := parseDuration(v)
				a.hcTimeout = d
				return err
			},
		},
		{
			Name: AnnotationHealthCheckHealthyThreshold, check: celInt(1, 10), same: celSameInt, Values: "1-10", Default: "2",
			Doc: "Probes in a row that must succeed before a target gets traffic.",
			apply: func(v string, a *parsedAnnotations) error {
				n, err := parseInt(v, 1, 10)
				a.hcHealthy = n
				return err
			},
		},
		{
			Name: AnnotationHealthCheckUnhealthyThreshold, check: celInt(1, 10), same: celSameInt, Values: "1-10", Default: "3",
			Doc: "Probes in a row that must fail before a target gets no traffic.",
			apply: func(v string, a *parsedAnnotations) error {
				n, err := parseInt(v, 1, 10)
				a.hcUnhealthy = n
				return err
			},
		},
		{
			Name: AnnotationPortHealthChecks, Values: portHealthChecksValues, Default: "none: every port has the Service's health check",
			Doc: "A health check of its own for some of the Service's ports (a number names the port of each protocol with that number): each part it does not set is the Service's health check's (the health-check-* annotations, or their defaults). Only a cloud whose load balancers keep a health check per port builds it (the adapter's shape declares listener-health-check); elsewhere the admission policy refuses the Service, and the sync neither creates nor changes its load balancer (a Warning event).",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.portHCs, err = parsePortHealthChecks(v)
				return err
			},
		},
		{
			Name: AnnotationHostname, check: celHostname, Values: "a DNS name: lower-case RFC 1123 subdomain, not an IP address", Default: "none: the status lists the load balancer's addresses, or the cloud's hostname when it gives no address",
			Doc: "Publish this hostname in the Service's status instead of the load balancer's addresses, for example a DNS name that points at them. kube-proxy then sends in-cluster traffic through the load balancer, as PROXY protocol or TLS termination need where ipMode Proxy is not enough.",
			apply: func(v string, a *parsedAnnotations) error {
				if err := checkHostname(v); err != nil {
					return err
				}
				a.hostname = v // status publishes it
				return nil
			},
		},
		{
			Name: AnnotationNodeSelector, Values: "a label selector as kubectl -l takes it: comma-separated requirements that all hold, each key=value, key!=value, key in (a,b), key notin (a,b), key or !key", Default: "every Node the service controller passes",
			Doc: "Only the Nodes whose labels match are targets, on top of the node.kubernetes.io/exclude-from-external-load-balancers label. A selector that matches no Node leaves the load balancer without targets (logged); a malformed one leaves the targets as they are. A Node whose labels change is added or removed within seconds.",
			apply: func(v string, a *parsedAnnotations) error {
				sel, err := labels.Parse(v)
				if err != nil {
					return err
				}
				a.nodeSelector = sel
				return nil
			},
		},
		{
			Name: AnnotationProtocol, check: celEnum("TCP", "TLS", "HTTP", "HTTPS"), same: celSameEnum, Values: "TCP, TLS, HTTP, HTTPS", Default: "TCP: the load balancer forwards the bytes",
			Doc: "What the Service's TCP ports speak at the load balancer, unless a port's appProtocol names one of tcp, tls, http, https. TLS and HTTPS terminate TLS with the tls-certificates. A cloud whose load balancers cannot do it refuses the Service (a Warning event).",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.appProtocol, err = parseAppProtocol(v)
				return err
			},
		},
		{
			Name: AnnotationPortProtocols, Values: portProtocolsValues, Default: "none: each TCP port speaks what its appProtocol or the protocol annotation says",
			Doc: "What some of the Service's TCP ports speak at the load balancer, in place of the protocol annotation (a number names the TCP port with that number): HTTPS on one port and TCP on another, for example. TLS and HTTPS terminate TLS with the tls-certificates; tls-ports still makes a port named here TLS or HTTPS. A port whose appProtocol names another of tcp, tls, http, https is an error.",
			apply: func(v string, a *parsedAnnotations) (err error) {
				a.portProtocols, err = parsePortProtocols(v)
				return err
			},
		},
		{
			Name: AnnotationTLSPorts, check: celTLSPorts, Values: "comma-separated numbers or names of the Service's TCP ports", Default: "none",
			Doc: "These ports terminate TLS with the tls-certificates: TCP becomes TLS, HTTP becomes HTTPS. A port's appProtocol tls or https, or the protocol annotation, does it too.",
			apply: func(v string, a *parsedAnnotations) error {
				a.tlsPorts = nil
				for _, f := range strings.Split(v, ",") {
					port, err := parsePortRef(f)
					if err != nil {
						return err
					}
					a.tlsPorts = append(a.tlsPorts, port)
				}
				return nil
			},
		},
		{
			Name: AnnotationTLSCertificates, check: celCertificates, Values: "comma-separated references of certificates in the cloud (IDs, names or ARNs, as the cloud knows them), the default one first", Default: "none",
			Doc: "The certificates the ports that terminate TLS present; a cloud with SNI picks among them by the name the client asks for. Required when a port terminates TLS, and refused when none does.",
			apply: func(v string, a *parsedAnnotations) error {
				a.certs = nil
				listed := map[string]bool{} // not a search of a.certs: a list may hold thousands
				for _, f := range strings.Split(v, ",") {
					f = strings.TrimSpace(f)
					switch {
					case f == "" || strings.ContainsFunc(f, unicode.IsSpace):
						return fmt.Errorf("%s is not a certificate reference", quote.Value(f))
					case listed[f]:
						return fmt.Errorf("certificate %s is listed twice", quote.Value(f))
					}
					listed[f] = true
					a.certs = append(a.certs, f)
				}
				return nil
			},
		},
		{
			Name: AnnotationLoadBalancerID, check: celLoadBalancerID, Values: "the cloud ID of a load balancer: printable characters without white space, at most 255", Default: "none: ccmkit creates the load balancer",
			Doc: "Adopt this existing load balancer instead of creating one: ccmkit writes the Service's owner tags to it and keeps its addresses and, where the Service sets no annotation for them, its health check and the adapter's settings, provided it carries no ownership tags of another cluster or Service; otherwise the sync fails with a Warning event and nothing changes. An ID that does not exist is an error too (nothing is created in its place). Once adopted it is the Service's load balancer: deleted with it unless keep-on-delete. While the annotation is set, the load balancer is never replaced (an internal switch is an error) and a Service that owns another load balancer is an error.",
			apply: func(v string, a *parsedAnnotations) error {
				if v == "" || len(v) > maxIDLength || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
					return errors.New("not a load balancer ID of 1 to 255 printable characters without white space")
				}
				a.loadBalancerID = v
				return nil
			},
		},
		{
			Name: AnnotationKeepOnDelete, check: celBool, same: celSameBool, Values: "true, false", Default: "loadBalancer.keepOnDelete of the cloud config (false)",
			Doc: "When the Service is deleted or stops being of type LoadBalancer, keep the load balancer and its addresses in the cloud: ccmkit removes its ownership tags and targets instead of deleting it, so that a Service can adopt it again with load-balancer-id. While it is true, an internal switch (which replaces the load balancer) is an error. A malformed value holds the deletion until it is fixed.",
			apply: func(v string, a *parsedAnnotations) error {
				keep, err := parseBool(v)
				if err != nil {
					return err
				}
				a.keepOnDelete = &keep
				return nil
			},
		},
		{
			Name: AnnotationShare, check: celName, Values: "a DNS label: lower-case letters, digits and '-', at most 63 characters", Default: "none: the Service has a load balancer of its own",
			Doc: "Share one load balancer, and its addresses, with the other Services of the same namespace that name the same share (of any namespace when the cloud config's loadBalancer.shareAcrossNamespaces is true). Each Service owns its own listeners; everything else (addresses, targets, health check, source ranges, the other annotations' effects) must agree, else the later Service gets a Warning event ShareConflict and is not added, and a port another Service of the share has is not added either. The last Service out deletes the load balancer. Cannot be combined with load-balancer-id.",
			apply: func(v string, a *parsedAnnotations) error {
				if len(v) > maxNameLength || !nameRE.MatchString(v) {
					return errors.New("not a DNS label of at most 63 lower-case letters, digits and '-'")
				}
				a.share = v
				return nil
			},
		},
	}, stickinessAnnotations()...)
}

// annotationNames is the set of the names of annotationTable.
var annotationNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, an := range annotationTable() {
		names[an.Name] = true
	}
	return names
})

// annotationReference returns the reference of ccmkit's own annotations under prefix as a
// Markdown table, the one docs/reference/annotations.md carries (a test checks it).
func annotationReference(prefix string) string {
	as := annotationTable()
	rows := make([][4]string, len(as))
	for i, a := range as {
		rows[i] = [4]string{prefix + a.Name, a.Values, a.Default, a.Doc}
	}
	return referenceTable(rows)
}

// parsePortRef returns the Service port that f (trimmed) names: a number, canonical, or a
// port name.
func parsePortRef(f string) (string, error) {
	f = strings.TrimSpace(f)
	if n, err := strconv.Atoi(f); err == nil {
		if n < 1 || n > 65535 {
			return "", fmt.Errorf("port %d is outside 1-65535", n)
		}
		return strconv.Itoa(n), nil // "080" and "+80" are port 80: compared as numbers
	}
	if msgs := validation.IsValidPortName(f); len(msgs) > 0 {
		return "", fmt.Errorf("%s is neither a port number nor a port name", quote.Value(f))
	}
	return f, nil
}

// checkHostname returns why h cannot be a hostname in a Service's status, or nil: the
// API server's checks (a lower-case RFC 1123 subdomain, not an IP address) and DNS's
// limit of 63 characters per label, which the API server does not check.
func checkHostname(h string) error {
	if net.ParseIP(h) != nil {
		return errors.New("an IP address, not a DNS name")
	}
	if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	for label := range strings.SplitSeq(h, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return fmt.Errorf("the label %s is longer than %d characters", quote.Value(label), validation.DNS1123LabelMaxLength)
		}
	}
	return nil
}
