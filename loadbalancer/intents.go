package loadbalancer

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// intents reads what a Service asks of its load balancer from its annotations, as the
// LoadBalancer reads them (its prefix, the adapter's settings and aliases), and whom its
// load balancer belongs to (owner: the Service, or its share), and whether a share has
// other Services (othersInShare, from the API server): the cluster's half of the read
// step of every call; the snapshot is the cloud's.
type intents struct {
	prefix        string
	settings      Settings
	aliases       Aliases
	keepByDefault bool // Options.KeepOnDelete
	shareAcross   bool // Options.ShareAcrossNamespaces
	// services are the API server's Services (Options.Services; nil: only what this
	// process synced is known), serves those this LoadBalancer serves (Options.Serves).
	services typedcorev1.ServicesGetter
	serves   func(*corev1.Service) bool
}

// annotation returns the Service's annotation name alone, parsed (zero when it is absent,
// malformed or spelled twice with values that disagree: desired reports those).
func (in *intents) annotation(svc *corev1.Service, name string) parsedAnnotations {
	a, _ := in.only(svc, name)
	return a
}

// key returns the key the Service spells the annotation name with, for messages: its alias,
// else its key under the prefix.
func (in *intents) key(svc *corev1.Service, name string) string {
	return in.annotation(svc, name).key(in.prefix, name)
}

// only parses the Service's annotation name alone, in every spelling (its key under the
// prefix and its aliases), and returns what is wrong with it.
func (in *intents) only(svc *corev1.Service, name string) (parsedAnnotations, []*AnnotationError) {
	spelled := map[string]string{}
	for _, s := range in.aliases.spellings(in.prefix, name, svc.Annotations) {
		spelled[s.key] = s.value
	}
	a, _, errs := in.parse(spelled)
	return a, errs
}

// parse is parseAnnotations with the LoadBalancer's prefix, settings and aliases.
func (in *intents) parse(annotations map[string]string) (parsedAnnotations, []string, []*AnnotationError) {
	return parseAnnotations(in.prefix, in.settings, in.aliases, annotations)
}

// keepOnDelete reports whether the Service's load balancer is kept in the cloud when the
// Service no longer wants it: its keep-on-delete annotation, else Options.KeepOnDelete.
// While it is true, a change that only a replacement can make (internal, a setting
// declared Replace) is an error rather than a replacement.
func (in *intents) keepOnDelete(svc *corev1.Service) (bool, error) {
	a, errs := in.only(svc, AnnotationKeepOnDelete)
	if len(errs) > 0 {
		return false, fmt.Errorf("service %s/%s: %w; nothing is deleted until it says whether to keep the load balancer", svc.Namespace, svc.Name, errs[0])
	}
	if a.keepOnDelete == nil {
		return in.keepByDefault, nil
	}
	return *a.keepOnDelete, nil
}

// annotatedHostname returns the Service's hostname annotation, or "" when it has none or
// a malformed one (which desired reports).
func (in *intents) annotatedHostname(svc *corev1.Service) string {
	return in.annotation(svc, AnnotationHostname).hostname
}

// owner returns whom the Service's load balancer belongs to: its share when its share
// annotation names one (see ShareKey), else the Service itself (its UID). A malformed
// share annotation is an error: which load balancer is the Service's is then unclear, and
// nothing is read or written for it.
func (in *intents) owner(svc *corev1.Service) (string, error) {
	uid, err := serviceUID(svc)
	if err != nil {
		return "", err
	}
	share, err := in.shareOf(svc)
	if err != nil {
		return "", fmt.Errorf("%w; nothing is read or written for it until it says which share it is in", err)
	}
	if share == "" {
		return uid, nil
	}
	return shareOwnerPrefix + share, nil
}

// ownerOnDelete is owner for a Service that wants no load balancer: its UID when its
// share annotation is malformed (its listeners on any share's load balancer are found by
// leaveOthers all the same), so that a malformed value never holds a deletion.
func (in *intents) ownerOnDelete(svc *corev1.Service) string {
	if owner, err := in.owner(svc); err == nil {
		return owner
	}
	return string(svc.UID)
}

// shareKey is the value of cloudapi.TagShare for the share name of a Service in
// namespace: "namespace/name", or "*/name" when Options.ShareAcrossNamespaces makes a
// share's name the same in every namespace.
func (in *intents) shareKey(namespace, name string) string {
	if in.shareAcross {
		namespace = "*"
	}
	return namespace + "/" + name
}

// shareOf returns the key of the Service's share (see LoadBalancer.ShareKey), "" for none.
func (in *intents) shareOf(svc *corev1.Service) (string, error) {
	a, errs := in.only(svc, AnnotationShare)
	if len(errs) > 0 {
		return "", fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, errs[0])
	}
	if a.share == "" {
		return "", nil
	}
	return in.shareKey(svc.Namespace, a.share), nil
}

// othersInShare reports whether a Service of the share owner other than svc exists:
// with Options.Services, one of type LoadBalancer that this LoadBalancer serves
// (Options.Serves), not being deleted, whose share annotation names the share (the API server's word: a Service not synced yet counts);
// without it, a member this LoadBalancer synced (members). The Services are looked for in the
// share's own scope (shareScope), whoever svc is: a sync of a Service of another
// namespace or share may revisit the share's load balancer. An error of the API server
// is returned: the caller deletes nothing then.
func (in *intents) othersInShare(ctx context.Context, svc *corev1.Service, owner string, members *shareBook) (bool, error) {
	var services []corev1.Service
	asked := false
	if in.services != nil {
		if api := in.services.Services(shareScope(owner)); api != nil {
			list, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, fmt.Errorf("listing the Services that may share load balancer of share %s: %w", strings.TrimPrefix(owner, shareOwnerPrefix), err)
			}
			services, asked = list.Items, true
		}
	}
	if !asked {
		return len(members.others(owner, string(svc.UID))) > 0, nil
	}
	for i := range services {
		o := &services[i]
		if o.UID == svc.UID || o.DeletionTimestamp != nil || o.Spec.Type != corev1.ServiceTypeLoadBalancer || (in.serves != nil && !in.serves(o)) {
			continue
		}
		if theirs, err := in.owner(o); err == nil && theirs == owner {
			return true, nil
		}
	}
	return false, nil
}
