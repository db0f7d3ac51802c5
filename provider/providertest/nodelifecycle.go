package providertest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/internal/nodecontrollers"
)

// MonitorNodes runs one pass of the upstream node lifecycle controller
// (k8s.io/cloud-provider/controllers/nodelifecycle) over the Nodes in kube with cloud, as
// its Run does every period: a NotReady Node whose instance is gone is deleted, one whose
// instance is shut down gets the shutdown taint. It builds the controller with the
// constructor of whichever supported Kubernetes minor the build has, and gives it the
// event recorder that only Run would create (the events go to a fake recorder), so that
// a test can run the controller pass by pass. It fails tb when the controller cannot be
// built.
func MonitorNodes(tb testing.TB, cloud cloudprovider.Interface, kube kubernetes.Interface) {
	tb.Helper()
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes := factory.Core().V1().Nodes()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		tb.Fatalf("listing the Nodes: %v", err)
	}
	for i := range list.Items {
		if err := nodes.Informer().GetStore().Add(&list.Items[i]); err != nil {
			tb.Fatalf("adding Node %q to the informer: %v", list.Items[i].Name, err)
		}
	}
	ctrl, err := nodecontrollers.NewLifecycle(nodes, kube, cloud, 5*time.Second, 1)
	if err != nil {
		tb.Fatalf("building the node lifecycle controller: %v", err)
	}
	if err := setRecorder(ctrl, record.NewFakeRecorder(100)); err != nil {
		tb.Fatal(err)
	}
	ctrl.MonitorNodes(context.Background())
}

// setRecorder sets the controller's unexported recorder field, which only its Run sets
// (upstream's own tests set the field directly).
func setRecorder(ctrl any, recorder record.EventRecorder) error {
	f := reflect.ValueOf(ctrl).Elem().FieldByName("recorder")
	if !f.IsValid() || !reflect.TypeOf(recorder).AssignableTo(f.Type()) {
		return fmt.Errorf("the upstream node lifecycle controller has no recorder field of type record.EventRecorder any more: update providertest.MonitorNodes")
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(recorder))
	return nil
}
