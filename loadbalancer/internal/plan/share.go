package plan

import (
	"maps"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// ListenerName is the name of the listener name of the Service with UID uid on a share's
// load balancer: the UID, ':' and the listener's name. The UID is whom the listener
// belongs to (ListenerOwner).
func ListenerName(uid, name string) string { return uid + ":" + name }

// ListenerOwner is the UID of the Service a listener of a share's load balancer belongs
// to, read from its name; empty when the name names none (a listener somebody added by
// hand, or one a cloud renamed: nobody's, and gone with the next write).
func ListenerOwner(name string) string {
	uid, _, ok := strings.Cut(name, ":")
	if !ok {
		return ""
	}
	return uid
}

// Member is what a Service of a share last asked for.
type Member struct {
	// Name is the Service's namespace/name, for messages.
	Name string
	// Part is what the Service asks for beside its listeners (SharedPart), which every
	// member of the share must agree on.
	Part cloudapi.LoadBalancerSpec
	// Listeners are the Service's own listeners, named by ListenerName.
	Listeners []cloudapi.Listener
	// Agreed is whether the Service agreed with the share at its last sync: only then
	// does it get the ports others free (HandOver).
	Agreed bool
}

// SharedPart is spec without what is not the share's to agree on: listeners (each
// Service's own), tags but cloudapi.TagShareNodes, and targets (the Nodes of
// TagShareNodes, which change with the node set).
func SharedPart(spec cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	p := spec.Clone()
	p.Listeners, p.Tags, p.Targets, p.TargetGroup = nil, nil, nil, ""
	if nodes, ok := spec.Tags[cloudapi.TagShareNodes]; ok {
		p.Tags = map[string]string{cloudapi.TagShareNodes: nodes}
	}
	return p
}

// Split returns the listeners of lb that belong to the Service with UID uid, and those of
// other Services; listeners of no Service (see ListenerOwner) are in neither.
func Split(lb *cloudapi.LoadBalancer, uid string) (mine, others []cloudapi.Listener) {
	if lb == nil {
		return nil, nil
	}
	for _, ls := range lb.Spec.Listeners {
		switch ListenerOwner(ls.Name) {
		case "":
		case uid:
			mine = append(mine, ls)
		default:
			others = append(others, ls)
		}
	}
	return mine, others
}

// Same reports whether two shared parts (SharedPart) ask for the same load balancer, as
// the cloud keeps it.
type Same func(a, b cloudapi.LoadBalancerSpec) bool

// JoinInput is what Join decides from.
type JoinInput struct {
	// UID is the UID of the Service whose sync this is.
	UID string
	// Want is the load balancer the Service asks for: its listeners (named by
	// ListenerName) and, in its tags, cloudapi.TagShareNodes.
	Want cloudapi.LoadBalancerSpec
	// Current is the share's load balancer as read; nil when it has none yet.
	Current *cloudapi.LoadBalancer
	// Carry are the listeners of a duplicate of Current about to be deleted: those of
	// other Services move to Current.
	Carry []cloudapi.Listener
	// Known are the other members of the share that this process synced.
	Known map[string]Member
	// Same compares shared parts.
	Same Same
}

// Joined is what Join decided.
type Joined struct {
	// Me is what the Service asks for, to remember among the share's members.
	Me Member
	// Disagrees names whom the Service disagrees with ("Service ns/name", or the load
	// balancer and UID of a member not synced); empty when it agrees. When not empty,
	// nothing is to be written.
	Disagrees string
	// Spec is the share's load balancer to write: Current with the Service's listeners
	// replaced by Want's, Carry's listeners of other Services added, the ports the
	// Service freed handed to the members waiting for them (HandOver), and everything
	// that is not a listener as Want asks; listeners of no Service dropped.
	Spec cloudapi.LoadBalancerSpec
	// Taken are the Service's listeners whose port another Service's listener has: they
	// are left out of Spec.
	Taken []Held
}

// Held is a listener a Service asks for whose port (protocol and number) another
// Service has.
type Held struct {
	Listener cloudapi.Listener
	// Holder is the UID of the Service whose listener has the port.
	Holder string
}

// Join decides what the Service of in.UID makes of its share's load balancer. A Service
// disagrees with the share when a synced member (in.Known) asks for another shared part,
// or when in.Current has listeners of a Service not synced since the start and
// in.Current's part is not the Service's; a Service that asks for what in.Current has
// agrees, so a share changes what it shares once its last Service asks for it. A port
// another Service's listener has is not the Service's: it is left out, and the others are
// added.
func Join(in JoinInput) Joined {
	mine, _ := Split(&cloudapi.LoadBalancer{Spec: in.Want}, in.UID)
	out := Joined{Me: Member{Part: SharedPart(in.Want), Listeners: mine}}
	_, others := Split(in.Current, in.UID)
	for _, ls := range in.Carry {
		if o := ListenerOwner(ls.Name); o != "" && o != in.UID && !slices.ContainsFunc(others, func(x cloudapi.Listener) bool { return x.Key() == ls.Key() }) {
			others = append(others, ls)
		}
	}
	if out.Disagrees = disagreeing(out.Me, in, others); out.Disagrees != "" {
		return out
	}
	out.Me.Agreed = true
	out.Spec = in.Want
	out.Spec.Listeners = slices.Clone(others)
	for _, ls := range mine {
		if i := slices.IndexFunc(others, func(o cloudapi.Listener) bool { return o.Key() == ls.Key() }); i >= 0 {
			out.Taken = append(out.Taken, Held{Listener: ls, Holder: ListenerOwner(others[i].Name)})
			continue
		}
		out.Spec.Listeners = append(out.Spec.Listeners, ls)
	}
	// The ports the Service freed (it changed them) go to the members waiting for them.
	out.Spec.Listeners = append(out.Spec.Listeners, HandOver(in.Known, out.Spec.Listeners, freed(in.Current, out.Spec.Listeners), out.Me.Part, in.Same)...)
	SortListeners(out.Spec.Listeners)
	return out
}

// freed returns the ports (protocol and number) of lb's listeners that stay has not: the
// ports a write of stay frees. None when lb is nil.
func freed(lb *cloudapi.LoadBalancer, stay []cloudapi.Listener) map[cloudapi.ListenerKey]bool {
	if lb == nil {
		return nil
	}
	out := map[cloudapi.ListenerKey]bool{}
	for _, ls := range lb.Spec.Listeners {
		if !slices.ContainsFunc(stay, func(x cloudapi.Listener) bool { return x.Key() == ls.Key() }) {
			out[ls.Key()] = true
		}
	}
	return out
}

// disagreeing returns whom me disagrees with (see Join), empty for none; others are the
// other Services' listeners on in.Current.
func disagreeing(me Member, in JoinInput, others []cloudapi.Listener) string {
	if len(others) == 0 || in.Same(SharedPart(in.Current.Spec), me.Part) {
		return ""
	}
	for _, uid := range slices.Sorted(maps.Keys(in.Known)) {
		if m := in.Known[uid]; !in.Same(m.Part, me.Part) {
			return "Service " + m.Name
		}
	}
	for _, ls := range others {
		if uid := ListenerOwner(ls.Name); !knows(in.Known, uid) {
			return "load balancer " + in.Current.ID + " as Service with UID " + uid + " has it"
		}
	}
	return ""
}

// knows reports whether known has the member with UID uid.
func knows(known map[string]Member, uid string) bool {
	_, ok := known[uid]
	return ok
}

// HandOver returns the listeners that members of a share (known: all but the Service
// whose sync this is) asked for on the ports a write frees (freed: ports that were on the
// share's load balancer and that stay, the listeners it keeps, has not), for the members
// that wait for them: a Service that leaves a share, or changes its ports, hands the
// ports it frees to those that asked for them, in the same write. Only members that agreed
// with the share at their last sync and asked for the shared part the write writes
// (part, compared by same) get them: a member that asked for other source ranges, say,
// is not served by a load balancer it did not agree to. A port that was never on the load
// balancer is not handed over (a listener the cloud refused stays the refused member's
// problem, not the share's). Each port goes once, by UID order.
func HandOver(known map[string]Member, stay []cloudapi.Listener, freed map[cloudapi.ListenerKey]bool, part cloudapi.LoadBalancerSpec, same Same) []cloudapi.Listener {
	taken := map[cloudapi.ListenerKey]bool{}
	for _, ls := range stay {
		taken[ls.Key()] = true
	}
	var out []cloudapi.Listener
	for _, k := range slices.Sorted(maps.Keys(known)) {
		if m := known[k]; m.Agreed && same(m.Part, part) {
			for _, ls := range m.Listeners {
				if freed[ls.Key()] && !taken[ls.Key()] {
					taken[ls.Key()] = true
					out = append(out, ls.Clone())
				}
			}
		}
	}
	return out
}

// LeaveOp is what a Service leaving its share does to the share's load balancer.
type LeaveOp int

// The ways to leave a share.
const (
	// Stay: nothing of the Service's is on the load balancer, and others are: no write.
	Stay LeaveOp = iota
	// Update: write Left.Spec (the others' listeners and the ports handed over).
	Update
	// Last: the Service is the last of its share: delete (or release) the load balancer.
	Last
)

// Left is what Leave decided.
type Left struct {
	Op LeaveOp
	// Spec is the load balancer to write when Op is Update.
	Spec cloudapi.LoadBalancerSpec
	// Mine and Others count the Service's listeners and the other Services' on it.
	Mine, Others int
}

// NeedsMembers reports whether Leave must know whether another Service of the share
// exists: only when no other Service has a listener on lb.
func NeedsMembers(lb cloudapi.LoadBalancer, uid string) bool {
	_, others := Split(&lb, uid)
	return len(others) == 0
}

// Leave decides what the Service with UID uid, leaving its share (deleted, no longer of
// type LoadBalancer, or moved to another share), does to lb, the share's load balancer
// as read: it is the last one out, and the load balancer goes, when no other Service
// has a listener on it and no other Service of the share exists (othersExist, asked of
// the cluster in the share's own scope; see NeedsMembers); otherwise its listeners (and
// those of no Service) are removed and the ports it frees handed to the members waiting
// for them (known, the other members, who asked for the load balancer's shared part, as
// same compares). A load balancer left without listeners keeps no
// targets either (a cloud may refuse targets whose instances are gone by now; the next
// Service of the share sets them).
func Leave(uid string, lb cloudapi.LoadBalancer, known map[string]Member, othersExist bool, same Same) Left {
	mine, others := Split(&lb, uid)
	out := Left{Mine: len(mine), Others: len(others)}
	switch {
	case len(others) == 0 && !othersExist:
		out.Op = Last
		return out
	case len(mine)+len(others) == len(lb.Spec.Listeners) && len(mine) == 0:
		out.Op = Stay
		return out
	}
	out.Op = Update
	out.Spec = lb.Spec.Clone()
	out.Spec.Listeners = append(slices.Clone(others), HandOver(known, others, freed(&lb, others), SharedPart(lb.Spec), same)...)
	SortListeners(out.Spec.Listeners)
	if len(out.Spec.Listeners) == 0 {
		out.Spec.Targets, out.Spec.TargetGroup = nil, ""
	}
	return out
}

// Unserved returns the ports the member me (of the Service with UID uid) asks for and
// another Service holds on lb, the share's load balancer as written, when it holds every
// one of them; nil when lb serves the Service at least one of its ports, when a port is
// not on lb at all (not written yet: not another's), and for a member that disagreed with
// the share or asks for none.
func Unserved(uid string, me Member, lb cloudapi.LoadBalancer) []Held {
	if !me.Agreed || len(me.Listeners) == 0 {
		return nil
	}
	var held []Held
	for _, want := range me.Listeners {
		i := slices.IndexFunc(lb.Spec.Listeners, func(ls cloudapi.Listener) bool { return ls.Key() == want.Key() })
		if i < 0 || ListenerOwner(lb.Spec.Listeners[i].Name) == uid {
			return nil
		}
		held = append(held, Held{Listener: want, Holder: ListenerOwner(lb.Spec.Listeners[i].Name)})
	}
	return held
}

// SortListeners sorts listeners by protocol, then port: the order of every spec ccmkit
// writes.
func SortListeners(ls []cloudapi.Listener) {
	slices.SortFunc(ls, func(x, y cloudapi.Listener) int {
		if x.Protocol != y.Protocol {
			return strings.Compare(string(x.Protocol), string(y.Protocol))
		}
		return int(x.Port) - int(y.Port)
	})
}

// Duplicates splits found, the load balancers of one owner as listed (a cloud may list
// one twice), into the one to keep and the others, each once. It keeps the one with ID
// prefer (the one a Service's load-balancer-id annotation names), else the first that
// has one of published (the addresses and hostnames the Service's status publishes),
// else the first. kept is empty only when found is.
func Duplicates(found []cloudapi.LoadBalancer, prefer string, published []string) (kept, extras []cloudapi.LoadBalancer) {
	if len(found) < 2 || !slices.ContainsFunc(found, func(lb cloudapi.LoadBalancer) bool { return lb.ID != found[0].ID }) {
		return found[:min(len(found), 1)], nil
	}
	keep := slices.IndexFunc(found, func(lb cloudapi.LoadBalancer) bool { return prefer != "" && lb.ID == prefer })
	if keep < 0 {
		keep = max(0, slices.IndexFunc(found, func(lb cloudapi.LoadBalancer) bool {
			return slices.ContainsFunc(published, func(a string) bool { return Reaches(lb, a) })
		}))
	}
	seen := map[string]bool{found[keep].ID: true} // the one kept, however often the cloud listed it
	for _, extra := range found {
		if !seen[extra.ID] {
			seen[extra.ID] = true
			extras = append(extras, extra)
		}
	}
	return found[keep : keep+1], extras
}

// Endpoints are what clients reach lb by, and what a Service's status may publish of it:
// its addresses and its hostname, when it has one.
func Endpoints(lb cloudapi.LoadBalancer) []string {
	if lb.Hostname == "" {
		return lb.Addresses
	}
	return append(slices.Clip(lb.Addresses), lb.Hostname)
}

// Reaches reports whether a, an address or hostname a Service's status publishes, is
// lb's: one of its Endpoints. This is the one rule by which ccmkit tells which load
// balancer a Service's status names (the duplicate to keep, a Service that moved, an
// address the creation brake protects).
func Reaches(lb cloudapi.LoadBalancer, a string) bool { return slices.Contains(Endpoints(lb), a) }
