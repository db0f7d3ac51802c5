package loadbalancer

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
	"github.com/ccmkit/ccmkit/providerid"
)

// planner turns what a Service asks for (its annotations and spec, read by intents; its
// share's members, in the shareBook) and what the cloud has (the load balancer read) into
// what to write: the spec (translate), a share's part of it (package plan's Join and
// Unserved decide), and the targets' group. It makes no cloud call and writes nothing;
// what it finds wrong with a Service it hands to the reporter.
type planner struct {
	clusterID, prefix string
	settings          Settings
	settingDefaults   map[string]string // the adapter's settings every Service starts from; never changed
	aliases           Aliases
	shape             cloudapi.LoadBalancerShape
	providerID        providerid.Format
	cmp               comparer
	intents           *intents
	shares            *shareBook
	report            *reporter
	memo              targetMemo // the targets of the last node set, per node selector
}

// wanted is what the planner makes of a Service for one write.
type wanted struct {
	spec cloudapi.LoadBalancerSpec
	// grouped: with target groups, the targets of spec go to the group of the Nodes sel
	// selects (nil: every Node; see writer.group); otherwise the spec's targets and group
	// are written as they are.
	grouped bool
	sel     labels.Selector
	// asked is, for a node sync of a Service of a share, the listeners the Service asks for
	// as read now (see unserved).
	asked []cloudapi.Listener
	// serr is what is wrong with the Service, returned after the write (updateWant).
	serr error
}

// creation is the creation of want for the Service svc of owner, with the planner's
// answers for a load balancer of owner an earlier create made (join it, as it is, for a
// share) and for a name or address the cloud says is taken (nameTakenAdvice).
func (p *planner) creation(logger klog.Logger, svc *corev1.Service, owner string, want cloudapi.LoadBalancerSpec) creation {
	return creation{svc: svc, owner: owner, want: want,
		again: func(found *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, error) {
			if !isShare(owner) {
				return want, nil
			}
			return p.join(logger, svc, owner, want, found, true) // another Service of the share may have made it
		},
		taken: func() string { return p.nameTakenAdvice(svc, owner) },
	}
}

// desired is translate for the LoadBalancer's calls: the spec the Service asks for from
// nodes (current: the load balancer found, or nil), with its problems reported: the
// warnings as events (reporter.unknown), the errors returned as the Service's error, and
// annotations that disagree with their aliases as an event too (reporter.conflicts). It
// returns the parsed annotations too, as far as they are well-formed.
func (p *planner) desired(logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, set nodeSetID, current *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, parsedAnnotations, error) {
	spec, a, ps := translate(translation{
		svc:       svc,
		owner:     owner,
		current:   current,
		targets:   func(sel labels.Selector) []string { return p.targets(logger, nodes, set, sel) },
		clusterID: p.clusterID, prefix: p.prefix,
		declarations: p.settings, settingDefaults: p.settingDefaults, aliases: p.aliases, shape: p.shape,
	})
	p.report.unknown(logger, svc, ps.unknownKeys())
	p.report.conflicts(logger, svc, ps)
	return spec, a, ps.err(svc)
}

// ensureWant is what EnsureLoadBalancer makes of current (nil: none): the spec the
// Service asks for (desired; for a Service of a share, joined with the other Services'
// listeners and carry's, see join), its targets for their group.
func (p *planner) ensureWant(logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, current *cloudapi.LoadBalancer, carry ...cloudapi.Listener) (wanted, error) {
	want, a, err := p.desired(logger, svc, owner, nodes, 0, current)
	if err != nil {
		return wanted{}, err
	}
	if isShare(owner) {
		shareNodes(&want, a)
		if want, err = p.join(logger, svc, owner, want, current, true, carry...); err != nil {
			return wanted{}, err
		}
	}
	return wanted{spec: want, grouped: true, sel: a.nodeSelector}, nil
}

// updateWant is what UpdateLoadBalancer makes of current: what the Service asks for, but
// never a switch between internal and public (only EnsureLoadBalancer replaces). When an
// annotation is malformed, it is current with the nodes (that a well-formed node selector
// selects) as targets, and the Service's error (serr): removed nodes must not stay targets
// until the user fixes the annotation. A malformed node selector leaves the targets (and
// the target group) as they are: every node is not what its user asked for. A Service
// of a share writes its share's load balancer as join makes it; one that disagrees with
// its share writes nothing (serr says why): the share's other Services keep the targets.
func (p *planner) updateWant(logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, set nodeSetID, current *cloudapi.LoadBalancer) wanted {
	want, a, serr := p.desired(logger, svc, owner, nodes, set, current)
	var asked []cloudapi.Listener
	if isShare(owner) {
		if serr == nil {
			asked, _ = plan.Split(&cloudapi.LoadBalancer{Spec: want}, string(svc.UID))
			// A node sync changes the targets, never whose listeners a share's load
			// balancer has: the Service it is given may predate the Service's deletion or
			// its move to another share (the service controller's node sync reads its
			// Services once, as it begins). Its listeners stay as they are, and it is not
			// recorded among the share's members.
			want.Listeners, _ = plan.Split(current, string(svc.UID))
			shareNodes(&want, a)
			want, serr = p.join(logger, svc, owner, want, current, false)
		}
		if serr != nil { // the share's targets are the share's: they follow a Service that agrees
			return wanted{spec: p.keepUpdated(current, current.Spec.Clone()), serr: serr}
		}
	}
	if serr != nil {
		want = current.Spec.Clone()
		if a.nodeSelectorBad {
			return wanted{spec: p.keepUpdated(current, want), asked: asked, serr: serr}
		}
		want.Targets = p.targets(logger, nodes, set, a.nodeSelector)
		want.TargetGroup = ""
	}
	return wanted{spec: p.keepUpdated(current, want), grouped: true, sel: a.nodeSelector, asked: asked, serr: serr}
}

// keepUpdated is want without what UpdateLoadBalancer never changes: internal, and the
// settings that only a replacement changes.
func (p *planner) keepUpdated(current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	want.Internal = current.Spec.Internal
	p.settings.keepReplaced(current.Spec, &want)
	return want
}

// replaces reports whether writing want onto current, the Service's load balancer,
// takes a new load balancer with a new address: a switch between internal and public, or
// a setting the cloud changes only that way (Settings.replaced). With keep-on-delete,
// that is an error saying what to do: ccmkit then deletes none.
func (p *planner) replaces(logger klog.Logger, svc *corev1.Service, current *cloudapi.LoadBalancer, want cloudapi.LoadBalancerSpec) (bool, error) {
	name := p.settings.replaced(current.Spec, want)
	if current.Spec.Internal == want.Internal && name == "" {
		return false, nil
	}
	keep, err := p.intents.keepOnDelete(svc)
	if err != nil {
		return false, err
	}
	setTo := p.intents.annotation(svc, AnnotationKeepOnDelete).setTo(p.prefix, AnnotationKeepOnDelete, `"false"`)
	if current.Spec.Internal != want.Internal {
		if keep {
			return false, fmt.Errorf("load balancer %s is %s, and annotation %s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s to replace it, or set %s back",
				current.ID, reach(current.Spec.Internal), p.intents.key(svc, AnnotationInternal), reach(want.Internal), setTo, p.intents.key(svc, AnnotationInternal))
		}
		logger.Info("Replacing load balancer: internal and public cannot be switched in place", "loadBalancer", current.ID, "internal", want.Internal)
		return true, nil
	}
	if keep {
		return false, fmt.Errorf("load balancer %s has %s %s, and annotation %s asks for %s, which takes a new load balancer with a new address: with keep-on-delete, ccmkit deletes none; set annotation %s to replace it, or set %s back",
			current.ID, name, quote.Value(current.Spec.SettingValues[name]), p.intents.key(svc, name), quote.Value(want.SettingValues[name]), setTo, p.intents.key(svc, name))
	}
	logger.Info("Replacing load balancer: the cloud cannot change this setting in place", "loadBalancer", current.ID, "setting", name, "from", quote.Text(current.Spec.SettingValues[name]), "to", quote.Text(want.SettingValues[name]))
	return true, nil
}

// readiness is notReady, then, for a Service of a share, what keeps the share's load
// balancer lb from serving it (unserved; asked as there).
func (p *planner) readiness(svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer, asked []cloudapi.Listener) error {
	if err := notReady(svc, lb); err != nil {
		return err
	}
	return p.unserved(svc, owner, lb, asked)
}

// join is what the Service, of the share owner, makes of the share's load balancer
// current (nil: none yet), given want, the load balancer the Service asks for (its
// listeners, and cloudapi.TagShareNodes, see shareNodes), and carry, the listeners of a
// duplicate of current about to be deleted: plan.Join decides, join reports. It records
// what the Service asks for among the share's members. A Service that disagrees with the
// share gets an error matching ErrShareConflict (and a Warning event naming the other,
// once per change), and nothing is to be written; a port another Service has is left
// out, with a Warning event naming it. remember records the Service among the share's
// members (its own sync; a node sync's Service may be out of date).
func (p *planner) join(logger klog.Logger, svc *corev1.Service, owner string, want cloudapi.LoadBalancerSpec, current *cloudapi.LoadBalancer, remember bool, carry ...cloudapi.Listener) (cloudapi.LoadBalancerSpec, error) {
	uid := string(svc.UID)
	known := p.shares.others(owner, uid)
	j := plan.Join(plan.JoinInput{UID: uid, Want: want, Current: current, Carry: carry, Known: known, Same: p.cmp.same})
	j.Me.Name = svc.Namespace + "/" + svc.Name
	if remember {
		p.shares.join(owner, uid, j.Me)
	}
	share := strings.TrimPrefix(owner, shareOwnerPrefix)
	if j.Disagrees != "" {
		err := fmt.Errorf("service %s/%s cannot join the load balancer of its share %s: it asks for other addresses, targets, health check, source ranges or settings than %s; every Service of a share must ask for the same beside its ports: %w",
			svc.Namespace, svc.Name, share, j.Disagrees, ErrShareConflict)
		if p.report.changed(svc, reasonShareConflict, err.Error()) {
			logger.Info("Not adding the Service to its share's load balancer: it disagrees with another Service of the share", "other", j.Disagrees)
			p.report.event(svc, corev1.EventTypeWarning, reasonShareConflict, err.Error())
		}
		return cloudapi.LoadBalancerSpec{}, err
	}
	msg := ""
	if len(j.Taken) > 0 {
		msg = fmt.Sprintf("Not adding port(s) %s to the load balancer of share %s: another Service of the share has them; choose other ports", heldText(known, j.Taken), share)
	}
	if p.report.changed(svc, reasonShareConflict, msg) {
		logger.Info("Not adding ports another Service of the share has", "ports", len(j.Taken))
		p.report.event(svc, corev1.EventTypeWarning, reasonShareConflict, msg)
	}
	return j.Spec, nil
}

// heldText names the ports of held and their holders for a message: "80/TCP (Service
// ns/name)", or the holder's UID when it is not a member this process synced (known).
func heldText(known map[string]plan.Member, held []plan.Held) string {
	out := make([]string, len(held))
	for i, h := range held {
		who := "Service with UID " + h.Holder
		if m, ok := known[h.Holder]; ok {
			who = "Service " + m.Name
		}
		out[i] = fmt.Sprintf("%d/%s (%s)", h.Listener.Port, h.Listener.Protocol, who)
	}
	return strings.Join(out, ", ")
}

// unserved returns an error matching ErrPortsTaken, naming the holders, when the Service
// is a member of the share owner and another Service holds every port it asks for on lb,
// the share's load balancer as written (plan.Unserved); nil otherwise, and for a Service
// in no share. What it asks for is asked (a node sync's reading of the Service, which is
// no member's record), else its record among the share's members.
func (p *planner) unserved(svc *corev1.Service, owner string, lb *cloudapi.LoadBalancer, asked []cloudapi.Listener) error {
	if !isShare(owner) {
		return nil
	}
	uid := string(svc.UID)
	me, ok := plan.Member{Listeners: asked, Agreed: true}, asked != nil
	if !ok {
		me, ok = p.shares.member(owner, uid)
	}
	if !ok {
		return nil
	}
	held := plan.Unserved(uid, me, *lb)
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("service %s/%s is not served by the load balancer %s of its share %s: its port(s) %s are another Service's; it gets each in the write that frees it, or choose other ports: %w",
		svc.Namespace, svc.Name, lb.ID, strings.TrimPrefix(owner, shareOwnerPrefix), heldText(p.shares.others(owner, uid), held), ErrPortsTaken)
}
