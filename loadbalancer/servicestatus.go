package loadbalancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
)

// tell writes on the Service what a call of the service controller's (EnsureLoadBalancer,
// UpdateLoadBalancer, EnsureLoadBalancerDeleted, and GetLoadBalancer on its way to
// EnsureLoadBalancerDeleted) found out, o, through Options.Services:
// the load balancer's cloud ID in the annotation StatusAnnotationLoadBalancerID and the
// condition ConditionLoadBalancerReady in its status. Each is written only when it differs
// from what the Service has (or, when the Service is the one the last writes were based
// on, as in a cache that has not seen them yet, from what they wrote), so that a converged
// Service costs no Kubernetes API write. A condition whose message alone changes (an
// error that repeats with another Retry-After) is written at most once per
// minRepeatInterval; its lastTransitionTime changes only when its status does. It records a
// Warning event CloudThrottled when the cloud throttled the call (see throttled). A
// failed write is logged, never the call's error, and holds the Service's writes for
// minRepeatInterval. svc is not changed.
func (r *reporter) tell(ctx context.Context, svc *corev1.Service, note *throttlenote.Note, o outcome) {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc))
	if errors.Is(o.err, cloudapi.ErrThrottled) || note.Count() > 0 {
		r.throttled(logger, svc, o.err)
	}
	if o.cleanup && o.err == nil && svc.UID != "" {
		defer r.forget(string(svc.UID)) // after the writes below: it wants no load balancer
	}
	if r.services == nil || svc.UID == "" || o.cleanup && o.err != nil {
		return
	}
	services := r.services.Services(svc.Namespace)
	if services == nil {
		return
	}
	uid := string(svc.UID)
	defer r.lock(uid)() // one call's writes at a time per Service
	have := meta.FindStatusCondition(svc.Status.Conditions, ConditionLoadBalancerReady)
	r.mu.Lock()
	last := r.told[uid]
	r.mu.Unlock()
	now := r.clock.Now()
	if now.Before(last.failedAt.Add(minRepeatInterval)) {
		logger.V(4).Info("Not writing on the Service for a while after a write failed")
		return
	}
	// next is what the Service has after this call's writes, if it wrote; failed stops
	// the writes (see told.failedAt).
	wrote, failed := false, false
	next := told{basedOn: svc.ResourceVersion, annotation: svc.Annotations[StatusAnnotationLoadBalancerID], condition: have}
	stale := svc.ResourceVersion != "" && svc.ResourceVersion == last.basedOn // the last writes are not in svc yet
	next.messageAt = last.messageAt
	if stale {
		next = last
	}

	if o.known || o.cleanup {
		want := told{annotation: o.id}
		if o.cleanup {
			want.annotation = ""
		}
		if next.annotation != want.annotation {
			var value any // null removes the annotation
			if want.annotation != "" {
				value = want.annotation
			}
			applied, err := r.patch(ctx, logger, services, svc, types.MergePatchType, "", map[string]any{
				"metadata": map[string]any{"uid": svc.UID, "annotations": map[string]any{StatusAnnotationLoadBalancerID: value}},
			})
			failed = err != nil
			if applied {
				next.annotation, wrote = want.annotation, true
			}
		}
	}

	var cond any // what the status patch writes: the condition, or its removal
	switch want := r.condition(svc, next.condition, o); {
	case want == nil && next.condition != nil:
		cond = map[string]any{"type": ConditionLoadBalancerReady, "$patch": "delete"}
	case want != nil && !sameCondition(next.condition, want):
		cond = want
	case want != nil && next.condition.Message != want.Message && !now.Before(next.messageAt.Add(minRepeatInterval)):
		// Only the message changed (a Retry-After or an attempt count in an error that
		// repeats): written at most once per minRepeatInterval.
		cond = want
	}
	if cond != nil && !failed {
		applied, err := r.patch(ctx, logger, services, svc, types.StrategicMergePatchType, "status", map[string]any{
			"metadata": map[string]any{"uid": svc.UID},
			"status":   map[string]any{"conditions": []any{cond}},
		})
		failed = err != nil
		if applied {
			next.condition, _ = cond.(*metav1.Condition)
			next.messageAt, wrote = now, true
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case failed:
		if wrote && svc.ResourceVersion != "" {
			last = next
		}
		last.failedAt = now
		r.told[uid] = last
	case wrote && !o.cleanup && svc.ResourceVersion != "":
		r.told[uid] = next
	}
}

// outcome is what one call of the service controller's found out about the Service's load
// balancer.
type outcome struct {
	// id is the load balancer's cloud ID when known is true; "" then means the Service has
	// none. When known is false, the annotation is left as it is.
	id    string
	known bool
	// cleanup says that the call is EnsureLoadBalancerDeleted, or GetLoadBalancer finding
	// none for a Service that wants none: without an error, the annotation and the
	// condition are removed; with one, nothing is written.
	cleanup bool
	// err is the call's error; for EnsureLoadBalancer and UpdateLoadBalancer, notReady is
	// what keeps a load balancer without error from being ready.
	err, notReady error
}

// told is what a Service has after tell's last writes to it.
type told struct {
	// basedOn is the resourceVersion of the Service the writes were based on.
	basedOn string
	// annotation is the value of StatusAnnotationLoadBalancerID written ("": none).
	annotation string
	// condition is the condition written; nil for none, or when it was removed.
	condition *metav1.Condition
	// messageAt is when the condition was last written.
	messageAt time.Time
	// failedAt is when a write last failed (the API server refused it, or did not
	// answer): no write is tried for minRepeatInterval after it, so that a missing grant
	// or an API server in trouble costs no refused write per sync.
	failedAt time.Time
}

// condition returns the condition ConditionLoadBalancerReady that o calls for (nil: none),
// have being the Service's: its lastTransitionTime is have's when the status is the same.
func (r *reporter) condition(svc *corev1.Service, have *metav1.Condition, o outcome) *metav1.Condition {
	if o.cleanup {
		return nil
	}
	c := &metav1.Condition{Type: ConditionLoadBalancerReady, Status: metav1.ConditionFalse, ObservedGeneration: svc.Generation}
	err := o.err
	if err == nil {
		err = o.notReady
	}
	var annotation *AnnotationError
	var retry *api.RetryError
	switch {
	case err == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonProvisioned, "The load balancer is ready"
		if o.known && o.id != "" {
			c.Message = fmt.Sprintf("Load balancer %s is ready", o.id)
		}
	case errors.Is(err, ErrTakeoverRefused) && !errors.As(err, &annotation):
		c.Reason = ReasonTakeoverRefused
	case errors.Is(err, ErrOwnedElsewhere):
		c.Reason = ReasonOwnedElsewhere
	case errors.Is(err, ErrPortsTaken):
		c.Reason = ReasonPortsTaken
	case errors.Is(err, ErrCreationHeld):
		c.Reason = ReasonCreationHeld
	case errors.As(err, &annotation):
		c.Reason = ReasonAnnotationError
	case errors.As(err, &retry):
		c.Reason = ReasonProvisioning
	case errors.Is(err, cloudapi.ErrThrottled):
		c.Reason = ReasonThrottled
	case errors.Is(err, cloudapi.ErrInvalidRequest), errors.Is(err, cloudapi.ErrConflict):
		c.Reason = ReasonCloudRefused
	default:
		c.Reason = ReasonSyncFailed
	}
	if err != nil {
		c.Message = quote.Text(err.Error())
	}
	c.LastTransitionTime = metav1.NewTime(r.clock.Now())
	if have != nil && have.Status == c.Status {
		c.LastTransitionTime = have.LastTransitionTime
	}
	return c
}

// sameCondition reports whether have has want's status, reason and observed generation
// (the message aside, see tell; lastTransitionTime aside, which condition keeps while the
// status is the same).
func sameCondition(have, want *metav1.Condition) bool {
	return have != nil && have.Status == want.Status && have.Reason == want.Reason && have.ObservedGeneration == want.ObservedGeneration
}

// patch sends one patch of the Service (of its subresource, if not ""), with the Service's
// UID as a precondition, and reports whether it was applied. A failure is logged and
// returned, for tell to hold its writes; a Service already gone needs nothing written and
// is no failure.
func (r *reporter) patch(ctx context.Context, logger klog.Logger, services typedcorev1.ServiceInterface, svc *corev1.Service, pt types.PatchType, subresource string, body map[string]any) (applied bool, _ error) {
	data, err := json.Marshal(body)
	if err == nil {
		var subresources []string
		if subresource != "" {
			subresources = append(subresources, subresource)
		}
		_, err = services.Patch(ctx, svc.Name, pt, data, metav1.PatchOptions{FieldManager: fieldManager}, subresources...)
	}
	switch {
	case apierrors.IsNotFound(err):
		logger.V(4).Info("Not writing on a Service that is gone", "subresource", subresource)
		return false, nil
	case err != nil:
		logger.Error(err, "Could not write the load balancer's ID or condition on the Service; a sync tries again in a minute", "subresource", subresource)
		return false, err
	}
	return true, nil
}

// throttled records a Warning event CloudThrottled on the Service, at most one per
// minRepeatInterval per Service (by Options.Clock), so that a cloud that throttles
// every sync makes no storm of events. err is the call's error, when it failed.
func (r *reporter) throttled(logger klog.Logger, svc *corev1.Service, err error) {
	uid := string(svc.UID)
	now := r.clock.Now()
	r.mu.Lock()
	last, seen := r.throttledAt[uid]
	due := !seen || now.Sub(last) >= minRepeatInterval
	if due {
		r.throttledAt[uid] = now
	}
	r.mu.Unlock()
	logger.V(2).Info("The cloud throttled the calls of the Service's sync", "failed", err != nil, "eventRecorded", due)
	if !due {
		return
	}
	msg := "The cloud throttled the calls for this Service's load balancer; ccmkit waited as the cloud asked"
	if err != nil {
		msg = "The cloud throttled the calls for this Service's load balancer; the sync is retried: " + quote.Text(err.Error())
	}
	r.event(svc, corev1.EventTypeWarning, EventCloudThrottled, msg)
}

// minRepeatInterval is the least time between two CloudThrottled events on one Service,
// between two writes of its condition that change only the message, and from a failed
// write on it to the next.
const minRepeatInterval = time.Minute

// StatusAnnotationLoadBalancerID is the annotation in which the LoadBalancer writes the
// cloud ID of the Service's load balancer, when Options.Services is set. It is ccmkit's
// output, never its input: a value someone else sets or changes is corrected by the next
// sync that knows the load balancer, and removed once the load balancer is deleted. It is
// outside DefaultAnnotationPrefix (to adopt a load balancer by ID, a Service sets
// AnnotationLoadBalancerID under the prefix).
const StatusAnnotationLoadBalancerID = "status.ccmkit.io/load-balancer-id"

// ConditionLoadBalancerReady is the type of the condition in a Service's status.conditions
// that the LoadBalancer keeps, when Options.Services is set: True (reason
// ReasonProvisioned) when the load balancer is ready, False with one of the other Reason
// constants when not. It is removed when the Service's load balancer is deleted.
const ConditionLoadBalancerReady = "LoadBalancerReady"

// The reasons of the condition ConditionLoadBalancerReady.
const (
	// ReasonProvisioned: the load balancer is active and published in the status.
	ReasonProvisioned = "Provisioned"
	// ReasonProvisioning: the cloud is still provisioning the load balancer.
	ReasonProvisioning = "Provisioning"
	// ReasonAnnotationError: an annotation's value is refused (an *AnnotationError).
	ReasonAnnotationError = "AnnotationError"
	// ReasonCloudRefused: the cloud refused a request (cloudapi.ErrInvalidRequest, such as
	// a quota, or cloudapi.ErrConflict).
	ReasonCloudRefused = "CloudRefused"
	// ReasonThrottled: the cloud throttled the calls (cloudapi.ErrThrottled).
	ReasonThrottled = "Throttled"
	// ReasonOwnedElsewhere: the load balancer named for adoption is owned elsewhere
	// (ErrOwnedElsewhere).
	ReasonOwnedElsewhere = "OwnedElsewhere"
	// ReasonPortsTaken: the Service is in a share, and another Service of the share has
	// every port it asks for (ErrPortsTaken); the message names the holders.
	ReasonPortsTaken = "PortsTaken"
	// ReasonSyncFailed: any other failure; the message says which.
	ReasonSyncFailed = "SyncFailed"
)

// EventCloudThrottled is the reason of the Warning event on a Service whose sync the cloud
// throttled: a throttled answer, or a wait for the hold one set. One Service gets at most
// one such event per minRepeatInterval.
const EventCloudThrottled = "CloudThrottled"

// fieldManager is the field manager of the LoadBalancer's writes on Services.
const fieldManager = "ccmkit-loadbalancer"
