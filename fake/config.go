package fake

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/strictyaml"
)

// SectionName is the cloud config's key of the fake cloud's section (`fake:`) and the name
// of the fake cloud as a backend (the config's `backend: fake`).
const SectionName = "fake"

// Defaults of Config, applied by SetDefaults.
const (
	// DefaultPageSize is the most items a List call returns in one page when
	// Config.PageSize is zero.
	DefaultPageSize = 100
	// DefaultRegion is the region of a cloud whose Config.Region is empty.
	DefaultRegion = "fake-1"
)

// The address pools of a cloud whose Config.AddressPools are empty. They are documentation
// ranges (RFC 5737, RFC 3849) and private ranges, so nothing a demo prints is routable.
var (
	DefaultPublicIPv4   = []string{"203.0.113.0/24", "198.51.100.0/24"}
	DefaultPublicIPv6   = []string{"2001:db8:1::/64"}
	DefaultInternalIPv4 = []string{"10.200.0.0/16"}
	DefaultInternalIPv6 = []string{"fd00:200::/64"}
)

// Config describes a fake cloud. It is what the `fake:` section of a cloud config decodes
// into, and what Go tests build directly. The zero Config is a valid, empty cloud with the
// defaults documented on each field.
type Config struct {
	// Region is the region of every instance that names none. Default DefaultRegion.
	Region string `yaml:"region"`
	// PageSize is the most items one List call returns: the page size when the caller asks
	// for none, and the cap on a larger request, as real clouds cap their pages. Default
	// DefaultPageSize.
	PageSize int `yaml:"pageSize"`
	// RoutePageSize is the most routes one ListRoutes returns. Zero, the default, answers
	// with the whole route table when the caller asks for no page size, as the clouds that
	// read a route table as one object do (AWS, Azure); a cloud with paged routes (GCE)
	// sets it.
	RoutePageSize int `yaml:"routePageSize"`
	// Provisioning says how long a new load balancer stays in status provisioning.
	Provisioning Provisioning `yaml:"provisioning"`
	// AddressPools are the ranges load balancer addresses are allocated from.
	AddressPools AddressPools `yaml:"addressPools"`
	// Hostnames gives load balancers DNS names, as the clouds whose load balancers are
	// reached by name do. Default: none.
	Hostnames Hostnames `yaml:"hostnames"`
	// Capabilities switches off the optional APIs, to test a cloud without them.
	Capabilities Capabilities `yaml:"capabilities"`
	// Instances are the cloud's instances at start. With a StateFile they are the
	// instances of a new cloud; at a later start, the instances added, changed or removed
	// here since the previous start are added, replaced or removed, and the others are as
	// the file holds them.
	Instances []Instance `yaml:"instances"`
	// StateFile is a file that keeps the cloud's state across restarts: load balancers,
	// routes, instances, address pool cursors and ID sequences. Open reads it (a missing
	// file is a new cloud) and every write is saved to it before it succeeds. A relative
	// path is relative to the process's working directory. Empty, the default: the cloud
	// lives as long as the process. Only Open uses it; New refuses it.
	StateFile string `yaml:"stateFile"`
}

// Provisioning says when a new load balancer becomes active: after both Reads reads of it
// (GetLoadBalancer calls, and List pages that contain it) and Duration since its creation
// on the cloud's clock. Both zero: it is active as soon as it is created.
type Provisioning struct {
	// Reads is how many reads answer status provisioning before the load balancer is active.
	Reads int `yaml:"reads"`
	// Duration is how long after its creation the load balancer is active, as a Go
	// duration ("30s"). Measured on the clock given with WithClock.
	Duration time.Duration `yaml:"duration"`
}

// AddressPools are the CIDRs that load balancer addresses come from: Public for load
// balancers with Internal false, Internal for the others.
type AddressPools struct {
	// Public pools. Default DefaultPublicIPv4 and DefaultPublicIPv6 when both families
	// are empty.
	Public Pool `yaml:"public"`
	// Internal pools. Default DefaultInternalIPv4 and DefaultInternalIPv6 when both
	// families are empty.
	Internal Pool `yaml:"internal"`
}

// Pool is a set of CIDRs per IP family. A load balancer of a family whose pool is empty
// cannot be created (ErrInvalidRequest).
type Pool struct {
	// IPv4 CIDRs, for example 203.0.113.0/24.
	IPv4 []string `yaml:"ipv4"`
	// IPv6 CIDRs, for example 2001:db8::/64.
	IPv6 []string `yaml:"ipv6"`
}

// Hostnames makes the cloud give every load balancer the DNS name "<ID>.<Domain>" when it
// is created, reported in cloudapi.LoadBalancer.Hostname.
type Hostnames struct {
	// Domain is the DNS domain of the hostnames, for example lb.example.com. Empty, the
	// default, gives no hostnames.
	Domain string `yaml:"domain"`
	// WithoutAddresses gives load balancers their hostname and no address, as AWS's are:
	// a spec with requested addresses is then refused (ErrInvalidRequest). It needs
	// Domain. Default false: a hostname and addresses.
	WithoutAddresses bool `yaml:"withoutAddresses"`
}

// Capabilities switches the optional parts of the cloud API. Nil means enabled, but for
// TargetGroups.
type Capabilities struct {
	// LoadBalancers false makes Cloud.LoadBalancers return (nil, false).
	LoadBalancers *bool `yaml:"loadBalancers"`
	// Routes false makes Cloud.Routes return (nil, false).
	Routes *bool `yaml:"routes"`
	// TLS false makes the load balancers refuse listeners that terminate TLS
	// (cloudapi.AppProtocolTLS and AppProtocolHTTPS) with ErrInvalidRequest, as a cloud
	// of network load balancers does.
	TLS *bool `yaml:"tls"`
	// HTTP false makes the load balancers refuse HTTP listeners (cloudapi.AppProtocolHTTP
	// and AppProtocolHTTPS) with ErrInvalidRequest.
	HTTP *bool `yaml:"http"`
	// TargetGroups true gives the cloud target groups (Cloud.TargetGroups, a
	// cloudapi.TargetGroupClient) that load balancers name in
	// cloudapi.LoadBalancerSpec.TargetGroup. Unlike the others it is off unless set:
	// false or nil, TargetGroups returns (nil, false) and a spec that names a group is
	// refused with ErrInvalidRequest.
	TargetGroups *bool `yaml:"targetGroups"`
	// TaglessRoutes true makes the routes carry no tags, as Hetzner's network routes:
	// the route API declares it (cloudapi.TaglessRouteAPI), CreateRoute drops the spec's
	// tags and a list with a tag filter selects none. Default false.
	TaglessRoutes bool `yaml:"taglessRoutes"`
}

// Instance is an instance as a Config describes it.
type Instance struct {
	// ID is the instance's cloud ID. Required and unique.
	ID string `yaml:"id"`
	// Name is the instance's name, usually its hostname and Node name.
	Name string `yaml:"name"`
	// Type is the instance type, for example m5.large.
	Type string `yaml:"type"`
	// Zone is the instance's zone.
	Zone string `yaml:"zone"`
	// Region is the instance's region. Default Config.Region.
	Region string `yaml:"region"`
	// Addresses are the instance's addresses.
	Addresses []Address `yaml:"addresses"`
	// State is the instance's state. Default running.
	State cloudapi.InstanceState `yaml:"state"`
	// Tags are the instance's tags.
	Tags map[string]string `yaml:"tags"`
}

// Address is an address of an Instance.
type Address struct {
	// Type is InternalIP, ExternalIP, Hostname, InternalDNS or ExternalDNS.
	Type cloudapi.AddressType `yaml:"type"`
	// Address is the address: an IP for the IP types, a DNS name for the others.
	Address string `yaml:"address"`
}

// ParseConfig decodes a YAML document into a Config strictly: a key Config does not have
// is an error that names it and its line. It does not validate; call Validate.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	node, err := strictyaml.Parse(data)
	if err != nil {
		return cfg, fmt.Errorf("fake cloud config: %w", err)
	}
	if node == nil {
		return cfg, nil
	}
	if err := strictyaml.Decode(node, "", &cfg); err != nil {
		return cfg, fmt.Errorf("fake cloud config: %w", err)
	}
	return cfg, nil
}

// SetDefaults fills the fields left empty with their documented defaults.
func (c *Config) SetDefaults() {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if len(c.AddressPools.Public.IPv4) == 0 && len(c.AddressPools.Public.IPv6) == 0 {
		c.AddressPools.Public = Pool{IPv4: DefaultPublicIPv4, IPv6: DefaultPublicIPv6}
	}
	if len(c.AddressPools.Internal.IPv4) == 0 && len(c.AddressPools.Internal.IPv6) == 0 {
		c.AddressPools.Internal = Pool{IPv4: DefaultInternalIPv4, IPv6: DefaultInternalIPv6}
	}
}

// Validate reports every problem of the config at once. Empty fields that have defaults
// are not problems.
func (c *Config) Validate() error {
	var errs []error
	if c.PageSize < 0 {
		errs = append(errs, fmt.Errorf("pageSize: %d is negative", c.PageSize))
	}
	if c.RoutePageSize < 0 {
		errs = append(errs, fmt.Errorf("routePageSize: %d is negative", c.RoutePageSize))
	}
	if c.Provisioning.Reads < 0 {
		errs = append(errs, fmt.Errorf("provisioning.reads: %d is negative", c.Provisioning.Reads))
	}
	if c.Provisioning.Duration < 0 {
		errs = append(errs, fmt.Errorf("provisioning.duration: %s is negative", c.Provisioning.Duration))
	}
	if d := c.Hostnames.Domain; d != "" {
		// The longest hostname is that of load balancer lb-999999.
		msgs := validation.IsDNS1123Subdomain("lb-999999." + d)
		for label := range strings.SplitSeq(d, ".") {
			msgs = append(msgs, validation.IsDNS1123Label(label)...)
		}
		if len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("hostnames.domain: %q does not make DNS names of load balancers: %s", d, strings.Join(msgs, "; ")))
		}
	} else if c.Hostnames.WithoutAddresses {
		errs = append(errs, errors.New("hostnames.withoutAddresses: load balancers without addresses need hostnames: set hostnames.domain"))
	}
	errs = append(errs, validatePool("addressPools.public", c.AddressPools.Public)...)
	errs = append(errs, validatePool("addressPools.internal", c.AddressPools.Internal)...)

	ids := make(map[string]int, len(c.Instances))
	for i, inst := range c.Instances {
		path := fmt.Sprintf("instances[%d]", i)
		if inst.ID == "" {
			errs = append(errs, fmt.Errorf("%s.id: required", path))
		} else if prev, dup := ids[inst.ID]; dup {
			errs = append(errs, fmt.Errorf("%s.id: %q is also the id of instances[%d]", path, inst.ID, prev))
		} else {
			ids[inst.ID] = i
		}
		if inst.State != "" && !inst.State.Valid() {
			errs = append(errs, fmt.Errorf("%s.state: %q is not one of pending, running, stopping, stopped, terminating, terminated, unknown", path, inst.State))
		}
		for j, a := range inst.Addresses {
			if err := validateAddress(cloudapi.Address{Type: a.Type, Address: a.Address}); err != nil {
				errs = append(errs, fmt.Errorf("%s.addresses[%d]: %w", path, j, err))
			}
		}
	}
	return errors.Join(errs...)
}

func validatePool(path string, p Pool) []error {
	var errs []error
	check := func(family string, cidrs []string, want6 bool) {
		for i, s := range cidrs {
			pfx, err := netip.ParsePrefix(s)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s.%s[%d]: %q is not a CIDR", path, family, i, s))
			case pfx.Addr().Is6() != want6:
				errs = append(errs, fmt.Errorf("%s.%s[%d]: %q is not an %s CIDR", path, family, i, s, family))
			case pfx.Masked() != pfx:
				errs = append(errs, fmt.Errorf("%s.%s[%d]: %q has host bits set; write %s", path, family, i, s, pfx.Masked()))
			case usableAddresses(pfx) == 0:
				errs = append(errs, fmt.Errorf("%s.%s[%d]: %q has no usable addresses", path, family, i, s))
			}
		}
	}
	check("ipv4", p.IPv4, false)
	check("ipv6", p.IPv6, true)
	return errs
}

func validateAddress(a cloudapi.Address) error {
	if !a.Type.Valid() {
		return fmt.Errorf("type %q is not one of InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS", a.Type)
	}
	if a.Address == "" {
		return errors.New("address: required")
	}
	if a.Type == cloudapi.AddressInternalIP || a.Type == cloudapi.AddressExternalIP {
		if _, err := netip.ParseAddr(a.Address); err != nil {
			return fmt.Errorf("address %q of type %s is not an IP address", a.Address, a.Type)
		}
	}
	return nil
}

func (c *Config) loadBalancersEnabled() bool {
	return c.Capabilities.LoadBalancers == nil || *c.Capabilities.LoadBalancers
}

func (c *Config) targetGroupsEnabled() bool {
	return c.Capabilities.TargetGroups != nil && *c.Capabilities.TargetGroups
}

func (c *Config) routesTagless() bool { return c.Capabilities.TaglessRoutes }

func (c *Config) routesEnabled() bool {
	return c.Capabilities.Routes == nil || *c.Capabilities.Routes
}

// lacks says why the cloud's load balancers do not offer application protocol p, or "".
func (c *Config) lacks(p cloudapi.AppProtocol) string {
	off := func(b *bool) bool { return b != nil && !*b }
	switch {
	case p.TerminatesTLS() && off(c.Capabilities.TLS):
		return "this cloud's load balancers do not terminate TLS (capabilities.tls is false)"
	case (p == cloudapi.AppProtocolHTTP || p == cloudapi.AppProtocolHTTPS) && off(c.Capabilities.HTTP):
		return "this cloud's load balancers do not speak HTTP (capabilities.http is false)"
	}
	return ""
}

// cloudInstance converts a configured instance into the cloud's record of it.
func (c *Config) cloudInstance(in Instance) cloudapi.Instance {
	out := cloudapi.Instance{
		ID:     in.ID,
		Name:   in.Name,
		Type:   in.Type,
		Zone:   in.Zone,
		Region: in.Region,
		State:  in.State,
		Tags:   in.Tags,
	}
	if out.Region == "" {
		out.Region = c.Region
	}
	if out.State == "" {
		out.State = cloudapi.InstanceRunning
	}
	for _, a := range in.Addresses {
		out.Addresses = append(out.Addresses, cloudapi.Address{Type: a.Type, Address: a.Address})
	}
	return out.Clone()
}
