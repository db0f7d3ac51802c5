package providertest

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// WatchesStarted returns a channel closed once kube serves a watch of each of the
// resources ("services", "nodes"); a resource named n times needs n watches (two
// informers of Nodes, say: each may miss what the other saw). client-go's fake clientset drops an object created
// between an informer's list and its watch, so a test that starts informers waits for it
// before it creates the objects a controller must see: else the controller may never
// see them (a test that passes or times out by the scheduler's whim).
func WatchesStarted(kube *kubefake.Clientset, resources ...string) <-chan struct{} {
	var mu sync.Mutex
	pending := map[string]int{}
	for _, r := range resources {
		pending[r]++
	}
	left := len(resources)
	started := make(chan struct{})
	kube.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := kube.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if r := action.GetResource().Resource; pending[r] > 0 {
			pending[r]--
			if left--; left == 0 {
				close(started)
			}
		}
		return true, w, nil
	})
	return started
}
