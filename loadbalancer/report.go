package loadbalancer

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// desired is translate for the LoadBalancer's calls: the spec the Service asks for from
// nodes (current: the load balancer found, or nil), with its problems reported: the
// warnings as events (reportUnknown), the errors returned as the Service's error, and
// annotations that disagree with their aliases as an event too (reportConflicts). It
// returns the parsed annotations too, as far as they are well-formed.
func (l *LoadBalancer) desired(logger klog.Logger, svc *corev1.Service, owner string, nodes []*corev1.Node, current *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, parsedAnnotations, error) {
	spec, a, ps := translate(translation{
		svc:       svc,
		owner:     owner,
		current:   current,
		targets:   func(sel labels.Selector) []string { return l.targets(logger, nodes, sel) },
		clusterID: l.opts.ClusterID, prefix: l.opts.AnnotationPrefix,
		declarations: l.opts.Settings, adapterDefaults: l.adapterDefaults, aliases: l.opts.Aliases, shape: l.opts.Shape,
	})
	l.reportUnknown(logger, svc, ps.unknownKeys())
	l.reportConflicts(logger, svc, ps)
	return spec, a, ps.err(svc)
}

// reportUnknown logs the annotation keys under the prefix that nothing reads (probable
// typos), and records a Warning event UnknownAnnotation on the Service when they differ
// from those it last reported for it: once per change, not on every resync.
func (l *LoadBalancer) reportUnknown(logger klog.Logger, svc *corev1.Service, unknown []string) {
	joined := strings.Join(unknown, ", ")
	if !l.changed(svc, reasonUnknownAnnotation, joined) {
		return
	}
	keys := quote.Text(joined) // keys a user typed: bounded, in the log line and the event
	prefixes := strings.Join(append([]string{l.opts.AnnotationPrefix}, l.opts.Aliases.Prefixes...), " or ")
	logger.Info("Ignoring unknown load balancer annotations; a typo?", "annotations", keys, "prefix", prefixes)
	l.event(svc, corev1.EventTypeWarning, reasonUnknownAnnotation, fmt.Sprintf(
		"Ignoring annotation %s: neither ccmkit nor the cloud's adapter reads it under the prefix %s (a typo?); see the annotation reference",
		keys, prefixes))
}

// reportConflicts records a Warning event ConflictingAnnotations on the Service for the
// annotations of ps that disagree with another spelling of theirs (ErrConflictingAnnotations:
// each names both keys and both values), once per change, as reportUnknown does. The
// Service's error says it too: the sync fails until they agree.
func (l *LoadBalancer) reportConflicts(logger klog.Logger, svc *corev1.Service, ps problems) {
	var msgs []string
	for _, p := range ps {
		if errors.Is(p.err, ErrConflictingAnnotations) {
			msgs = append(msgs, p.err.Error()) // an AnnotationError: quoted and bounded
		}
	}
	joined := strings.Join(msgs, "; ")
	if !l.changed(svc, reasonConflictingAnnotations, joined) {
		return
	}
	logger.Info("Refusing to sync: two spellings of one annotation disagree", "conflicts", len(msgs))
	l.event(svc, corev1.EventTypeWarning, reasonConflictingAnnotations, "Not syncing the load balancer until these annotations agree: "+joined)
}

// The reasons of the Warning events about a Service's annotations.
const (
	reasonUnknownAnnotation      = "UnknownAnnotation"
	reasonConflictingAnnotations = "ConflictingAnnotations"
)

// changed records what (empty: nothing) as the Service's last report of reason, and
// reports whether it is something new to report.
func (l *LoadBalancer) changed(svc *corev1.Service, reason, what string) bool {
	k := reported{uid: string(svc.UID), reason: reason}
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.reported[k]
	if what == "" {
		delete(l.reported, k)
	} else {
		l.reported[k] = what
	}
	return what != "" && what != last
}

// reported names one report of annotation problems on a Service: its UID and the event's
// reason.
type reported struct{ uid, reason string }

// event records an event on the Service when there is a recorder.
func (l *LoadBalancer) event(svc *corev1.Service, eventType, reason, message string) {
	if l.opts.Recorder != nil {
		l.opts.Recorder.Event(svc, eventType, reason, message)
	}
}
