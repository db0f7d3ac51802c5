package loadbalancer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// A LoadBalancer built on its own from a cloud client, for a program that runs the
// service controller without the rest of the provider (examples/servicecontroller does
// it through the provider). Built this way it has none of the provider's cloud config,
// rate limit, retries or metrics; calls go to the client as they are.
func Example() {
	ctx := context.Background()
	cloud, err := fakecloud.New(fakecloud.Config{Instances: []fakecloud.Instance{{ID: "i-1", Name: "worker-1"}}})
	if err != nil {
		panic(err)
	}
	format, err := providerid.Default("mycloud")
	if err != nil {
		panic(err)
	}
	api, _ := cloud.LoadBalancers()
	lbs, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format})
	if err != nil {
		panic(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Spec: corev1.NodeSpec{ProviderID: "mycloud://i-1"}}}
	status, err := lbs.EnsureLoadBalancer(ctx, "c1", svc, nodes)
	if err != nil {
		panic(err)
	}
	fmt.Println(status.Ingress[0].IP)
	before := cloud.Calls().Total()
	if _, err := lbs.EnsureLoadBalancer(ctx, "c1", svc, nodes); err != nil {
		panic(err)
	}
	fmt.Println("calls for an Ensure that changes nothing:", cloud.Calls().Total()-before)
	// Output:
	// 203.0.113.1
	// calls for an Ensure that changes nothing: 0
}
