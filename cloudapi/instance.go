package cloudapi

import (
	"maps"
	"net"
	"slices"
)

// Instance is a virtual machine as the cloud reports it.
type Instance struct {
	// ID is the cloud's unique, immutable identifier of the instance. ccmkit puts it into
	// the Node's spec.providerID.
	ID string
	// Name is the instance's name in the cloud. ccmkit matches it against the Node name
	// when a Node has no providerID yet, so it should be the hostname the kubelet registers.
	Name string
	// Type is the machine type (for example "m5.large"); it becomes the
	// node.kubernetes.io/instance-type label.
	Type string
	// Zone is the failure domain inside the region; it becomes the
	// topology.kubernetes.io/zone label.
	Zone string
	// Region is the cloud region; it becomes the topology.kubernetes.io/region label.
	Region string
	// Addresses are the instance's network addresses, in the cloud's order.
	Addresses []Address
	// State is the instance's power and lifecycle state.
	State InstanceState
	// Tags are the instance's key/value labels in the cloud.
	Tags map[string]string
}

// Clone returns a deep copy of the instance.
func (i Instance) Clone() Instance {
	i.Addresses = slices.Clone(i.Addresses)
	i.Tags = maps.Clone(i.Tags)
	return i
}

// AddressType says how an address reaches the instance.
type AddressType string

// The address types. They match the Kubernetes NodeAddressType values of the same name.
const (
	// AddressInternalIP is an IP address reachable from inside the cloud network.
	AddressInternalIP AddressType = "InternalIP"
	// AddressExternalIP is an IP address reachable from outside the cloud network.
	AddressExternalIP AddressType = "ExternalIP"
	// AddressHostname is the instance's host name.
	AddressHostname AddressType = "Hostname"
	// AddressInternalDNS is a DNS name that resolves inside the cloud network.
	AddressInternalDNS AddressType = "InternalDNS"
	// AddressExternalDNS is a DNS name that resolves from outside the cloud network.
	AddressExternalDNS AddressType = "ExternalDNS"
)

// Valid reports whether t is one of the defined address types.
func (t AddressType) Valid() bool {
	switch t {
	case AddressInternalIP, AddressExternalIP, AddressHostname, AddressInternalDNS, AddressExternalDNS:
		return true
	}
	return false
}

// Address is one network address of an instance. IP addresses may be IPv4 or IPv6; the
// family is the address's own.
type Address struct {
	// Type says how the address reaches the instance.
	Type AddressType
	// Address is the IP address in its canonical text form, or the host or DNS name.
	Address string
}

// IPAddresses returns ips as addresses of type t, each in its canonical text form, without
// the nil, malformed and unspecified ones (0.0.0.0, ::): an SDK's structs hold those
// where the cloud answered none.
func IPAddresses(t AddressType, ips ...net.IP) []Address {
	var out []Address
	for _, ip := range ips {
		if ip.To16() != nil && !ip.IsUnspecified() {
			out = append(out, Address{Type: t, Address: ip.String()})
		}
	}
	return out
}

// InstanceState is the lifecycle state of an instance.
//
// ccmkit maps states onto Kubernetes as follows (docs/architecture.md has the table):
// Pending, Running and Stopping exist and are not shut down; Stopped exists and is shut
// down (the Node gets the shutdown taint and is kept); Terminating exists and is shut down;
// Terminated does not exist (the Node is deleted). An adapter whose cloud forgets
// terminated instances at once answers GetInstance with ErrNotFound instead.
type InstanceState string

// The instance states.
const (
	// InstancePending is an instance that is being created or started.
	InstancePending InstanceState = "pending"
	// InstanceRunning is an instance that is running.
	InstanceRunning InstanceState = "running"
	// InstanceStopping is an instance that is shutting down but not yet stopped.
	InstanceStopping InstanceState = "stopping"
	// InstanceStopped is an instance that is powered off but can be started again.
	InstanceStopped InstanceState = "stopped"
	// InstanceTerminating is an instance that is being deleted.
	InstanceTerminating InstanceState = "terminating"
	// InstanceTerminated is an instance that is deleted and will never run again.
	InstanceTerminated InstanceState = "terminated"
	// InstanceUnknown is an instance whose state the cloud cannot tell. ccmkit treats it
	// as existing and not shut down.
	InstanceUnknown InstanceState = "unknown"
)

// Valid reports whether s is one of the defined instance states.
func (s InstanceState) Valid() bool {
	switch s {
	case InstancePending, InstanceRunning, InstanceStopping, InstanceStopped,
		InstanceTerminating, InstanceTerminated, InstanceUnknown:
		return true
	}
	return false
}
