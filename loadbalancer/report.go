package loadbalancer

import (
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
// warnings as events (reportUnknown), the errors returned as the Service's error. It
// returns the parsed annotations too, as far as they are well-formed.
func (l *LoadBalancer) desired(logger klog.Logger, svc *corev1.Service, nodes []*corev1.Node, current *cloudapi.LoadBalancer) (cloudapi.LoadBalancerSpec, parsedAnnotations, error) {
	spec, a, ps := translate(translation{
		svc:       svc,
		current:   current,
		targets:   func(sel labels.Selector) []string { return l.targets(logger, nodes, sel) },
		clusterID: l.opts.ClusterID, prefix: l.opts.AnnotationPrefix,
		declarations: l.opts.Settings, adapterDefaults: l.adapterDefaults, shape: l.opts.Shape,
	})
	l.reportUnknown(logger, svc, ps.unknownKeys())
	return spec, a, ps.err(svc)
}

// reportUnknown logs the annotation keys under the prefix that nothing reads (probable
// typos), and records a Warning event UnknownAnnotation on the Service when they differ
// from those it last reported for it: once per change, not on every resync.
func (l *LoadBalancer) reportUnknown(logger klog.Logger, svc *corev1.Service, unknown []string) {
	joined := strings.Join(unknown, ", ")
	uid := string(svc.UID)
	l.mu.Lock()
	last, seen := l.unknown[uid]
	switch {
	case joined == "":
		delete(l.unknown, uid)
	case joined != last || !seen:
		l.unknown[uid] = joined
	}
	l.mu.Unlock()
	if joined == "" || joined == last {
		return
	}
	keys := quote.Text(joined) // keys a user typed: bounded, in the log line and the event
	logger.Info("Ignoring unknown load balancer annotations; a typo?", "annotations", keys, "prefix", l.opts.AnnotationPrefix)
	l.event(svc, corev1.EventTypeWarning, "UnknownAnnotation", fmt.Sprintf(
		"Ignoring annotation %s: neither ccmkit nor the cloud's adapter reads it under the prefix %s (a typo?); see the annotation reference",
		keys, l.opts.AnnotationPrefix))
}

// event records an event on the Service when there is a recorder.
func (l *LoadBalancer) event(svc *corev1.Service, eventType, reason, message string) {
	if l.opts.Recorder != nil {
		l.opts.Recorder.Event(svc, eventType, reason, message)
	}
}
