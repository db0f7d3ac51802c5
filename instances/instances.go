package instances

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/apivalid"
	"github.com/ccmkit/ccmkit/internal/instancecache"
	"github.com/ccmkit/ccmkit/internal/nodelabels"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/providerid"
)

// Instances implements cloudprovider.InstancesV2 and the legacy cloudprovider.Instances
// over a Lookup: InstanceExists answers false only on the cloud's certain word (see the
// package documentation), every other failure is an error and the Node is kept.
type Instances struct {
	// lookup is the legacy methods' reads, which are no Node's: they get a name or a
	// provider ID, not a Node (see Lookup).
	lookup Lookup
	// nodes is InstancesV2's reads, each for the Node it is given.
	nodes nodeLookup
	opts  Options
}

var (
	_ cloudprovider.InstancesV2 = (*Instances)(nil)
	_ cloudprovider.Instances   = (*Instances)(nil)
)

// New returns Instances that find instances through lookup (NewLookup, shared with zones
// and routes). It validates opts and makes no cloud call.
func New(lookup Lookup, opts Options) (*Instances, error) {
	var errs []error
	if lookup == nil {
		errs = append(errs, errors.New("instances: an instance lookup is required (instances.NewLookup)"))
	}
	if opts.ProviderID.String() == "" {
		errs = append(errs, errors.New("instances: a provider ID format is required"))
	}
	for _, p := range nodelabels.Check(opts.AdditionalLabels, opts.LabelsFromTags) {
		field := "AdditionalLabels"
		if p.FromTags {
			field = "LabelsFromTags"
		}
		errs = append(errs, fmt.Errorf("instances: %s: %s", field, p.Msg))
	}
	for _, f := range opts.IPFamilies {
		if !f.Valid() {
			errs = append(errs, fmt.Errorf("instances: IP family %q is neither IPv4 nor IPv6", f))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(opts.IPFamilies) == 0 {
		opts.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv4, cloudapi.IPv6}
	}
	return &Instances{lookup: lookup, nodes: forNodes(lookup), opts: opts}, nil
}

// Options configure Instances.
type Options struct {
	// ProviderID is the provider ID format. Required.
	ProviderID providerid.Format
	// Region is reported for instances whose cloud record has no region.
	Region string
	// AdditionalLabels are put on every Node at initialization. Keys must be qualified
	// names; keys under kubernetes.io and k8s.io (and their subdomains) are refused: those
	// belong to Kubernetes.
	AdditionalLabels map[string]string
	// LabelsFromTags maps instance tag keys to Node label keys: a Node whose instance
	// carries the tag gets the label, with the tag's value, at initialization. Label keys
	// follow the rules of AdditionalLabels, each comes from one tag and none is an
	// additional label too. A tag the instance lacks adds no label; a tag whose value is
	// not a valid label value adds none either and is logged (instance, tag, value), so
	// that one bad tag does not keep a Node from initializing.
	LabelsFromTags map[string]string
	// IPFamilies is the order of address families in NodeAddresses, primary first, as the
	// cluster expects (its primary service/pod family). Default IPv4 then IPv6.
	IPFamilies []cloudapi.IPFamily
	// Recorder receives the Warning event EventDeletionBrake on a Node whose instance the
	// cloud answers gone while the deletion brake holds the answer back (once per Node
	// and brake window). Nil records nothing; the lookup's error says the same.
	Recorder record.EventRecorder
}

// AnnotationAcknowledgeGone is the Node annotation by which an operator acknowledges
// that the Node's instance is gone: on a Node annotated with the value "true", an answer
// "gone" that the deletion brake holds back (ErrDeletionBrake) is passed on, and the node
// lifecycle controller deletes the Node. Nothing else reads it.
const AnnotationAcknowledgeGone = "ccmkit.io/acknowledge-instance-gone"

// EventDeletionBrake is the reason of the Warning event on a Node whose instance the cloud
// answers gone while the deletion brake holds the answer back.
const EventDeletionBrake = "InstanceGoneRefused"

// find returns the Node's instance: by spec.providerID when set, else by name. An answer
// "gone" that the deletion brake holds back is reported on the Node, and passed on as the
// cloud's not-found when the Node carries AnnotationAcknowledgeGone.
func (i *Instances) find(ctx context.Context, node *corev1.Node) (*cloudapi.Instance, error) {
	if node == nil {
		return nil, errors.New("instances: nil Node")
	}
	var inst *cloudapi.Instance
	var err error
	if node.Spec.ProviderID != "" {
		inst, err = i.byProviderID(ctx, node.Spec.ProviderID, i.nodes.ByIDForNode)
	} else if inst, err = i.nodes.ByNameForNode(ctx, node.Name); err != nil {
		err = fmt.Errorf("finding the instance of Node %q by name: %w", node.Name, err)
	}
	var braked *instancecache.BrakeError
	if !errors.As(err, &braked) {
		return inst, err
	}
	if node.Annotations[AnnotationAcknowledgeGone] == "true" {
		klog.FromContext(ctx).Info("Passing on an answer that an instance is gone past the deletion brake: the Node acknowledges it",
			"node", klog.KObj(node), "instance", braked.Instance, "annotation", AnnotationAcknowledgeGone)
		return nil, cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetInstance, braked.Instance,
			fmt.Errorf("the Node's annotation %s acknowledges: %s", AnnotationAcknowledgeGone, braked.Error()))
	}
	if braked.Report && i.opts.Recorder != nil {
		i.opts.Recorder.Eventf(node, corev1.EventTypeWarning, EventDeletionBrake,
			"The cloud answers that the Node's instance is gone, and the deletion brake holds the answer back, so the Node is not deleted: %s. If the instance is really gone, annotate the Node %s=true (the Node is then deleted); the brake lets go by itself when the cloud lists the cluster's instances again",
			braked.Error(), AnnotationAcknowledgeGone)
	}
	return inst, err
}

// byProviderID returns the instance of providerID, read with byID.
func (i *Instances) byProviderID(ctx context.Context, providerID string, byID func(context.Context, string) (*cloudapi.Instance, error)) (*cloudapi.Instance, error) {
	id, err := i.opts.ProviderID.InstanceID(providerID)
	if err != nil {
		return nil, err
	}
	inst, err := byID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("finding instance %q: %w", id, err)
	}
	return inst, nil
}

// gone reports whether inst or err says, with certainty, that the instance does not exist.
func gone(inst *cloudapi.Instance, err error) bool {
	if err != nil {
		return cloudapi.IsNotFound(err)
	}
	return inst.State == cloudapi.InstanceTerminated
}

func shutdown(inst *cloudapi.Instance) bool {
	return inst.State == cloudapi.InstanceStopped || inst.State == cloudapi.InstanceTerminating
}

// InstanceExists reports whether the Node's instance exists. It answers false only when
// the cloud says the instance is not found or terminated; any other failure is an error.
func (i *Instances) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// InstanceShutdown reports whether the Node's instance is stopped or being deleted. For an
// instance that does not exist it returns cloudprovider.InstanceNotFound.
func (i *Instances) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return false, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return false, err
	}
	return shutdown(inst), nil
}

// InstanceMetadata returns the Node's provider ID, instance type, zone, region, addresses
// and additional labels (Options.AdditionalLabels and the labels of Options.LabelsFromTags
// whose tags the instance carries). The cloud node controller puts the labels on the Node
// once, at initialization, and leaves a label the Node already has as it is. For an instance that does not exist it returns
// cloudprovider.InstanceNotFound; it never returns nil metadata without an error.
func (i *Instances) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	inst, err := i.find(ctx, node)
	if gone(inst, err) {
		return nil, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	return i.metadata(ctx, inst, node)
}

func (i *Instances) metadata(ctx context.Context, inst *cloudapi.Instance, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	providerID, err := i.formatProviderID(inst)
	if err != nil {
		return nil, err
	}
	addrs, err := i.nodeAddresses(inst)
	if err != nil {
		return nil, err
	}
	if ip, ok := node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr]; ok {
		if addrs, err = providedIPFirst(ip, addrs, inst.ID); err != nil {
			return nil, err
		}
	}
	region := inst.Region
	if region == "" {
		region = i.opts.Region
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    providerID,
		InstanceType:  inst.Type,
		NodeAddresses: addrs,
		Zone:          inst.Zone,
		Region:        region,
	}
	md.AdditionalLabels = i.labels(ctx, inst, node)
	return md, nil
}

// labels returns the Node's additional labels: the configured ones and those from the
// instance's tags, nil when there are none. A tag whose value is not a valid label value
// is skipped and logged, never an error: the cloud node controller would otherwise keep
// the Node uninitialized (tainted) for as long as the tag stays.
func (i *Instances) labels(ctx context.Context, inst *cloudapi.Instance, node *corev1.Node) map[string]string {
	labels := maps.Clone(i.opts.AdditionalLabels)
	for _, tag := range slices.Sorted(maps.Keys(i.opts.LabelsFromTags)) {
		value, ok := inst.Tags[tag]
		if !ok {
			continue
		}
		label := i.opts.LabelsFromTags[tag]
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			klog.FromContext(ctx).Info("Skipping the Node label of an instance tag whose value is not a valid label value",
				"node", klog.KObj(node), "instance", inst.ID, "tag", tag, "value", quote.Text(value), "label", label, "reason", strings.Join(msgs, "; "))
			continue
		}
		if labels == nil {
			labels = make(map[string]string, len(i.opts.LabelsFromTags))
		}
		labels[label] = value
	}
	return labels
}

func (i *Instances) formatProviderID(inst *cloudapi.Instance) (string, error) {
	region := inst.Region
	if region == "" {
		region = i.opts.Region
	}
	id, err := i.opts.ProviderID.Format(providerid.Fields{ID: inst.ID, Zone: inst.Zone, Region: region, Name: inst.Name})
	if err != nil {
		return "", fmt.Errorf("instance %q: %w", inst.ID, err)
	}
	return id, nil
}

// nodeAddresses orders the instance's addresses as the Node needs them: InternalIP, then
// ExternalIP, each by family in the configured order; then InternalDNS, ExternalDNS and
// Hostname. Within one group the cloud's order is kept. An IP address that apivalid.IP
// refuses (garbage, a zone, an IPv4-mapped IPv6 address: what the API server refuses or
// what a reader of the Node would misread) is an error naming the instance, never
// silently dropped.
func (i *Instances) nodeAddresses(inst *cloudapi.Instance) ([]corev1.NodeAddress, error) {
	type ranked struct {
		addr corev1.NodeAddress
		rank int
	}
	familyRank := func(ip netip.Addr) int {
		f := cloudapi.IPv4
		if ip.Is6() && !ip.Is4In6() {
			f = cloudapi.IPv6
		}
		for r, want := range i.opts.IPFamilies {
			if want == f {
				return r
			}
		}
		return len(i.opts.IPFamilies)
	}
	fams := len(i.opts.IPFamilies) + 1
	var out []ranked
	for _, a := range inst.Addresses {
		var rank int
		switch a.Type {
		case cloudapi.AddressInternalIP, cloudapi.AddressExternalIP:
			err := apivalid.IP(a.Address)
			ip, perr := netip.ParseAddr(a.Address) // apivalid.IP accepts only what netip parses
			if err == nil && perr != nil {
				err = errors.New("must be a valid IP address") // perr would quote the whole value
			}
			if err != nil {
				return nil, fmt.Errorf("instance %q: %s address %s is not an IP address a Node's status can hold: %w", inst.ID, a.Type, quote.Value(a.Address), err)
			}
			rank = familyRank(ip)
			if a.Type == cloudapi.AddressExternalIP {
				rank += fams
			}
			a.Address = ip.String()
		case cloudapi.AddressInternalDNS:
			rank = 2 * fams
		case cloudapi.AddressExternalDNS:
			rank = 2*fams + 1
		case cloudapi.AddressHostname:
			rank = 2*fams + 2
		default:
			return nil, fmt.Errorf("instance %q: address %q has unknown type %q", inst.ID, a.Address, a.Type)
		}
		out = append(out, ranked{corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address}, rank})
	}
	// A stable insertion sort keeps the cloud's order inside a rank; address lists are short.
	for j := 1; j < len(out); j++ {
		for k := j; k > 0 && out[k].rank < out[k-1].rank; k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	addrs := make([]corev1.NodeAddress, 0, len(out))
	seen := make(map[corev1.NodeAddress]bool, len(out))
	for _, r := range out {
		if !seen[r.addr] {
			seen[r.addr] = true
			addrs = append(addrs, r.addr)
		}
	}
	return addrs, nil
}

// providedIPFirst moves the addresses equal to the kubelet's provided node IP (one IP, or
// two of different families for dual-stack) to the front, in the annotation's order. An
// IP the instance does not have is an error that lists what it has.
func providedIPFirst(annotation string, addrs []corev1.NodeAddress, instanceID string) ([]corev1.NodeAddress, error) {
	var wanted []netip.Addr
	for _, s := range strings.Split(annotation, ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("annotation %s=%s: %s is not an IP address", cloudproviderapi.AnnotationAlphaProvidedIPAddr, quote.Value(annotation), quote.Value(s))
		}
		wanted = append(wanted, ip.Unmap())
	}
	var first, rest []corev1.NodeAddress
	for _, ip := range wanted {
		found := false
		for _, a := range addrs {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if got, err := netip.ParseAddr(a.Address); err == nil && got.Unmap() == ip {
				first = append(first, a)
				found = true
			}
		}
		if !found {
			var have []string
			for _, a := range addrs {
				if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
					have = append(have, a.Address)
				}
			}
			return nil, fmt.Errorf("the Node's %s annotation asks for %s, but instance %q has only [%s]: fix the kubelet's --node-ip or the instance's addresses",
				cloudproviderapi.AnnotationAlphaProvidedIPAddr, ip, instanceID, strings.Join(have, ", "))
		}
	}
	for _, a := range addrs {
		keep := true
		for _, f := range first {
			if f == a {
				keep = false
			}
		}
		if keep {
			rest = append(rest, a)
		}
	}
	return append(first, rest...), nil
}

// The legacy Instances interface, from the same lookups.

// NodeAddresses returns the addresses of the instance named name.
func (i *Instances) NodeAddresses(ctx context.Context, name types.NodeName) ([]corev1.NodeAddress, error) {
	inst, err := i.legacyByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return i.nodeAddresses(inst)
}

// NodeAddressesByProviderID returns the addresses of the instance with the provider ID.
func (i *Instances) NodeAddressesByProviderID(ctx context.Context, providerID string) ([]corev1.NodeAddress, error) {
	inst, err := i.legacyByProviderID(ctx, providerID)
	if err != nil {
		return nil, err
	}
	return i.nodeAddresses(inst)
}

// InstanceID returns the cloud ID of the instance named name.
func (i *Instances) InstanceID(ctx context.Context, name types.NodeName) (string, error) {
	inst, err := i.legacyByName(ctx, name)
	if err != nil {
		return "", err
	}
	return inst.ID, nil
}

// InstanceType returns the type of the instance named name.
func (i *Instances) InstanceType(ctx context.Context, name types.NodeName) (string, error) {
	inst, err := i.legacyByName(ctx, name)
	if err != nil {
		return "", err
	}
	return inst.Type, nil
}

// InstanceTypeByProviderID returns the type of the instance with the provider ID.
func (i *Instances) InstanceTypeByProviderID(ctx context.Context, providerID string) (string, error) {
	inst, err := i.legacyByProviderID(ctx, providerID)
	if err != nil {
		return "", err
	}
	return inst.Type, nil
}

// AddSSHKeyToAllInstances is not supported: ccmkit never changes instances.
func (i *Instances) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}

// CurrentNodeName returns hostname: ccmkit expects Nodes to be named after their instance.
func (i *Instances) CurrentNodeName(_ context.Context, hostname string) (types.NodeName, error) {
	return types.NodeName(hostname), nil
}

// InstanceExistsByProviderID reports whether the instance exists; see InstanceExists.
func (i *Instances) InstanceExistsByProviderID(ctx context.Context, providerID string) (bool, error) {
	inst, err := i.byProviderID(ctx, providerID, i.lookup.ByID)
	if gone(inst, err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// InstanceShutdownByProviderID reports whether the instance is shut down; see
// InstanceShutdown.
func (i *Instances) InstanceShutdownByProviderID(ctx context.Context, providerID string) (bool, error) {
	inst, err := i.legacyByProviderID(ctx, providerID)
	if err != nil {
		return false, err
	}
	return shutdown(inst), nil
}

func (i *Instances) legacyByName(ctx context.Context, name types.NodeName) (*cloudapi.Instance, error) {
	inst, err := i.lookup.ByName(ctx, string(name))
	if gone(inst, err) {
		return nil, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding the instance of Node %q by name: %w", name, err)
	}
	return inst, nil
}

func (i *Instances) legacyByProviderID(ctx context.Context, providerID string) (*cloudapi.Instance, error) {
	inst, err := i.byProviderID(ctx, providerID, i.lookup.ByID)
	if gone(inst, err) {
		return nil, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	return inst, nil
}
