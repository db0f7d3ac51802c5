package adapter

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/provider"
)

// Shape is what Hetzner's load balancers do not keep of a cloudapi.LoadBalancerSpec (a
// service has no name, a health check one threshold, retries; every load balancer serves
// IPv4 and IPv6), do not support (UDP and SCTP, TLS termination to TCP, source ranges, a
// requested public address, session affinity: by client IP, and by cookie, which its HTTP
// services have but the adapter does not build) and keep per service (the health
// check, a port's own too, and the PROXY protocol), with a health check's interval and timeout in whole
// seconds.
var Shape = cloudapi.LoadBalancerShape{
	NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames, cloudapi.FeatureHealthyThreshold, cloudapi.FeatureIPFamilies},
	Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureSCTP, cloudapi.FeatureTLS,
		cloudapi.FeatureSourceRanges, cloudapi.FeatureRequestedIPs, cloudapi.FeatureSessionAffinity, cloudapi.FeatureCookieAffinity},
	PerListener:     []cloudapi.Feature{cloudapi.FeatureHealthCheck, cloudapi.FeatureListenerHealthCheck, cloudapi.FeatureProxyProtocol},
	HealthCheckUnit: time.Second,
}

// Options are the provider options the adapter registers with: its name, settings, shape
// and aliases, and the Node label and environment variables of Hetzner's own CCM. A
// program that assembles the provider itself with provider.New (with a clock or a metrics
// registry of its own) starts from them.
func Options() provider.Options {
	return provider.Options{ProviderName: ProviderName, LoadBalancerSettings: Settings, LoadBalancerShape: Shape, LoadBalancerAliases: Aliases,
		NodeLabels: map[string]string{LabelProvidedBy: "cloud"}, EnvFallbacks: Env}
}

// The load balancer settings the adapter declares (annotations under ccmkit's prefix).
const (
	SettingType        = "type"
	SettingAlgorithm   = "algorithm"
	SettingLocation    = "location"
	SettingNetworkZone = "network-zone"
)

// Settings are Hetzner's own load balancer settings.
var Settings = loadbalancer.Settings{
	// type and algorithm have no default: a new load balancer is lb11 with round_robin
	// (the create's), and one whose Service drops the annotation keeps what it has (a
	// default would change an adopted lb31 to lb11, which may not hold its targets).
	{Name: SettingType, Parse: parseName, Allowed: "a load balancer type, such as lb11, lb21 or lb31",
		Doc: "The Hetzner load balancer type (a new one is lb11); changed in place when annotated."},
	{Name: SettingAlgorithm, Values: []string{"round_robin", "least_connections"},
		Doc: "How the load balancer picks a target (a new one uses round_robin); changed in place when annotated."},
	// location and network zone exclude each other: a default of one in the cloud config's
	// loadBalancer.settings would stop a Service from asking for the other.
	{Name: SettingLocation, Parse: parseName, Allowed: "a location, such as fsn1, nbg1 or hel1", Replace: true, ServiceOnly: serviceOnly,
		Doc: "Where the load balancer runs (set this or network-zone, not both); only a new load balancer changes it."},
	{Name: SettingNetworkZone, Parse: parseName, Allowed: "a network zone, such as eu-central", Replace: true, ServiceOnly: serviceOnly,
		Doc: "The network zone the load balancer runs in when no location is set; only a new load balancer changes it."},
}

// serviceOnly says why location and network zone are not defaults in loadBalancer.settings,
// and where the default location goes instead.
const serviceOnly = "a default location or network zone would be merged into every Service's, so that a Service could not ask for the other; " +
	"set the default location in the hcloud section's location instead"

// LegacyPrefix is the annotation prefix of Hetzner's own cloud-controller-manager.
const LegacyPrefix = "load-balancer.hetzner.cloud/"

// LabelServiceUID is the label Hetzner's own cloud-controller-manager puts on each load
// balancer it made or found for a Service, its value the Service's UID: the mark by which
// ccmkit takes such a load balancer over (Aliases.OwnerTag). The label codec
// (cloudapi.HetznerLabelRules) carries the tag as this very label.
const LabelServiceUID = "hcloud-ccm/service-uid"

// Aliases keep the annotations of Hetzner's own cloud-controller-manager working: each
// key stands for ccmkit's annotation or the adapter's setting that does the same. The
// others under LegacyPrefix (README.md says why each is left out) are reported as
// unknown, never silently ignored. A Service with a legacy key reads the health check's
// defaults Hetzner's CCM left to the API (interval 15 s, timeout 10 s, 3 retries); the
// load balancer that CCM labelled LabelServiceUID for a Service is taken over.
var Aliases = loadbalancer.Aliases{
	Prefixes: []string{LegacyPrefix},
	Defaults: map[string]string{
		loadbalancer.AnnotationHealthCheckInterval:           "15s",
		loadbalancer.AnnotationHealthCheckTimeout:            "10s",
		loadbalancer.AnnotationHealthCheckUnhealthyThreshold: "3",
	},
	OwnerTag: LabelServiceUID,
	Keys: []loadbalancer.Alias{
		{Key: LegacyPrefix + "name", Name: loadbalancer.AnnotationName},
		{Key: LegacyPrefix + "disable-public-network", Name: loadbalancer.AnnotationInternal},
		{Key: LegacyPrefix + "hostname", Name: loadbalancer.AnnotationHostname},
		{Key: LegacyPrefix + "protocol", Name: loadbalancer.AnnotationProtocol},
		{Key: LegacyPrefix + "uses-proxyprotocol", Name: loadbalancer.AnnotationProxyProtocol},
		{Key: LegacyPrefix + "node-selector", Name: loadbalancer.AnnotationNodeSelector},
		{Key: LegacyPrefix + "http-certificates", Name: loadbalancer.AnnotationTLSCertificates, Convert: certificateIDs,
			Allowed: "comma-separated certificate IDs (names are not supported: `hcloud certificate list` shows the IDs)"},
		{Key: LegacyPrefix + "health-check-protocol", Name: loadbalancer.AnnotationHealthCheckProtocol},
		{Key: LegacyPrefix + "health-check-port", Name: loadbalancer.AnnotationHealthCheckPort},
		{Key: LegacyPrefix + "health-check-interval", Name: loadbalancer.AnnotationHealthCheckInterval},
		{Key: LegacyPrefix + "health-check-timeout", Name: loadbalancer.AnnotationHealthCheckTimeout},
		{Key: LegacyPrefix + "health-check-retries", Name: loadbalancer.AnnotationHealthCheckUnhealthyThreshold},
		{Key: LegacyPrefix + "health-check-http-path", Name: loadbalancer.AnnotationHealthCheckPath},
		{Key: LegacyPrefix + "type", Name: SettingType},
		{Key: LegacyPrefix + "algorithm-type", Name: SettingAlgorithm},
		{Key: LegacyPrefix + "location", Name: SettingLocation},
		{Key: LegacyPrefix + "network-zone", Name: SettingNetworkZone},
	},
}

// certificateIDs checks that a legacy certificate list names certificates by ID: the
// adapter does not look names up.
func certificateIDs(v string) (string, error) {
	for ref := range strings.SplitSeq(v, ",") {
		if ref = strings.TrimSpace(ref); !idRE.MatchString(ref) {
			return "", fmt.Errorf("%q is not a certificate ID: name certificates by their IDs (hcloud certificate list)", ref)
		}
	}
	return v, nil
}

var idRE = regexp.MustCompile(`^[1-9][0-9]*$`)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// parseName checks a Hetzner name (of a type, a location, a network zone).
func parseName(v string) (string, error) {
	if v = strings.ToLower(v); !nameRE.MatchString(v) {
		return "", fmt.Errorf("%q is not a Hetzner name (lower-case letters, digits and '-')", v)
	}
	return v, nil
}
