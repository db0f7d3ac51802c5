package loadbalancer_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// TestAReleasedShareLeavesItsNameToTheShare: the last Service of a share goes with
// keep-on-delete, and the share comes back: the kept load balancer was renamed, to a name
// the cloud accepts, and the share's new load balancer takes the share's name, its default
// or the name annotation's, for short and long cluster IDs and names alike, with the
// cloud's target groups too.
func TestAReleasedShareLeavesItsNameToTheShare(t *testing.T) {
	yes := true
	for _, cluster := range []string{"c1", strings.Repeat("c", 63), "Prod.EU_1"} {
		for _, name := range []string{"", "front-lb", strings.Repeat("n", 63)} {
			t.Run(cluster+"/"+name, func(t *testing.T) {
				e := newEnvWith(t, fake.Config{Capabilities: fake.Capabilities{TargetGroups: &yes}}, func(o *loadbalancer.Options) {
					o.ClusterID, o.KeepOnDelete = cluster, true
				})
				web := newService("web", inShare("front"), withPorts(port("http", corev1.ProtocolTCP, 80, 30080, "")))
				if name != "" {
					web.Annotations[prefix+loadbalancer.AnnotationName] = name
				}
				e.ensure(t, web, e.nodes)
				first := e.only(t)
				require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", web))
				kept := e.only(t)
				assert.NotContains(t, kept.Spec.Tags, cloudapi.TagShare, "released")
				assert.NotEqual(t, first.Spec.Name, kept.Spec.Name, "renamed")

				_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
				require.NoError(t, err, "the share's next create takes its name")
				lbs := e.cloud.Inventory().LoadBalancers
				require.Len(t, lbs, 2)
				again := lbs[1]
				assert.Equal(t, first.Spec.Name, again.Spec.Name)
				assert.Equal(t, "default/front", again.Spec.Tags[cloudapi.TagShare])
				assert.Equal(t, kept, lbs[0], "the kept one is left alone")
			})
		}
	}
}

// TestAShareWhoseNameOrAddressIsTakenIsNotAdvisedToAdopt: a share's create that the cloud
// refuses as a conflict (its name annotation names another's load balancer; its
// requested address is kept by its own earlier load balancer, released) says what to
// change, and never advises load-balancer-id, which a share cannot take; a Service of its
// own still is.
func TestAShareWhoseNameOrAddressIsTakenIsNotAdvisedToAdopt(t *testing.T) {
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.KeepOnDelete = true })
	api, _ := e.cloud.LoadBalancers()
	_, err := api.CreateLoadBalancer(t.Context(), cloudapi.LoadBalancerSpec{Name: "taken", Tags: map[string]string{"owner": "someone-else"}})
	require.NoError(t, err)

	named := newService("named", inShare("front"), withAnnotation(loadbalancer.AnnotationName, "taken"))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", named, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), "no load balancer of this share exists")
	assert.Contains(t, err.Error(), "a share cannot adopt a load balancer")
	assert.NotContains(t, err.Error(), loadbalancer.AnnotationLoadBalancerID)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", named))

	addressed := newService("addressed", inShare("back"), withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.77"))
	e.ensure(t, addressed, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", addressed))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", addressed, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrConflict, "the kept load balancer holds the address")
	assert.Contains(t, err.Error(), prefix+loadbalancer.AnnotationIPAddresses+" on every Service of the share")
	assert.NotContains(t, err.Error(), loadbalancer.AnnotationLoadBalancerID)

	own := newService("own", withAnnotation(loadbalancer.AnnotationName, "taken"))
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", own, e.nodes)
	require.ErrorIs(t, err, cloudapi.ErrConflict)
	assert.Contains(t, err.Error(), "adopt it with annotation "+prefix+loadbalancer.AnnotationLoadBalancerID)
}

// TestTwoClustersInOneCloudNeverMeetByName: two clusters in one cloud whose IDs differ
// only after their first 24 characters, or only in case and punctuation, each get their
// share's load balancer and their target group: neither's create meets the other's name.
func TestTwoClustersInOneCloudNeverMeetByName(t *testing.T) {
	yes := true
	for _, ids := range [][2]string{
		{"mycompany-production-eu-west-1", "mycompany-production-eu-west-2"},
		{"prod.eu", "Prod_EU"},
	} {
		t.Run(ids[0], func(t *testing.T) {
			e := newEnvWith(t, fake.Config{Capabilities: fake.Capabilities{TargetGroups: &yes}}, func(o *loadbalancer.Options) { o.ClusterID = ids[0] })
			api, _ := e.cloud.LoadBalancers()
			groups, _ := cloudapi.TargetGroups(e.cloud)
			format, err := providerid.Default("ccmkit")
			require.NoError(t, err)
			other, err := loadbalancer.New(api, loadbalancer.Options{ClusterID: ids[1], ProviderID: format, TargetGroups: groups, Clock: e.clock})
			require.NoError(t, err)
			web := newService("web", inShare("front"))
			e.ensure(t, web, e.nodes)
			_, err = other.EnsureLoadBalancer(t.Context(), "c", web, e.nodes)
			require.NoError(t, err)
			lbs := e.cloud.Inventory().LoadBalancers
			require.Len(t, lbs, 2)
			assert.Equal(t, ids[0], lbs[0].Spec.Tags[cloudapi.TagCluster])
			assert.Equal(t, ids[1], lbs[1].Spec.Tags[cloudapi.TagCluster])
			assert.Len(t, e.cloud.Inventory().TargetGroups, 2, "a group each")
		})
	}
}
