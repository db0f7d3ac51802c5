package harness

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// NodeSpec is a Node as a kubelet started with --cloud-provider=external registers it.
type NodeSpec struct {
	// Name is the Node's name, the instance's name in the cloud.
	Name string
	// ProvidedIP is the kubelet's --node-ip (the alpha.kubernetes.io/provided-node-ip
	// annotation); empty for none. A comma-separated pair for dual-stack.
	ProvidedIP string
	// PodCIDRs are the Node's pod CIDRs (what the node IPAM controller would assign).
	PodCIDRs []string
	// NotReady registers the Node with Ready=False, as after its kubelet stopped posting.
	NotReady bool
}

// RegisterNode creates the Node the way a kubelet with --cloud-provider=external does:
// with the uninitialized taint and no provider ID, addresses or topology labels, which
// the cloud node controller fills in. Its Ready condition is set as spec says.
func RegisterNode(ctx context.Context, client kubernetes.Interface, spec NodeSpec) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: map[string]string{corev1.LabelHostname: spec.Name}},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if spec.ProvidedIP != "" {
		node.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: spec.ProvidedIP}
	}
	if len(spec.PodCIDRs) > 0 {
		node.Spec.PodCIDR = spec.PodCIDRs[0]
		node.Spec.PodCIDRs = spec.PodCIDRs
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("registering Node %s: %w", spec.Name, err)
	}
	return SetNodeReady(ctx, client, created.Name, !spec.NotReady)
}

// SetNodeReady sets the Node's Ready condition as its kubelet would (Ready=True) or as the
// node lifecycle controller does when the kubelet stops posting (Ready=Unknown).
func SetNodeReady(ctx context.Context, client kubernetes.Interface, name string, ready bool) (*corev1.Node, error) {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionUnknown
	}
	var out *corev1.Node
	err := retryConflict(ctx, func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Harness"}
		replaced := false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				node.Status.Conditions[i] = cond
				replaced = true
			}
		}
		if !replaced {
			node.Status.Conditions = append(node.Status.Conditions, cond)
		}
		out, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("setting Node %s Ready=%s: %w", name, status, err)
	}
	return out, nil
}

func retryConflict(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if !apierrors.IsConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Eventually polls cond every 100 ms until it returns true or ctx or timeout ends; an error
// from cond counts as "not yet" (the API or the cloud may fail for a moment), and the
// timeout's error names what was awaited and cond's last error.
func Eventually(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting %s for %s: %w (last error: %w)", timeout, what, err, last)
		}
		return fmt.Errorf("waiting %s for %s: %w", timeout, what, err)
	}
	return nil
}
