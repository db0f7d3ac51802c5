package loadbalancer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/clocktest"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// BenchmarkEnsureConverged5000Nodes measures EnsureLoadBalancer on a converged load
// balancer with 5,000 targets, the nodes in a new random order each call as the service
// controller's lister hands them over: the service controller's resync of every Service. It
// reports the cloud calls per ensure: none while the snapshot is fresh, and never a write.
func BenchmarkEnsureConverged5000Nodes(b *testing.B) {
	benchmarkEnsureConverged(b, nil, false, false)
}

// BenchmarkEnsureConverged5000NodesAllSettings is BenchmarkEnsureConverged5000Nodes with
// every Service setting that has a cost in a converged ensure: a node selector of two
// requirements (which every node meets, so the targets are as many), session affinity, a
// TLS listener with certificates, an HTTP listener, the hostname annotation, and two
// adapter-declared settings (one from its annotation, one from its default), on a cloud
// whose load balancers have hostnames.
func BenchmarkEnsureConverged5000NodesAllSettings(b *testing.B) {
	benchmarkEnsureConverged(b, nil, true, false)
}

// BenchmarkEnsureConverged20000NodesAllSettings is BenchmarkEnsureConverged5000NodesAllSettings
// at the cost curve's largest size (bench's -sweep), whose converged Ensure has a CPU goal.
func BenchmarkEnsureConverged20000NodesAllSettings(b *testing.B) {
	benchmarkEnsureConvergedN(b, 20000, nil, true, false)
}

// BenchmarkEnsureConverged5000NodesTargetGroups is BenchmarkEnsureConverged5000Nodes on a
// cloud with target groups: the load balancer names the group of every Node, which holds
// the 5,000 instances.
func BenchmarkEnsureConverged5000NodesTargetGroups(b *testing.B) {
	benchmarkEnsureConverged(b, nil, false, true)
}

// BenchmarkEnsureConverged5000NodesExpiredSnapshot is BenchmarkEnsureConverged5000Nodes
// with a snapshot that has expired at every ensure: one list (one page) per ensure, the
// most a converged ensure costs.
func BenchmarkEnsureConverged5000NodesExpiredSnapshot(b *testing.B) {
	benchmarkEnsureConverged(b, clocktest.NewTicking(t0, loadbalancer.DefaultMaxAge+time.Second), false, false)
}

func benchmarkEnsureConverged(b *testing.B, clk clock.PassiveClock, settings, groups bool) {
	benchmarkEnsureConvergedN(b, 5000, clk, settings, groups)
}

// benchmarkEnsureConvergedN is the converged ensure of one Service over n Nodes.
func benchmarkEnsureConvergedN(b *testing.B, n int, clk clock.PassiveClock, settings, groups bool) {
	ctx := klog.NewContext(context.Background(), klog.Logger{}) // the zero logger discards
	instances := make([]fake.Instance, n)
	nodes := make([]*corev1.Node, n)
	for i := range n {
		id := fmt.Sprintf("i-%05d", i)
		instances[i] = fake.Instance{ID: id, Name: fmt.Sprintf("node-%05d", i)}
		nodes[i] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: instances[i].Name, Labels: map[string]string{"pool": fmt.Sprint("p", i%2), corev1.LabelTopologyZone: "z1"}},
			Spec:       corev1.NodeSpec{ProviderID: "ccmkit://" + id},
		}
	}
	cfg := fake.Config{Provisioning: fake.Provisioning{Reads: 1}, Instances: instances, Capabilities: fake.Capabilities{TargetGroups: &groups}}
	if settings {
		cfg.Hostnames.Domain = "lb.example.com"
	}
	cloud, err := fake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	api, _ := cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	if err != nil {
		b.Fatal(err)
	}
	opts := loadbalancer.Options{ClusterID: "c1", ProviderID: format, Clock: clk}
	if g, ok := cloud.TargetGroups(); ok {
		opts.TargetGroups = g
	}
	if settings {
		opts.Settings = loadbalancer.Settings{
			{Name: "size", Values: []string{"small", "medium", "large"}, Default: "small"},
			{Name: "algorithm", Values: []string{"round-robin", "least-connections"}, Default: "round-robin"},
		}
	}
	lb, err := loadbalancer.New(api, opts)
	if err != nil {
		b.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("0b6f1a52-9c1e-4f7a-8d3b-2e5c7a9f1d40")},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
			},
		},
	}

	if settings {
		timeout := int32(600)
		svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		https, http := "https", "http"
		svc.Spec.Ports[0].AppProtocol, svc.Spec.Ports[1].AppProtocol = &http, &https
		p := loadbalancer.DefaultAnnotationPrefix
		svc.Annotations = map[string]string{
			p + loadbalancer.AnnotationNodeSelector:    corev1.LabelTopologyZone + "=z1,pool",
			p + loadbalancer.AnnotationTLSCertificates: "cert-main,cert-alt",
			p + loadbalancer.AnnotationHostname:        "web.example.org",
			p + "size":                                 "Large",
		}
	}

	// Create, then ensure until the load balancer is active.
	for attempt := 0; ; attempt++ {
		if _, err = lb.EnsureLoadBalancer(ctx, "c", svc, nodes); err == nil {
			break
		}
		if attempt == 10 {
			b.Fatalf("the load balancer did not become active: %v", err)
		}
	}
	if inv := cloud.Inventory(); len(inv.Targets(inv.LoadBalancers[0])) != n {
		got := len(inv.Targets(inv.LoadBalancers[0]))
		b.Fatalf("the load balancer has %d targets, want %d", got, n)
	}
	if got := cloud.Inventory().LoadBalancers[0].Spec.SettingValues; settings && (got["size"] != "large" || got["algorithm"] != "round-robin") {
		b.Fatalf("the load balancer has the settings %v, want size large and algorithm round-robin", got)
	}

	// The service controller passes the nodes as its lister returns them: a new slice of
	// the same objects, in a different order each time.
	orders := make([][]*corev1.Node, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range orders {
		orders[i] = slices.Clone(nodes)
		rng.Shuffle(n, func(a, b int) { orders[i][a], orders[i][b] = orders[i][b], orders[i][a] })
	}
	cloud.ResetCalls()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, orders[i%len(orders)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	calls := cloud.Calls()
	if calls.Writes() != 0 {
		b.Fatalf("a converged ensure wrote: %v", calls)
	}
	b.ReportMetric(float64(calls.Total())/float64(b.N), "calls/op")
}

// BenchmarkNodeSync1000Services measures the service controller's node sync after a Node
// is added or removed (alternately, one per op): UpdateLoadBalancer for each of 1,000
// Services over 1,000 Nodes, one after the other as its one default worker calls them, the
// fake cloud's work included. It reports the cloud calls per node sync: one list of the
// cluster's load balancers (⌈S/P⌉ pages, P = 500) and one update per load balancer.
func BenchmarkNodeSync1000Services(b *testing.B) { benchmarkNodeSync(b, false) }

// BenchmarkNodeSync1000ServicesTargetGroups is BenchmarkNodeSync1000Services on a cloud
// with target groups: the 1,000 load balancers share one group, and a node sync is one
// list of the group and one update of it, and no load balancer call.
func BenchmarkNodeSync1000ServicesTargetGroups(b *testing.B) { benchmarkNodeSync(b, true) }

func benchmarkNodeSync(b *testing.B, groups bool) {
	const services, n, pageSize = 1000, 1000, 500
	ctx := klog.NewContext(context.Background(), klog.Logger{}) // the zero logger discards
	instances := make([]fake.Instance, n+1)
	nodes := make([]*corev1.Node, n+1)
	for i := range n + 1 {
		id := fmt.Sprintf("i-%05d", i)
		instances[i] = fake.Instance{ID: id, Name: fmt.Sprintf("node-%05d", i)}
		nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: instances[i].Name}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://" + id}}
	}
	cloud, err := fake.New(fake.Config{PageSize: pageSize, Instances: instances, AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"100.64.0.0/16"}}},
		Capabilities: fake.Capabilities{TargetGroups: &groups}})
	if err != nil {
		b.Fatal(err)
	}
	api, _ := cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	if err != nil {
		b.Fatal(err)
	}
	opts := loadbalancer.Options{ClusterID: "c1", ProviderID: format, PageSize: pageSize, Clock: clocktest.NewTicking(t0, time.Millisecond)}
	if g, ok := cloud.TargetGroups(); ok {
		opts.TargetGroups = g
	}
	lb, err := loadbalancer.New(api, opts)
	if err != nil {
		b.Fatal(err)
	}
	svcs := make([]*corev1.Service, services)
	for i := range svcs {
		svcs[i] = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("svc-%04d", i), UID: types.UID(fmt.Sprintf("uid-%04d", i))},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
		}
		if _, err := lb.EnsureLoadBalancer(ctx, "c", svcs[i], nodes[:n]); err != nil {
			b.Fatal(err)
		}
	}
	sets := [][]*corev1.Node{nodes, nodes[:n]} // a Node added, then removed again
	cloud.ResetCalls()
	b.ReportAllocs()
	syncs := 0
	for b.Loop() {
		set := slices.Clone(sets[syncs%2])
		for _, svc := range svcs {
			if err := lb.UpdateLoadBalancer(ctx, "c", svc, set); err != nil {
				b.Fatal(err)
			}
		}
		syncs++
	}
	calls := cloud.Calls()
	b.ReportMetric(float64(calls.Total())/float64(syncs), "calls/op")
	b.ReportMetric(float64(calls[cloudapi.OpListLoadBalancers])/float64(syncs), "lists/op")
	b.ReportMetric(float64(calls.Writes())/float64(syncs), "writes/op")
	b.ReportMetric(float64(calls[cloudapi.OpUpdateLoadBalancer])/float64(syncs), "lb-updates/op")
}
