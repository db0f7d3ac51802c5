package adapter

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/provider"
)

// Config is the `hcloud:` section of the cloud config. Each key may also come from the
// environment variable Hetzner's own cloud-controller-manager read for it (Env): the
// file wins where both set one.
type Config struct {
	// Endpoint is the API's base URL (YAML "endpoint"); empty means the SDK's default,
	// https://api.hetzner.cloud/v1.
	Endpoint string `yaml:"endpoint"`
	// Network is the name or ID of the project's private network (YAML "network"): its
	// routes carry the pod network (Client.Routes answers false without one), and
	// internal load balancers, and all of them with UsePrivateIP, attach to it (an
	// internal one is refused without it).
	Network string `yaml:"network"`
	// Location is where a load balancer is made whose Service sets neither the location
	// nor the network-zone setting (YAML "location", such as fsn1). Empty: such a load
	// balancer is refused.
	Location string `yaml:"location"`
	// UsePrivateIP sends load balancer traffic to the servers' addresses in Network
	// instead of their public ones (YAML "usePrivateIP"); it needs Network.
	UsePrivateIP bool `yaml:"usePrivateIP"`
	// AddressFamily is the family of a Node's public addresses (YAML "addressFamily"), as
	// Hetzner's own CCM chose them: ipv4 (the public IPv4 address), ipv6 (the ::1 of the
	// server's IPv6 network) or dualstack (both). Default: ipv4.
	AddressFamily string `yaml:"addressFamily"`
	// ZoneLabel says whether Nodes get a zone (YAML "zoneLabel"), the legacy datacenter
	// name of the server's location (fsn1-dc14; the location's name for a location
	// without one), as Hetzner's own CCM gave it; the region is the location (fsn1).
	// Default: true. false: no zone, as that CCM with its zone label turned off.
	ZoneLabel *bool `yaml:"zoneLabel"`
}

// The address families of Config.AddressFamily.
const (
	AddressFamilyIPv4      = "ipv4"
	AddressFamilyIPv6      = "ipv6"
	AddressFamilyDualStack = "dualstack"
)

// Validate reports every problem at once: an Endpoint that is not empty or an absolute
// http or https URL, a Network with surrounding white space, UsePrivateIP without a
// Network, an AddressFamily that is none of the three.
func (c *Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.Endpoint); c.Endpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("endpoint: %q is not an absolute http(s) URL", c.Endpoint))
	}
	if c.Network != strings.TrimSpace(c.Network) {
		errs = append(errs, fmt.Errorf("network: %q has surrounding white space", c.Network))
	}
	if c.UsePrivateIP && c.Network == "" {
		errs = append(errs, errors.New("usePrivateIP: needs a network"))
	}
	switch c.AddressFamily {
	case "", AddressFamilyIPv4, AddressFamilyIPv6, AddressFamilyDualStack:
	default:
		errs = append(errs, fmt.Errorf("addressFamily: %q is none of %s, %s and %s", c.AddressFamily, AddressFamilyIPv4, AddressFamilyIPv6, AddressFamilyDualStack))
	}
	return errors.Join(errs...)
}

// publicIPs are the server's public addresses of the configured family.
func (c Config) publicIPs(v4, v6 net.IP) []net.IP {
	switch c.AddressFamily {
	case AddressFamilyIPv6:
		return []net.IP{v6}
	case AddressFamilyDualStack:
		return []net.IP{v4, v6}
	}
	return []net.IP{v4}
}

// hostname is a server's name as its Hostname address, none for no name.
func hostname(name string) []cloudapi.Address {
	if name == "" {
		return nil
	}
	return []cloudapi.Address{{Type: cloudapi.AddressHostname, Address: name}}
}

// zone is the zone of a server in location: its legacy datacenter, none without
// ZoneLabel.
func (c Config) zone(location string) string {
	if c.ZoneLabel != nil && !*c.ZoneLabel {
		return ""
	}
	if dc, ok := datacenters[location]; ok {
		return dc
	}
	return location
}

// datacenters are the legacy datacenter names of the locations that had one, the zones
// Hetzner's own CCM gave their servers' Nodes.
var datacenters = map[string]string{
	"fsn1": "fsn1-dc14", "nbg1": "nbg1-dc3", "hel1": "hel1-dc2", "ash": "ash-dc1", "hil": "hil-dc1", "sin": "sin-dc1",
}

// LabelProvidedBy is the Node label Hetzner's own CCM put on every Node: "cloud" for a
// Hetzner Cloud server (the only kind this adapter serves), "robot" for a dedicated one.
const LabelProvidedBy = "instance.hetzner.cloud/provided-by"

// The environment variables of Hetzner's own cloud-controller-manager that the adapter
// reads (Env).
const (
	EnvToken                              = "HCLOUD_TOKEN"
	EnvTokenFile                          = "HCLOUD_TOKEN_FILE"
	EnvEndpoint                           = "HCLOUD_ENDPOINT"
	EnvNetwork                            = "HCLOUD_NETWORK"
	EnvNetworkRoutesEnabled               = "HCLOUD_NETWORK_ROUTES_ENABLED"
	EnvInstancesAddressFamily             = "HCLOUD_INSTANCES_ADDRESS_FAMILY"
	EnvInstancesZoneLabelEnabled          = "HCLOUD_INSTANCES_ZONE_LABEL_ENABLED"
	EnvLoadBalancersEnabled               = "HCLOUD_LOAD_BALANCERS_ENABLED"
	EnvLoadBalancersLocation              = "HCLOUD_LOAD_BALANCERS_LOCATION"
	EnvLoadBalancersNetworkZone           = "HCLOUD_LOAD_BALANCERS_NETWORK_ZONE"
	EnvLoadBalancersUsePrivateIP          = "HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP"
	EnvLoadBalancersType                  = "HCLOUD_LOAD_BALANCERS_TYPE"
	EnvLoadBalancersAlgorithmType         = "HCLOUD_LOAD_BALANCERS_ALGORITHM_TYPE"
	EnvLoadBalancersDisablePrivateIngress = "HCLOUD_LOAD_BALANCERS_DISABLE_PRIVATE_INGRESS"
	EnvLoadBalancersDisableIPv6           = "HCLOUD_LOAD_BALANCERS_DISABLE_IPV6"
	EnvLoadBalancersDisablePublicNetwork  = "HCLOUD_LOAD_BALANCERS_DISABLE_PUBLIC_NETWORK"
	EnvLoadBalancersHealthCheckInterval   = "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_INTERVAL"
	EnvLoadBalancersHealthCheckTimeout    = "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_TIMEOUT"
	EnvLoadBalancersHealthCheckRetries    = "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_RETRIES"
	EnvLoadBalancersPrivateSubnetIPRange  = "HCLOUD_LOAD_BALANCERS_PRIVATE_SUBNET_IP_RANGE"
	EnvLoadBalancersUsesProxyProtocol     = "HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"
)

// Why a variable has no counterpart.
const (
	noHealthCheckDefault       = "ccmkit has no cluster-wide health check default: set the health-check annotations per Service"
	noNetworkAttachmentDefault = "the network attachment is the hcloud section's network for every load balancer; not per Service yet"
	serviceOnlyDefault         = "set per Service (the annotation); a cluster-wide default would keep a Service from asking for the other of location and network zone"
)

// Env are the environment variables of Hetzner's own cloud-controller-manager, each read
// as the fallback of the cloud config key that does the same, or, without one, logged at
// start as not read (its Doc says why). The cloud config wins where both set a value.
var Env = []provider.EnvFallback{
	{Name: EnvToken, Key: "credentials.token", Doc: "The API token (the `hcloud` Secret's key `token` in Hetzner's chart)."},
	{Name: EnvTokenFile, Key: "credentials.tokenFile", Doc: "A file holding the API token."},
	{Name: EnvEndpoint, Key: "hcloud.endpoint", Doc: "The API's base URL."},
	{Name: EnvNetwork, Key: "hcloud.network", Doc: "The private network, by name or ID."},
	{Name: EnvNetworkRoutesEnabled, Key: "enable.routes", Bool: true, Doc: "Routes on or off (ccmkit's need `routes.clusterCIDRs` too; off by default, where Hetzner's CCM turned them on with a network)."},
	{Name: EnvInstancesAddressFamily, Key: "hcloud.addressFamily", Doc: "ipv4, ipv6 or dualstack."},
	{Name: EnvInstancesZoneLabelEnabled, Key: "hcloud.zoneLabel", Bool: true, Doc: "Whether Nodes get a zone."},
	{Name: EnvLoadBalancersEnabled, Key: "enable.loadBalancers", Bool: true, Doc: "Load balancers on or off."},
	{Name: EnvLoadBalancersLocation, Key: "hcloud.location", Doc: "Where a new load balancer goes unless its Service says."},
	{Name: EnvLoadBalancersUsePrivateIP, Key: "hcloud.usePrivateIP", Bool: true, Doc: "Targets by their address in the network."},
	{Name: EnvLoadBalancersType, Key: "loadBalancer.settings." + SettingType, Doc: "The default load balancer type, applied to every load balancer whose Service sets none (as that CCM did)."},
	{Name: EnvLoadBalancersAlgorithmType, Key: "loadBalancer.settings." + SettingAlgorithm, Doc: "The default algorithm, applied to every load balancer whose Service sets none (as that CCM did)."},
	{Name: EnvLoadBalancersNetworkZone, Doc: "No counterpart: the network zone is " + serviceOnlyDefault + "; set the default location (`hcloud.location`) instead."},
	{Name: EnvLoadBalancersDisablePrivateIngress, Doc: "No counterpart: " + noNetworkAttachmentDefault + "."},
	{Name: EnvLoadBalancersPrivateSubnetIPRange, Doc: "No counterpart: " + noNetworkAttachmentDefault + "."},
	{Name: EnvLoadBalancersDisableIPv6, Doc: "No counterpart: every Hetzner load balancer has an IPv6 address and ccmkit publishes both."},
	{Name: EnvLoadBalancersDisablePublicNetwork, Doc: "No counterpart: a load balancer is internal by its Service's annotation only."},
	{Name: EnvLoadBalancersUsesProxyProtocol, Doc: "No counterpart: the PROXY protocol is set per Service (the proxy-protocol annotation)."},
	{Name: EnvLoadBalancersHealthCheckInterval, Doc: "No counterpart: " + noHealthCheckDefault + "."},
	{Name: EnvLoadBalancersHealthCheckTimeout, Doc: "No counterpart: " + noHealthCheckDefault + "."},
	{Name: EnvLoadBalancersHealthCheckRetries, Doc: "No counterpart: " + noHealthCheckDefault + "."},
}
