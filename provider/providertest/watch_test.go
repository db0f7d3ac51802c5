package providertest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/provider/providertest"
)

// WatchesStarted closes its channel once every resource named is watched, as many times as
// it is named, and not before.
func TestWatchesStarted(t *testing.T) {
	kube := kubefake.NewClientset()
	started := providertest.WatchesStarted(kube, "services", "nodes", "nodes")
	closed := func() bool {
		select {
		case <-started:
			return true
		default:
			return false
		}
	}
	_, err := kube.CoreV1().Nodes().Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Services("").Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.False(t, closed(), "one of the two Node watches")
	_, err = kube.CoreV1().Nodes().Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.True(t, closed(), "each resource watched as often as named")
	_, err = kube.CoreV1().Nodes().Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err, "a watch after the channel closed")
}
