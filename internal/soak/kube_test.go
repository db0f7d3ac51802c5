package soak

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// kube returns the clientset the provider's Initialize gets: its patches of Services (the
// load balancers' ID annotation and condition) are writes to the world, counted in
// s.res.serviceWrites; its events are dropped.
func (s *sim) kube() *kubefake.Clientset {
	kube := kubefake.NewClientset()
	// The provider's events are not checked: dropped, not stored.
	kube.PrependReactor("*", "events", func(k8stesting.Action) (bool, runtime.Object, error) { return true, &corev1.Event{}, nil })
	// The load balancers list the Services (whether a share has another Service, how many
	// Services have an address): the world's, of the namespace asked for (every one for
	// metav1.NamespaceAll).
	kube.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		list := &corev1.ServiceList{}
		for _, name := range s.w.serviceNames() {
			if svc := s.w.service(name); a.GetNamespace() == metav1.NamespaceAll || svc.Namespace == a.GetNamespace() {
				list.Items = append(list.Items, *svc)
			}
		}
		return true, list, nil
	})
	kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		cur := s.w.service(p.GetName())
		if cur == nil || cur.Namespace != p.GetNamespace() {
			return true, nil, apierrors.NewNotFound(corev1.Resource("services"), p.GetName())
		}
		original, err := json.Marshal(cur)
		if err != nil {
			return true, nil, err
		}
		patched, err := strategicpatch.StrategicMergePatch(original, p.GetPatch(), &corev1.Service{})
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		var next corev1.Service
		if err := json.Unmarshal(patched, &next); err != nil {
			return true, nil, err
		}
		if next.UID != cur.UID {
			return true, nil, apierrors.NewConflict(corev1.Resource("services"), p.GetName(), fmt.Errorf("precondition failed: UID %s, the Service's %s", next.UID, cur.UID))
		}
		s.res.serviceWrites++
		s.w.updateService(p.GetName(), func(svc *corev1.Service) {
			if p.GetSubresource() == "status" {
				svc.Status = next.Status
			} else {
				svc.Annotations = next.Annotations
			}
		})
		if p.GetSubresource() == "status" {
			s.rec.conditionWritten(s.w.service(p.GetName()))
		}
		return true, s.w.service(p.GetName()), nil
	})
	return kube
}
