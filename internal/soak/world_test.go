package soak

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// namespace is the namespace of a Service that names none: of every Service but in a run
// with shares, whose Services are in namespaces.
const namespace = "default"

// namespaces are the namespaces of the Services of a run with shares (op.Namespace).
var namespaces = []string{namespace, "tenant"}

// firstNodePort is where the simulated API server starts allocating node ports.
const firstNodePort = 30000

// newClock returns the simulation's virtual clock. The provider's instance snapshot and
// the fake cloud read it; only the scheduler moves it, forward (advanceTo).
func newClock() *clocktesting.FakePassiveClock {
	return clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
}

// advanceTo moves clk to t, unless it is already later. Only the scheduler's goroutine
// moves the clock.
func advanceTo(clk *clocktesting.FakePassiveClock, t time.Time) {
	if t.After(clk.Now()) {
		clk.SetTime(t)
	}
}

// watcher receives the events of the world, as the informers' event handlers of the
// running cloud-controller-manager do. Events are delivered synchronously, in the order of
// the writes: the informers have no lag in the simulation.
type watcher interface {
	serviceAdded(cur *corev1.Service)
	serviceUpdated(old, cur *corev1.Service)
	nodeAdded(cur *corev1.Node)
	nodeUpdated(old, cur *corev1.Node)
	nodeDeleted(old *corev1.Node)
}

// world is the Kubernetes API server of the simulation: the Services and Nodes, the node
// port allocator, finalizers and deletion timestamps. Reads return deep copies, so no
// controller can change an object except through a write, and every write is an event.
type world struct {
	clock    *clocktesting.FakePassiveClock
	services map[string]*corev1.Service // by name: a name is unique across namespaces
	nodes    map[string]*corev1.Node    // by name
	rv       int                        // last resource version
	uids     int                        // UIDs handed out
	nodePort int32                      // last node port allocated
	watch    watcher                    // the running controllers; nil while none runs
}

func newWorld(c *clocktesting.FakePassiveClock) *world {
	return &world{clock: c, services: map[string]*corev1.Service{}, nodes: map[string]*corev1.Node{}, nodePort: firstNodePort - 1}
}

func (w *world) nextRV() string {
	w.rv++
	return fmt.Sprint(w.rv)
}

// newUID returns a fresh UID in the format of the API server's.
func (w *world) newUID() types.UID {
	w.uids++
	return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", w.uids))
}

// allocatePorts gives a LoadBalancer Service node ports (and a health check node port with
// externalTrafficPolicy Local) where it has none, and takes them from any other Service, as
// the API server does.
func (w *world) allocatePorts(svc *corev1.Service) {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
		svc.Spec.HealthCheckNodePort = 0
		return
	}
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].NodePort == 0 {
			w.nodePort++
			svc.Spec.Ports[i].NodePort = w.nodePort
		}
	}
	local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	switch {
	case local && svc.Spec.HealthCheckNodePort == 0:
		w.nodePort++
		svc.Spec.HealthCheckNodePort = w.nodePort
	case !local:
		svc.Spec.HealthCheckNodePort = 0
	}
}

// service returns a copy of the Service, or nil.
func (w *world) service(name string) *corev1.Service {
	if s, ok := w.services[name]; ok {
		return s.DeepCopy()
	}
	return nil
}

// serviceNames returns the names of all Services, sorted.
func (w *world) serviceNames() []string { return slices.Sorted(maps.Keys(w.services)) }

// serviceByUID returns a copy of the Service with the UID, or nil.
func (w *world) serviceByUID(uid types.UID) *corev1.Service {
	for _, svc := range w.services {
		if svc.UID == uid {
			return svc.DeepCopy()
		}
	}
	return nil
}

// createService stores a new Service, in namespace unless it names one; it fails when the
// name is taken, as the API server does while a Service of that name still exists (also
// while it is being deleted). The simulation keeps a name unique across namespaces.
func (w *world) createService(svc *corev1.Service) error {
	if cur, taken := w.services[svc.Name]; taken {
		return fmt.Errorf("service %s/%s already exists", cur.Namespace, svc.Name)
	}
	svc = svc.DeepCopy()
	if svc.Namespace == "" {
		svc.Namespace = namespace
	}
	svc.UID = w.newUID()
	svc.ResourceVersion = w.nextRV()
	svc.CreationTimestamp = metav1.NewTime(w.clock.Now())
	w.allocatePorts(svc)
	w.services[svc.Name] = svc
	if w.watch != nil {
		w.watch.serviceAdded(svc.DeepCopy())
	}
	return nil
}

// updateService applies change to the Service and reports whether it exists. A Service
// that is being deleted and loses its last finalizer is removed.
func (w *world) updateService(name string, change func(*corev1.Service)) bool {
	cur, ok := w.services[name]
	if !ok {
		return false
	}
	old := cur.DeepCopy()
	next := cur.DeepCopy()
	change(next)
	w.allocatePorts(next)
	next.ResourceVersion = w.nextRV()
	if next.DeletionTimestamp != nil && len(next.Finalizers) == 0 {
		delete(w.services, name) // the service controller has no delete handler
		return true
	}
	w.services[name] = next
	if w.watch != nil {
		w.watch.serviceUpdated(old, next.DeepCopy())
	}
	return true
}

// deleteService deletes the Service: at once without finalizers, else it gets a deletion
// timestamp and stays until its finalizers are removed.
func (w *world) deleteService(name string) bool {
	cur, ok := w.services[name]
	if !ok {
		return false
	}
	if len(cur.Finalizers) == 0 {
		delete(w.services, name)
		return true
	}
	if cur.DeletionTimestamp != nil {
		return true
	}
	now := metav1.NewTime(w.clock.Now())
	return w.updateService(name, func(s *corev1.Service) { s.DeletionTimestamp = &now })
}

// node returns a copy of the Node, or nil.
func (w *world) node(name string) *corev1.Node {
	if n, ok := w.nodes[name]; ok {
		return n.DeepCopy()
	}
	return nil
}

// listNodes returns copies of all Nodes, sorted by name, as a lister does.
func (w *world) listNodes() []*corev1.Node {
	out := make([]*corev1.Node, 0, len(w.nodes))
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		out = append(out, w.nodes[name].DeepCopy())
	}
	return out
}

// createNode stores a new Node, as a kubelet registering does.
func (w *world) createNode(n *corev1.Node) error {
	if _, taken := w.nodes[n.Name]; taken {
		return fmt.Errorf("node %s already exists", n.Name)
	}
	n = n.DeepCopy()
	n.UID = w.newUID()
	n.ResourceVersion = w.nextRV()
	n.CreationTimestamp = metav1.NewTime(w.clock.Now())
	w.nodes[n.Name] = n
	if w.watch != nil {
		w.watch.nodeAdded(n.DeepCopy())
	}
	return nil
}

// updateNode applies change to the Node and reports whether it exists.
func (w *world) updateNode(name string, change func(*corev1.Node)) bool {
	cur, ok := w.nodes[name]
	if !ok {
		return false
	}
	old := cur.DeepCopy()
	next := cur.DeepCopy()
	change(next)
	next.ResourceVersion = w.nextRV()
	w.nodes[name] = next
	if w.watch != nil {
		w.watch.nodeUpdated(old, next.DeepCopy())
	}
	return true
}

// deleteNode removes the Node and reports whether it existed.
func (w *world) deleteNode(name string) bool {
	cur, ok := w.nodes[name]
	if !ok {
		return false
	}
	delete(w.nodes, name)
	if w.watch != nil {
		w.watch.nodeDeleted(cur.DeepCopy())
	}
	return true
}

// nodeReady returns the status of the Node's Ready condition, Unknown when it has none.
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// setReady sets the Node's Ready condition, as the kubelet (True) or the node lifecycle
// controller of kube-controller-manager (Unknown, when the kubelet stops posting) do.
func setReady(n *corev1.Node, status corev1.ConditionStatus) {
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = status
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
}

// hasTaint reports whether the Node has a taint with the key.
func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// withoutTaint returns the taints without those with the key.
func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == key })
}
