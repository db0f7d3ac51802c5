package nodecontrollers

import (
	"fmt"
	"reflect"
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
)

// NewNode returns the upstream cloud node controller. workers initialize new Nodes and
// statusWorkers refresh the addresses of initialized ones; where the constructor takes one
// count for both (v0.35), the larger of the two is passed.
func NewNode(nodes coreinformers.NodeInformer, kube kubernetes.Interface, cloud cloudprovider.Interface,
	statusUpdateFrequency time.Duration, workers, statusWorkers int) (*nodecontroller.CloudNodeController, error) {
	fixed := []any{nodes, kube, cloud, statusUpdateFrequency}
	counts := []int{workers, statusWorkers}
	if reflect.TypeOf(nodecontroller.NewCloudNodeController).NumIn() == len(fixed)+1 {
		counts = []int{max(workers, statusWorkers)}
	}
	return call[*nodecontroller.CloudNodeController](nodecontroller.NewCloudNodeController, fixed, counts)
}

// NewLifecycle returns the upstream cloud node lifecycle controller, checking Nodes every
// period; workers is its concurrency where the constructor takes one (from v0.37), and
// is otherwise unused (the controller then checks Nodes one at a time).
func NewLifecycle(nodes coreinformers.NodeInformer, kube kubernetes.Interface, cloud cloudprovider.Interface,
	period time.Duration, workers int) (*nodelifecycle.CloudNodeLifecycleController, error) {
	return call[*nodelifecycle.CloudNodeLifecycleController](nodelifecycle.NewCloudNodeLifecycleController,
		[]any{nodes, kube, cloud, period}, []int{workers})
}

// call calls the constructor fn with the fixed arguments followed by as many of counts as
// it takes, each converted to its integer parameter type, and returns its (T, error).
func call[T any](fn any, fixed []any, counts []int) (T, error) {
	var zero T
	f := reflect.ValueOf(fn)
	t := f.Type()
	extra := t.NumIn() - len(fixed)
	if extra < 0 || extra > len(counts) || t.NumOut() != 2 {
		return zero, fmt.Errorf("unsupported constructor %s: expected %d fixed arguments and up to %d worker counts", t, len(fixed), len(counts))
	}
	args := make([]reflect.Value, 0, t.NumIn())
	for i, a := range fixed {
		v := reflect.ValueOf(a)
		switch {
		case a == nil:
			v = reflect.Zero(t.In(i)) // a nil interface: the constructor reports it
		case !v.Type().AssignableTo(t.In(i)):
			return zero, fmt.Errorf("unsupported constructor %s: argument %d is %s, not %s", t, i, t.In(i), v.Type())
		}
		args = append(args, v)
	}
	for i := range extra {
		in := t.In(len(fixed) + i)
		if k := in.Kind(); k < reflect.Int || k > reflect.Int64 {
			return zero, fmt.Errorf("unsupported constructor %s: worker argument %d is %s", t, i, in)
		}
		args = append(args, reflect.ValueOf(counts[i]).Convert(in))
	}
	out := f.Call(args)
	if err, _ := out[1].Interface().(error); err != nil {
		return zero, err
	}
	ctrl, ok := out[0].Interface().(T)
	if !ok {
		return zero, fmt.Errorf("unsupported constructor %s: returns %s", t, t.Out(0))
	}
	return ctrl, nil
}
