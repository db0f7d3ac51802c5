package soak

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// The load balancers list the Services (whether a share has another Service): the
	// world's.
	kube.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		list := &corev1.ServiceList{}
		for _, name := range s.w.serviceNames() {
			list.Items = append(list.Items, *s.w.service(name))
		}
		return true, list, nil
	})
	kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		cur := s.w.service(p.GetName())
		if cur == nil {
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
		return true, s.w.service(p.GetName()), nil
	})
	return kube
}
