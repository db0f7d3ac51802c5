package cloudapi

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Protocol is the transport protocol of a listener.
type Protocol string

// The listener protocols. They match the Kubernetes Service port protocols.
const (
	// ProtocolTCP is TCP.
	ProtocolTCP Protocol = "TCP"
	// ProtocolUDP is UDP.
	ProtocolUDP Protocol = "UDP"
	// ProtocolSCTP is SCTP.
	ProtocolSCTP Protocol = "SCTP"
)

// Valid reports whether p is one of the defined protocols.
func (p Protocol) Valid() bool {
	return p == ProtocolTCP || p == ProtocolUDP || p == ProtocolSCTP
}

// IPFamily is an IP address family.
type IPFamily string

// The IP families. They match the Kubernetes IPFamily values.
const (
	// IPv4 is the IPv4 family.
	IPv4 IPFamily = "IPv4"
	// IPv6 is the IPv6 family.
	IPv6 IPFamily = "IPv6"
)

// Valid reports whether f is one of the defined families.
func (f IPFamily) Valid() bool { return f == IPv4 || f == IPv6 }

// AppProtocol is what a listener speaks above its transport protocol, where the load
// balancer takes part in it.
type AppProtocol string

// The application protocols.
const (
	// AppProtocolNone, the zero value, forwards the transport protocol's bytes as they
	// come (a network load balancer).
	AppProtocolNone AppProtocol = ""
	// AppProtocolTLS terminates TLS with the listener's Certificates and forwards the
	// plain TCP stream inside it to the targets.
	AppProtocolTLS AppProtocol = "TLS"
	// AppProtocolHTTP speaks HTTP with the clients and forwards HTTP requests to the
	// targets.
	AppProtocolHTTP AppProtocol = "HTTP"
	// AppProtocolHTTPS terminates TLS with the listener's Certificates, speaks HTTP inside
	// it, and forwards plain HTTP requests to the targets.
	AppProtocolHTTPS AppProtocol = "HTTPS"
)

// Valid reports whether p is one of the defined application protocols.
func (p AppProtocol) Valid() bool {
	return p == AppProtocolNone || p == AppProtocolTLS || p == AppProtocolHTTP || p == AppProtocolHTTPS
}

// TerminatesTLS reports whether a listener of application protocol p terminates TLS, and
// so presents certificates.
func (p AppProtocol) TerminatesTLS() bool { return p == AppProtocolTLS || p == AppProtocolHTTPS }

// SessionAffinity is how a load balancer pins a client's connections to targets.
type SessionAffinity string

// The session affinities.
const (
	// SessionAffinityNone, the zero value, lets every connection go to any target.
	SessionAffinityNone SessionAffinity = ""
	// SessionAffinityClientIP sends every connection from one client IP address to the
	// same target, until LoadBalancerSpec.SessionAffinityTimeout has passed since that
	// client's last connection. It matches the Kubernetes Service's sessionAffinity
	// ClientIP.
	SessionAffinityClientIP SessionAffinity = "ClientIP"
	// SessionAffinityCookie sends every HTTP request that carries the cookie
	// LoadBalancerSpec.SessionAffinityCookieName to the target that set it: the load
	// balancer sets the cookie on the first response of a listener of AppProtocol HTTP or
	// HTTPS, for LoadBalancerSpec.SessionAffinityTimeout. It needs such a listener; the
	// others are not pinned.
	SessionAffinityCookie SessionAffinity = "Cookie"
)

// Valid reports whether a is one of the defined session affinities.
func (a SessionAffinity) Valid() bool {
	return a == SessionAffinityNone || a == SessionAffinityClientIP || a == SessionAffinityCookie
}

// Listener forwards one frontend port of a load balancer to a port on the targets.
// A load balancer has at most one listener per (Protocol, Port).
type Listener struct {
	// Name is an optional human-readable name, usually the Service port's name.
	Name string
	// Protocol is the transport protocol.
	Protocol Protocol
	// Port is the frontend port on the load balancer's addresses.
	Port int32
	// TargetPort is the port on every target instance (the Service's node port).
	TargetPort int32
	// AppProtocol is what the listener speaks above Protocol. Only a TCP listener has
	// another than AppProtocolNone.
	AppProtocol AppProtocol
	// Certificates are the cloud's references (IDs, names, ARNs: opaque to ccmkit) of the
	// certificates a listener that terminates TLS presents, the default one first; a
	// cloud with SNI picks among the others by the name the client asks for. At least one
	// when AppProtocol.TerminatesTLS(), none otherwise.
	Certificates []string
	// HealthCheck is the listener's own health check, in place of the load balancer's
	// (LoadBalancerSpec.HealthCheck); nil means the load balancer's. Only a cloud whose
	// shape declares FeatureListenerHealthCheck builds one (LoadBalancerShape.Check).
	HealthCheck *HealthCheck
}

// Clone returns a deep copy of the listener.
func (l Listener) Clone() Listener {
	l.Certificates = slices.Clone(l.Certificates)
	l.HealthCheck = l.HealthCheck.clone()
	return l
}

// Equal reports whether l and o are the same listener, certificates in the same order.
func (l Listener) Equal(o Listener) bool {
	return l.Name == o.Name && l.Protocol == o.Protocol && l.Port == o.Port && l.TargetPort == o.TargetPort &&
		l.AppProtocol == o.AppProtocol && slices.Equal(l.Certificates, o.Certificates) && equalHealthChecks(l.HealthCheck, o.HealthCheck)
}

// Key returns what identifies the listener inside its load balancer: its protocol and port.
func (l Listener) Key() ListenerKey { return ListenerKey{Protocol: l.Protocol, Port: l.Port} }

// ListenerKey identifies a listener inside its load balancer.
type ListenerKey struct {
	// Protocol is the listener's transport protocol.
	Protocol Protocol
	// Port is the listener's frontend port.
	Port int32
}

// HealthCheckProtocol is how a health check probes a target.
type HealthCheckProtocol string

// The health check protocols.
const (
	// HealthCheckTCP opens a TCP connection.
	HealthCheckTCP HealthCheckProtocol = "TCP"
	// HealthCheckHTTP sends an HTTP GET to Path and expects a 2xx answer.
	HealthCheckHTTP HealthCheckProtocol = "HTTP"
	// HealthCheckHTTPS sends an HTTPS GET to Path and expects a 2xx answer.
	HealthCheckHTTPS HealthCheckProtocol = "HTTPS"
)

// Valid reports whether p is one of the defined health check protocols.
func (p HealthCheckProtocol) Valid() bool {
	return p == HealthCheckTCP || p == HealthCheckHTTP || p == HealthCheckHTTPS
}

// HealthCheck says how the load balancer decides that a target can take traffic.
type HealthCheck struct {
	// Protocol is how the target is probed.
	Protocol HealthCheckProtocol
	// Port is the port probed on every target.
	Port int32
	// Path is the HTTP path for HTTP and HTTPS checks; empty for TCP.
	Path string
	// Interval is the time between two probes.
	Interval time.Duration
	// Timeout is how long one probe may take.
	Timeout time.Duration
	// HealthyThreshold is how many probes in a row must pass before a target takes traffic.
	HealthyThreshold int32
	// UnhealthyThreshold is how many probes in a row must fail before a target is taken
	// out of service.
	UnhealthyThreshold int32
}

// clone returns a copy of hc, nil for nil.
func (hc *HealthCheck) clone() *HealthCheck {
	if hc == nil {
		return nil
	}
	c := *hc
	return &c
}

// LoadBalancerSpec is everything a caller decides about a load balancer. CreateLoadBalancer
// takes it; UpdateLoadBalancer makes a load balancer match it.
type LoadBalancerSpec struct {
	// Name is the load balancer's name in the cloud. It is for humans and the cloud's
	// uniqueness rules; ccmkit finds its load balancers by Tags, never by name.
	Name string
	// Internal is true for a load balancer reachable only from inside the cloud network.
	Internal bool
	// Listeners are the frontend ports, at most one per (Protocol, Port).
	Listeners []Listener
	// Targets are the IDs of the instances that receive traffic. The order carries no
	// meaning; an empty list is valid and leaves the load balancer without backends.
	Targets []string
	// TargetGroup is the ID of a target group (TargetGroupAPI) whose members receive
	// traffic, instead of Targets, which must then be empty. Empty means none. A cloud
	// without target groups refuses a spec that names one with ErrInvalidRequest, as does
	// a cloud that has no group with that ID.
	TargetGroup string
	// HealthCheck probes the targets; nil means the cloud's default. A listener with a
	// health check of its own (Listener.HealthCheck) has that one instead.
	HealthCheck *HealthCheck
	// SourceRanges are the CIDRs allowed to connect; empty means everyone.
	SourceRanges []string
	// ProxyProtocol is true when the load balancer prepends a PROXY protocol header to
	// every connection it forwards.
	ProxyProtocol bool
	// IPFamilies are the address families the load balancer serves, primary first. Empty
	// means IPv4 only.
	IPFamilies []IPFamily
	// RequestedIPs are the addresses the caller wants, at most one per family. Empty means
	// the cloud picks.
	RequestedIPs []string
	// SessionAffinity pins a client's connections to one target; SessionAffinityNone (the
	// zero value) does not.
	SessionAffinity SessionAffinity
	// SessionAffinityTimeout is how long a pin lasts: a SessionAffinityClientIP pin
	// after the client's last connection, a SessionAffinityCookie pin the cookie's
	// lifetime; zero with SessionAffinityNone.
	SessionAffinityTimeout time.Duration
	// SessionAffinityCookieName is the name of a SessionAffinityCookie pin's cookie (an
	// RFC 6265 token); empty with every other session affinity.
	SessionAffinityCookieName string
	// SettingValues are the values of the adapter's own settings (package loadbalancer's
	// Settings declare them): name to value, each value canonical and allowed by its
	// declaration. Nil or empty means none. A backend keeps every setting exactly as given, or refuses a spec
	// with one it does not know or cannot build with ErrInvalidRequest; it never drops one.
	SettingValues map[string]string
	// Tags are key/value labels stored with the load balancer; ccmkit records its
	// ownership (cluster, Service) in them.
	Tags map[string]string
}

// Clone returns a deep copy of the spec.
func (s LoadBalancerSpec) Clone() LoadBalancerSpec {
	s.Listeners = cloneListeners(s.Listeners)
	s.Targets = slices.Clone(s.Targets)
	s.HealthCheck = s.HealthCheck.clone()
	s.SourceRanges = slices.Clone(s.SourceRanges)
	s.IPFamilies = slices.Clone(s.IPFamilies)
	s.RequestedIPs = slices.Clone(s.RequestedIPs)
	s.SettingValues = maps.Clone(s.SettingValues)
	s.Tags = maps.Clone(s.Tags)
	return s
}

// ListenerHealthCheck returns the health check of l, a listener of s: its own, else the
// load balancer's.
func (s LoadBalancerSpec) ListenerHealthCheck(l Listener) *HealthCheck {
	if l.HealthCheck != nil {
		return l.HealthCheck
	}
	return s.HealthCheck
}

// cloneListeners returns a deep copy of ls.
func cloneListeners(ls []Listener) []Listener {
	ls = slices.Clone(ls)
	for i, l := range ls {
		ls[i] = l.Clone()
	}
	return ls
}

// LoadBalancerStatus is the provisioning state of a load balancer.
type LoadBalancerStatus string

// The load balancer states.
const (
	// LoadBalancerProvisioning is a load balancer that the cloud is still building; its
	// addresses may not be known yet.
	LoadBalancerProvisioning LoadBalancerStatus = "provisioning"
	// LoadBalancerActive is a load balancer that serves traffic on its addresses.
	LoadBalancerActive LoadBalancerStatus = "active"
	// LoadBalancerError is a load balancer that the cloud failed to build or update.
	LoadBalancerError LoadBalancerStatus = "error"
	// LoadBalancerDeleting is a load balancer that is being deleted.
	LoadBalancerDeleting LoadBalancerStatus = "deleting"
)

// LoadBalancer is a load balancer as the cloud stored it.
type LoadBalancer struct {
	// ID is the cloud's unique, immutable identifier of the load balancer.
	ID string
	// Spec is what the load balancer is configured to do.
	Spec LoadBalancerSpec
	// Addresses are the IP addresses assigned to the load balancer, primary family first.
	// Empty while it is provisioning, and on a cloud whose load balancers are reached by
	// Hostname alone.
	Addresses []string
	// Hostname is the DNS name the cloud gives the load balancer, for clouds whose load
	// balancers are reached by name (as AWS's are): lower case, a DNS subdomain of at most
	// 253 characters (labels of at most 63), never an IP address. Empty when the cloud
	// gives none. An active load balancer has addresses, a hostname or both; a hostname,
	// once given, does not change.
	Hostname string
	// Status is the provisioning state.
	Status LoadBalancerStatus
}

// Clone returns a deep copy of the load balancer.
func (lb LoadBalancer) Clone() LoadBalancer {
	lb.Spec = lb.Spec.Clone()
	lb.Addresses = slices.Clone(lb.Addresses)
	return lb
}

// LoadBalancerUpdate is the argument of UpdateLoadBalancer: the whole desired spec, for
// clouds that replace a load balancer in one call, and the changes against what the
// caller read, for clouds with one call per part.
type LoadBalancerUpdate struct {
	// Spec is the complete desired configuration after the update.
	Spec LoadBalancerSpec
	// Changes are the differences between the load balancer the caller read and Spec, as
	// computed by DiffLoadBalancer.
	Changes LoadBalancerChanges
	// Current, when set, is the load balancer the caller read, as the backend answered it,
	// the base of Changes. A backend may then base its calls on its own last answer
	// instead of reading again, when that answer is Current (PartwiseLoadBalancers.Reads):
	// Current says the caller's read is fresh, the backend's that nothing it wrote since
	// failed. After an attempt of unknown outcome, ccmkit's client sends the load balancer
	// it read again.
	Current *LoadBalancer
}

// LoadBalancerChanges lists what differs between two load balancer specs. The zero value
// means nothing differs.
type LoadBalancerChanges struct {
	// Name is true when the name differs.
	Name bool
	// Internal is true when the internal/public choice differs. Many clouds cannot change
	// it in place and answer ErrInvalidRequest.
	Internal bool
	// AddListeners are listeners whose (Protocol, Port) is new.
	AddListeners []Listener
	// UpdateListeners are listeners whose (Protocol, Port) exists but whose name, target
	// port, application protocol, certificates or own health check differ; they hold the
	// new values.
	UpdateListeners []Listener
	// RemoveListeners are the keys of listeners to remove.
	RemoveListeners []ListenerKey
	// AddTargets are instance IDs to add as targets.
	AddTargets []string
	// RemoveTargets are instance IDs to remove from the targets.
	RemoveTargets []string
	// TargetGroup is true when the target group differs.
	TargetGroup bool
	// HealthCheck is true when the health check differs.
	HealthCheck bool
	// SourceRanges is true when the set of source ranges differs.
	SourceRanges bool
	// ProxyProtocol is true when the PROXY protocol setting differs.
	ProxyProtocol bool
	// IPFamilies is true when the address families differ.
	IPFamilies bool
	// RequestedIPs is true when the requested addresses differ.
	RequestedIPs bool
	// SessionAffinity is true when the session affinity, its timeout or its cookie's name
	// differs.
	SessionAffinity bool
	// SettingValues are the names of the adapter's settings whose values are new, changed
	// or removed, sorted; Spec.SettingValues holds the new values.
	SettingValues []string
	// Tags is true when the tags differ.
	Tags bool
}

// Empty reports whether there is nothing to change.
func (c LoadBalancerChanges) Empty() bool {
	return !c.Name && !c.Internal && len(c.AddListeners) == 0 && len(c.UpdateListeners) == 0 &&
		len(c.RemoveListeners) == 0 && len(c.AddTargets) == 0 && len(c.RemoveTargets) == 0 &&
		!c.HealthCheck && !c.SourceRanges && !c.ProxyProtocol && !c.IPFamilies &&
		!c.RequestedIPs && !c.SessionAffinity && !c.Tags && !c.TargetGroup &&
		len(c.SettingValues) == 0
}

// DiffLoadBalancer returns what must change for a load balancer configured as current to
// be configured as desired. Listeners are matched by (Protocol, Port); targets, source
// ranges and requested IPs are compared as sets; IP families in order (the first is the
// primary). Results are sorted, so equal inputs give equal outputs.
func DiffLoadBalancer(current, desired LoadBalancerSpec) LoadBalancerChanges {
	var c LoadBalancerChanges
	c.Name = current.Name != desired.Name
	c.Internal = current.Internal != desired.Internal

	cur := make(map[ListenerKey]Listener, len(current.Listeners))
	for _, l := range current.Listeners {
		cur[l.Key()] = l
	}
	want := make(map[ListenerKey]bool, len(desired.Listeners))
	for _, l := range desired.Listeners {
		want[l.Key()] = true
		old, ok := cur[l.Key()]
		switch {
		case !ok:
			c.AddListeners = append(c.AddListeners, l)
		case !old.Equal(l):
			c.UpdateListeners = append(c.UpdateListeners, l)
		}
	}
	for _, l := range current.Listeners {
		if !want[l.Key()] {
			c.RemoveListeners = append(c.RemoveListeners, l.Key())
		}
	}
	sortListeners(c.AddListeners)
	sortListeners(c.UpdateListeners)
	slices.SortFunc(c.RemoveListeners, compareListenerKeys)

	c.AddTargets, c.RemoveTargets = setDiff(current.Targets, desired.Targets)
	c.TargetGroup = current.TargetGroup != desired.TargetGroup
	c.HealthCheck = !equalHealthChecks(current.HealthCheck, desired.HealthCheck)
	c.SourceRanges = !equalSets(current.SourceRanges, desired.SourceRanges)
	c.ProxyProtocol = current.ProxyProtocol != desired.ProxyProtocol
	c.IPFamilies = !slices.Equal(normalFamilies(current.IPFamilies), normalFamilies(desired.IPFamilies))
	c.RequestedIPs = !equalSets(current.RequestedIPs, desired.RequestedIPs)
	c.SessionAffinity = current.SessionAffinity != desired.SessionAffinity ||
		current.SessionAffinityTimeout != desired.SessionAffinityTimeout ||
		current.SessionAffinityCookieName != desired.SessionAffinityCookieName
	c.Tags = !maps.Equal(current.Tags, desired.Tags)
	c.SettingValues = diffSettings(current.SettingValues, desired.SettingValues)
	return c
}

// diffSettings returns the sorted names of the settings that differ between current and
// desired: nil when none does, without allocating.
func diffSettings(current, desired map[string]string) []string {
	if maps.Equal(current, desired) {
		return nil
	}
	var names []string
	for k, v := range desired {
		if old, ok := current[k]; !ok || old != v {
			names = append(names, k)
		}
	}
	for k := range current {
		if _, ok := desired[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// normalFamilies returns families with the documented default applied: empty means IPv4.
func normalFamilies(f []IPFamily) []IPFamily {
	if len(f) == 0 {
		return []IPFamily{IPv4}
	}
	return f
}

func equalHealthChecks(a, b *HealthCheck) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func compareListenerKeys(a, b ListenerKey) int {
	if a.Protocol != b.Protocol {
		if a.Protocol < b.Protocol {
			return -1
		}
		return 1
	}
	return int(a.Port) - int(b.Port)
}

func sortListeners(ls []Listener) {
	slices.SortFunc(ls, func(a, b Listener) int { return compareListenerKeys(a.Key(), b.Key()) })
}

// setDiff returns the elements of want missing from have and those of have missing from
// want, each sorted and without duplicates.
func setDiff(have, want []string) (add, remove []string) {
	if slices.Equal(have, want) {
		return nil, nil // a converged load balancer's targets: one comparison a target
	}
	if add, remove, ok := sortedDiff(have, want); ok {
		return add, remove
	}
	return mapDiff(have, want)
}

// mapDiff is setDiff of lists in any order.
func mapDiff(have, want []string) (add, remove []string) {
	h := make(map[string]struct{}, len(have))
	for _, s := range have {
		h[s] = struct{}{}
	}
	w := make(map[string]struct{}, len(want))
	for _, s := range want {
		w[s] = struct{}{}
		if _, ok := h[s]; !ok {
			add = append(add, s)
		}
	}
	for _, s := range have {
		if _, ok := w[s]; !ok {
			remove = append(remove, s)
		}
	}
	slices.Sort(add)
	slices.Sort(remove)
	return slices.Compact(add), slices.Compact(remove)
}

// sortedDiff is setDiff of two sorted lists (duplicates allowed), by merging them in one
// pass that allocates only where they differ: the common case of target lists, which
// callers keep sorted. Where the lists agree it costs one equality test and one
// comparison an element: the comparison with the last value taken, which checks that
// both lists are sorted as it goes. ok is false when either is not sorted (add and remove
// are then unfinished).
func sortedDiff(have, want []string) (add, remove []string, ok bool) {
	i, j := 0, 0
	var last string // the last value taken from either list: the merge takes them in order
	for taken := false; i < len(have) || j < len(want); taken = true {
		var v string
		in := 0 // where v is: -1 have only, 1 want only, 0 both
		switch {
		case j == len(want):
			v, in = have[i], -1
			i++
		case i == len(have):
			v, in = want[j], 1
			j++
		case have[i] == want[j]:
			v = have[i]
			i, j = i+1, j+1
		case have[i] < want[j]:
			v, in = have[i], -1
			i++
		default:
			v, in = want[j], 1
			j++
		}
		if taken {
			switch c := strings.Compare(v, last); {
			case c < 0:
				return nil, nil, false // a list is not sorted
			case c == 0:
				// A duplicate: the merge took the first copy from each list that holds
				// the value (both are sorted), so it is recorded as it must be.
				continue
			}
		}
		last = v
		switch in {
		case -1:
			remove = append(remove, v)
		case 1:
			add = append(add, v)
		}
	}
	return add, remove, true
}

func equalSets(a, b []string) bool {
	add, remove := setDiff(a, b)
	return len(add) == 0 && len(remove) == 0
}
