package loadbalancer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// reporter is the one place that tells a Service what its syncs found out: the load
// balancer's ID and the condition ConditionLoadBalancerReady on the Service (tell), and
// events, each once per change (changed). It keeps what it last told each Service, under
// its own lock, until the Service's cleanup succeeds (forget).
type reporter struct {
	services typedcorev1.ServicesGetter // nil: nothing is written on Services
	recorder record.EventRecorder       // nil: no event
	clock    clock.PassiveClock
	lock     func(uid string) (unlock func()) // the Service's lock: one call's writes at a time
	prefixes string                           // the annotation prefixes read, for messages

	mu          sync.Mutex
	reported    map[reported]string  // what was last reported in an event about a Service (see changed)
	told        map[string]told      // by UID: what tell last wrote on the Service
	throttledAt map[string]time.Time // by UID: when the last CloudThrottled event was recorded
}

// forget forgets what the reporter remembers of the Service with UID uid.
func (r *reporter) forget(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetReports(uid)
	delete(r.told, uid)
	delete(r.throttledAt, uid)
}

// forgetReports forgets the events last reported about the Service with UID uid (its
// annotations, its share, the creation brake), so that the next sync reports them anew.
// r.mu is held.
func (r *reporter) forgetReports(uid string) {
	for _, reason := range []string{reasonUnknownAnnotation, reasonConflictingAnnotations, reasonShareConflict, ReasonCreationHeld} {
		delete(r.reported, reported{uid: uid, reason: reason})
	}
}

// unknown logs the annotation keys under the prefix that nothing reads (probable
// typos), and records a Warning event UnknownAnnotation on the Service when they differ
// from those it last reported for it: once per change, not on every resync.
func (r *reporter) unknown(logger klog.Logger, svc *corev1.Service, unknown []string) {
	joined := strings.Join(unknown, ", ")
	if !r.changed(svc, reasonUnknownAnnotation, joined) {
		return
	}
	keys := quote.Text(joined) // keys a user typed: bounded, in the log line and the event
	prefixes := r.prefixes
	logger.Info("Ignoring unknown load balancer annotations; a typo?", "annotations", keys, "prefix", prefixes)
	r.event(svc, corev1.EventTypeWarning, reasonUnknownAnnotation, fmt.Sprintf(
		"Ignoring annotation %s: neither ccmkit nor the cloud's adapter reads it under the prefix %s (a typo?); see the annotation reference",
		keys, prefixes))
}

// conflicts records a Warning event ConflictingAnnotations on the Service for the
// annotations of ps that disagree with another spelling of theirs (ErrConflictingAnnotations:
// each names both keys and both values), once per change, as unknown does. The
// Service's error says it too: the sync fails until they agree.
func (r *reporter) conflicts(logger klog.Logger, svc *corev1.Service, ps problems) {
	var msgs []string
	for _, p := range ps {
		if errors.Is(p.err, ErrConflictingAnnotations) {
			msgs = append(msgs, p.err.Error()) // an AnnotationError: quoted and bounded
		}
	}
	joined := strings.Join(msgs, "; ")
	if !r.changed(svc, reasonConflictingAnnotations, joined) {
		return
	}
	logger.Info("Refusing to sync: two spellings of one annotation disagree", "conflicts", len(msgs))
	r.event(svc, corev1.EventTypeWarning, reasonConflictingAnnotations, "Not syncing the load balancer until these annotations agree: "+joined)
}

// The reasons of the Warning events about a Service's annotations.
const (
	reasonUnknownAnnotation      = "UnknownAnnotation"
	reasonConflictingAnnotations = "ConflictingAnnotations"
)

// changed records what (empty: nothing) as the Service's last report of reason, and
// reports whether it is something new to report.
func (r *reporter) changed(svc *corev1.Service, reason, what string) bool {
	k := reported{uid: string(svc.UID), reason: reason}
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.reported[k]
	if what == "" {
		delete(r.reported, k)
	} else {
		r.reported[k] = what
	}
	return what != "" && what != last
}

// untrack forgets the events last reported about the Service with UID uid.
func (r *reporter) untrack(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetReports(uid)
}

// reported names one report of annotation problems on a Service: its UID and the event's
// reason.
type reported struct{ uid, reason string }

// event records an event on the Service when there is a recorder.
func (r *reporter) event(svc *corev1.Service, eventType, reason, message string) {
	if r.recorder != nil {
		r.recorder.Event(svc, eventType, reason, message)
	}
}
