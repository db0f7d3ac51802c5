package adapter

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// Shape is what Hetzner's load balancers do not keep of a cloudapi.LoadBalancerSpec (a
// service has no name, a health check one threshold, retries; every load balancer serves
// IPv4 and IPv6) and do not support (UDP and SCTP, TLS termination to TCP, source ranges,
// a requested public address, client-IP session affinity).
var Shape = cloudapi.LoadBalancerShape{
	NotKept: []cloudapi.Feature{cloudapi.FeatureListenerNames, cloudapi.FeatureHealthyThreshold, cloudapi.FeatureIPFamilies},
	Unsupported: []cloudapi.Feature{cloudapi.FeatureUDP, cloudapi.FeatureSCTP, cloudapi.FeatureTLS,
		cloudapi.FeatureSourceRanges, cloudapi.FeatureRequestedIPs, cloudapi.FeatureSessionAffinity},
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
	{Name: SettingType, Parse: parseName, Allowed: "a load balancer type, such as lb11, lb21 or lb31", Default: "lb11",
		Doc: "The Hetzner load balancer type; changed in place."},
	{Name: SettingAlgorithm, Values: []string{"round_robin", "least_connections"}, Default: "round_robin",
		Doc: "How the load balancer picks a target; changed in place."},
	{Name: SettingLocation, Parse: parseName, Allowed: "a location, such as fsn1, nbg1 or hel1", Replace: true,
		Doc: "Where the load balancer runs (set this or network-zone, not both); only a new load balancer changes it."},
	{Name: SettingNetworkZone, Parse: parseName, Allowed: "a network zone, such as eu-central", Replace: true,
		Doc: "The network zone the load balancer runs in when no location is set; only a new load balancer changes it."},
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// parseName checks a Hetzner name (of a type, a location, a network zone).
func parseName(v string) (string, error) {
	if v = strings.ToLower(v); !nameRE.MatchString(v) {
		return "", fmt.Errorf("%q is not a Hetzner name (lower-case letters, digits and '-')", v)
	}
	return v, nil
}
