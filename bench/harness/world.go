package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	servicehelpers "k8s.io/cloud-provider/service/helpers"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

const (
	clusterID   = "bench"
	clusterName = "bench"
	namespace   = "default"
	maxNodes    = 1 << 15 // /25s in the cluster CIDR
)

// ClusterCIDR is the cluster's pod CIDR (the route controller's --cluster-cidr); Node i
// gets the i-th /25 of it.
const ClusterCIDR = "100.64.0.0/10"

// ClusterName is the cluster name the controllers pass the provider, and the cluster ID
// the providers are configured with (ccmkit's cluster.id, the AWS provider's
// KubernetesClusterID).
const ClusterName = clusterName

// world is one provider's converged cluster: its cloud with every instance, a load
// balancer per Service and a route per Node, made by the provider itself; and the Node and
// Service objects as the upstream controllers leave them once they are done. Every
// measurement starts new controllers (and mostly a new provider) over it.
type world struct {
	cfg   config
	col   Column
	name  string // the column's
	cloud Cloud
	clock *clocktesting.FakeClock // the provider's: virtual time, moved by the scenarios
	cidr  *net.IPNet

	nodes    []*corev1.Node
	services []*corev1.Service
}

// ccmkit reports whether the world's provider is ccmkit's: the ccmkit column's, or a
// column of ccmkit over another cloud (OnCcmkit).
func (w *world) ccmkit() bool {
	_, ours := w.col.(OnCcmkit)
	return ours || w.name == string(kindCcmkit)
}

func podCIDR(i int) string {
	return fmt.Sprintf("100.%d.%d.%d/25", 64+i>>9, (i>>1)&255, (i&1)*128)
}

// newWorld builds col's cloud and converges it with col's provider.
func newWorld(ctx context.Context, cfg config, col Column, log *progress) (*world, error) {
	if cfg.nodes+1 > maxNodes {
		return nil, fmt.Errorf("at most %d nodes: the cluster CIDR %s has no more /25s", maxNodes-1, ClusterCIDR)
	}
	cloud, err := col.NewCloud(cfg.cloudConfig())
	if err != nil {
		return nil, err
	}
	_, cidr, err := net.ParseCIDR(ClusterCIDR)
	if err != nil {
		return nil, err
	}
	w := &world{cfg: cfg, col: col, name: col.Name(), cloud: cloud, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), cidr: cidr}

	// The provider that converges the cloud; dropped afterwards. It has a client, as in a
	// cloud-controller-manager: what it writes on the Services (ccmkit's load balancer ID
	// annotation and LoadBalancerReady condition) is part of the converged cluster.
	p, err := w.cloud.NewProvider(w.clock)
	if err != nil {
		return nil, err
	}
	k := newKube(nil, 0)
	stop := make(chan struct{})
	defer close(stop)
	p.Initialize(ClientBuilder{k}, stop)
	iv2, ok := p.InstancesV2()
	if !ok {
		return nil, errors.New("the provider offers no InstancesV2")
	}
	w.nodes = make([]*corev1.Node, cfg.nodes)
	err = parallel(ctx, 64, cfg.nodes, func(i int) (err error) {
		w.nodes[i], err = w.initializedNode(ctx, iv2, i)
		return err
	})
	if err != nil {
		return nil, err
	}
	log.printf("%s: %d Nodes initialized from the cloud", w.name, len(w.nodes))

	routes, ok := p.Routes()
	if !ok {
		return nil, errors.New("the provider offers no Routes")
	}
	err = parallel(ctx, 8, len(w.nodes), func(i int) error {
		n := w.nodes[i]
		return routes.CreateRoute(ctx, clusterName, string(n.UID), &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: n.Spec.PodCIDR})
	})
	if err != nil {
		return nil, fmt.Errorf("creating routes: %w", err)
	}
	log.printf("%s: %d routes created", w.name, len(w.nodes))

	lbs, ok := p.LoadBalancer()
	if !ok {
		return nil, errors.New("the provider offers no LoadBalancer")
	}
	w.services = make([]*corev1.Service, cfg.services)
	err = parallel(ctx, 4, cfg.services, func(i int) error {
		svc := newService(i)
		if _, err := k.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		st, err := lbs.EnsureLoadBalancer(ctx, clusterName, svc, w.nodes)
		if err != nil {
			return err
		}
		if svc, err = k.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		// As the service controller leaves it: finalizer first, then the status.
		svc.ResourceVersion = ""
		svc.Finalizers = []string{servicehelpers.LoadBalancerCleanupFinalizer}
		svc.Status.LoadBalancer = *st
		w.services[i] = svc
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating load balancers: %w", err)
	}
	log.printf("%s: %d load balancers created", w.name, cfg.services)
	return w, nil
}

// registeredNode is Node i as the kubelet registers it with --cloud-provider=external:
// the cloud taint, no provider ID, its host name, Ready, and a pod CIDR from the node IPAM.
func (w *world) registeredNode(i int) *corev1.Node {
	name := w.cloud.NodeName(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))},
		Spec: corev1.NodeSpec{
			PodCIDR:  podCIDR(i),
			PodCIDRs: []string{podCIDR(i)},
			Taints:   []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
		},
	}
}

// initializedNode is Node i as the cloud node controller and the route controller leave
// it: the provider's metadata applied (provider ID, the beta and GA instance-type, zone and
// region labels and the provider's additional labels, the cloud's addresses with the kubelet's host name appended when the
// cloud reports none), the cloud taint removed, and NetworkUnavailable=False because its
// route exists. A quiet status pass then finds nothing to patch.
func (w *world) initializedNode(ctx context.Context, iv2 cloudprovider.InstancesV2, i int) (*corev1.Node, error) {
	n := w.registeredNode(i)
	n.Spec.ProviderID = w.cloud.ProviderID(i)
	md, err := iv2.InstanceMetadata(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if md.ProviderID != n.Spec.ProviderID {
		return nil, fmt.Errorf("node %s: the provider reports provider ID %q, the world expects %q", n.Name, md.ProviderID, n.Spec.ProviderID)
	}
	n.Spec.Taints = nil
	n.Labels = map[string]string{
		corev1.LabelInstanceType: md.InstanceType, corev1.LabelInstanceTypeStable: md.InstanceType,
		corev1.LabelFailureDomainBetaZone: md.Zone, corev1.LabelTopologyZone: md.Zone,
		corev1.LabelFailureDomainBetaRegion: md.Region, corev1.LabelTopologyRegion: md.Region,
	}
	maps.Copy(n.Labels, md.AdditionalLabels)
	addrs := append([]corev1.NodeAddress(nil), md.NodeAddresses...)
	hasHostname := false
	for _, a := range addrs {
		hasHostname = hasHostname || a.Type == corev1.NodeHostName
	}
	if !hasHostname {
		addrs = append(addrs, n.Status.Addresses...)
	}
	n.Status.Addresses = addrs
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
		Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated", Message: "RouteController created a route",
	})
	return n, nil
}

// serviceUID is Service i's UID. Like the API server's random ones, the UIDs differ in
// their first characters: a provider that names a load balancer after a prefix of the UID
// (the AWS provider's 32 characters) gives each Service its own.
func serviceUID(i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012d", uint32(i)*2654435761, i)) // a bijection of i
}

// newService is Service i: type LoadBalancer with one TCP port.
func newService(i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("svc-%04d", i), UID: serviceUID(i)},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: int32(30000 + i%2768)}},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			SessionAffinity:       corev1.ServiceAffinityNone, // the API server's default
		},
	}
}

// adapterSettings are the load balancer settings the world's provider declares, as a
// cloud's adapter would: every Service gets the size's default, settingsService another
// size from its annotation.
var adapterSettings = loadbalancer.Settings{{Name: "size", Values: []string{"small", "medium", "large"}, Default: "small"}}

// settingsService is a Service with every setting that costs a converged
// EnsureLoadBalancer work: a node selector (which every Node meets, so that the targets
// are as many as without it), session affinity, an HTTP and an HTTPS port with
// certificates, the hostname annotation, and an adapter-declared setting (adapterSettings'
// size).
func settingsService() *corev1.Service {
	svc := newService(999_999) // an index no Service of the world has
	svc.Name = "svc-settings"
	https, http := "https", "http"
	svc.Spec.Ports = []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 32080, AppProtocol: &http},
		{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 32443, AppProtocol: &https},
	}
	timeout := int32(600)
	svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	p := loadbalancer.DefaultAnnotationPrefix
	svc.Annotations = map[string]string{
		p + loadbalancer.AnnotationNodeSelector:    "!node-role.kubernetes.io/control-plane",
		p + loadbalancer.AnnotationTLSCertificates: "cert-main,cert-alt",
		p + loadbalancer.AnnotationHostname:        "web.example.org",
		p + "size":                                 "Large", // canonical: "large"
	}
	return svc
}

// kube is a fake clientset holding the world's Nodes, with its writes counted.
type kube struct {
	*k8sfake.Clientset
	writes atomic.Int64 // creates, updates, patches and deletes of anything but Events
}

// newKube returns a fake clientset with copies of nodes, of which notReady report
// Ready=False: a zone's Nodes first (Node i is in zone i mod 3), as when a zone is cut off,
// so that a third of them is exactly one zone. Their instances keep running. Services are
// added by the session that runs the service controller (see session.addServices). Events
// are accepted and dropped (the controllers' event recorders would otherwise fill the
// tracker); other writes are counted.
func newKube(nodes []*corev1.Node, notReady int) *kube {
	byZone := make([]int, len(nodes))
	for i := range byZone {
		byZone[i] = i
	}
	slices.SortStableFunc(byZone, func(a, b int) int { return a%len(Zones) - b%len(Zones) })
	down := map[int]bool{}
	for _, i := range byZone[:min(notReady, len(nodes))] {
		down[i] = true
	}
	objs := make([]runtime.Object, 0, len(nodes))
	for i, n := range nodes {
		n = n.DeepCopy()
		if down[i] {
			for j := range n.Status.Conditions {
				if c := &n.Status.Conditions[j]; c.Type == corev1.NodeReady {
					c.Status, c.Reason = corev1.ConditionFalse, "NodeStatusUnknown"
				}
			}
		}
		objs = append(objs, n)
	}
	k := &kube{Clientset: k8sfake.NewClientset(objs...)}
	k.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			k.writes.Add(1)
		}
		return false, nil, nil
	})
	k.PrependReactor("*", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if c, ok := a.(k8stesting.CreateAction); ok {
			return true, c.GetObject(), nil
		}
		return true, &corev1.Event{}, nil
	})
	return k
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
