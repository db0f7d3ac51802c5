package instances_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/cloudapi"
	fakecloud "github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/instances"
	"github.com/ccmkit/ccmkit/providerid"
	"github.com/ccmkit/ccmkit/routes"
	"github.com/ccmkit/ccmkit/zones"
)

// Instances, zones and routes built on their own from a cloud client, sharing one
// lookup: the parts provider.New assembles, for a program that composes its own
// cloudprovider.Interface. Built this way they have none of the provider's cloud config,
// rate limit, retries or metrics; calls go to the client as they are.
func Example() {
	ctx := context.Background()
	cloud, err := fakecloud.New(fakecloud.Config{Instances: []fakecloud.Instance{
		{ID: "i-1", Name: "worker-1", Type: "m5.large", Zone: "eu-1a", Region: "eu-1"},
		{ID: "i-2", Name: "worker-2", Type: "m5.large", Zone: "eu-1b", Region: "eu-1"},
	}})
	if err != nil {
		panic(err)
	}
	format, err := providerid.Default("mycloud")
	if err != nil {
		panic(err)
	}
	lookup, err := instances.NewLookup(cloud.Instances(), instances.LookupOptions{})
	if err != nil {
		panic(err)
	}
	nodes, err := instances.New(lookup, instances.Options{ProviderID: format})
	if err != nil {
		panic(err)
	}
	zoneOf, err := zones.New(lookup, zones.Options{ProviderID: format})
	if err != nil {
		panic(err)
	}
	routeAPI, _ := cloud.Routes()
	routeTable, err := routes.New(routeAPI, lookup, routes.Options{ClusterID: "c1"})
	if err != nil {
		panic(err)
	}

	md, err := nodes.InstanceMetadata(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(md.ProviderID, md.InstanceType, md.Zone)
	zone, err := zoneOf.GetZoneByProviderID(ctx, "mycloud://i-2")
	if err != nil {
		panic(err)
	}
	fmt.Println(zone.FailureDomain)
	err = routeTable.CreateRoute(ctx, "c1", "", &cloudprovider.Route{TargetNode: "worker-2", DestinationCIDR: "10.244.2.0/24"})
	if err != nil {
		panic(err)
	}
	fmt.Println("instance lists:", cloud.Calls()[cloudapi.OpListInstances])
	// Output:
	// mycloud://i-1 m5.large eu-1a
	// eu-1b
	// instance lists: 1
}
