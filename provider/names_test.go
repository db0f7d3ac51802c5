package provider_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	. "github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/providertest"
)

// acceptsClusterID reports whether the config accepts id as its cluster.id.
func acceptsClusterID(id string) bool {
	cfg := Config{Cluster: ClusterConfig{ID: id}}
	return cfg.Validate() == nil
}

// acceptedClusterIDs returns cluster IDs of every length the config accepts, from 1 to the
// longest (asked of Config.Validate, not retyped), each in every character class it
// admits: lower and upper case, digits, and '.', '_' and '-' after the first character,
// also at the end.
func acceptedClusterIDs(t *testing.T) []string {
	t.Helper()
	longest := 0
	for acceptsClusterID(strings.Repeat("a", longest+1)) {
		longest++
		require.Less(t, longest, 1<<16, "the config accepts cluster IDs of any length")
	}
	require.Positive(t, longest)
	var ids []string
	for n := 1; n <= longest; n++ {
		for _, id := range []string{
			strings.Repeat("a", n),
			strings.Repeat("A", n),
			strings.Repeat("9", n),
			"a" + strings.Repeat(".", n-1),
			"Z" + strings.Repeat("_", n-1),
			"b" + strings.Repeat("-", n-1),
			("x" + strings.Repeat(".Y_z-9", n))[:n],
		} {
			require.True(t, acceptsClusterID(id), "cluster ID %q", id)
			ids = append(ids, id)
		}
	}
	require.False(t, acceptsClusterID(strings.Repeat("a", longest+1)))
	return ids
}

// shareComesBack runs the story of a share under keep-on-delete in a cloud with target
// groups, for the cluster ID id: two Services of the share get one load balancer
// (listeners named by their UIDs), a Service of its own another; the share's last
// Service goes, and its load balancer is released (renamed, its ownership tags gone); the
// share comes back and makes a new one under the share's name. One share is named by the
// default, the other by a name annotation of the longest length; the namespace and share
// names are the longest the API server and the share annotation admit. Every cloud call
// must succeed, so the cloud accepted every name; every tag the cloud holds is carried by
// the narrowest label syntax (cloudapi.HetznerLabelRules).
func shareComesBack(t *testing.T, id string) {
	t.Helper()
	yes := true
	c := providertest.New(t,
		providertest.WithFake(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-1"}}, Capabilities: fake.Capabilities{TargetGroups: &yes}}),
		providertest.WithConfig(func(cfg *Config) { cfg.Cluster.ID, cfg.LoadBalancer.KeepOnDelete = id, true }))
	lb, ok := c.Provider.LoadBalancer()
	require.True(t, ok)
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: "ccmkit://i-1"}}}
	namespace, share := strings.Repeat("n", 63), strings.Repeat("s", 63)
	service := func(name, uid string, port int32, annotations ...string) *corev1.Service {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("0f8fad5b-d9cb-469f-a165-" + uid), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
				{Name: "p" + strings.Repeat("-x", 7), Protocol: corev1.ProtocolTCP, Port: port, NodePort: 30000 + port},
			}},
		}
		for i := 0; i+1 < len(annotations); i += 2 {
			svc.Annotations[loadbalancer.DefaultAnnotationPrefix+annotations[i]] = annotations[i+1]
		}
		return svc
	}
	web := service("web", "000000000001", 80, loadbalancer.AnnotationShare, share)
	ssh := service("ssh", "000000000002", 22, loadbalancer.AnnotationShare, share)
	named := service("named", "000000000003", 80, loadbalancer.AnnotationShare, "named", loadbalancer.AnnotationName, strings.Repeat("m", 63))
	own := service(strings.Repeat("o", 63), "000000000004", 80)

	for _, svc := range []*corev1.Service{web, ssh, named, own} {
		_, err := lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err, "cluster %q: %s", id, svc.Name)
	}
	for _, svc := range []*corev1.Service{web, ssh, named} {
		require.NoError(t, lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc), "cluster %q: %s goes", id, svc.Name)
	}
	require.Len(t, c.Fake.Inventory().LoadBalancers, 3, "cluster %q: two kept, one the Service's own", id)
	for _, svc := range []*corev1.Service{web, named} {
		_, err := lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
		require.NoError(t, err, "cluster %q: the share of %s comes back", id, svc.Name)
	}

	inv := c.Fake.Inventory()
	require.Len(t, inv.LoadBalancers, 5, "cluster %q", id)
	require.NotEmpty(t, inv.TargetGroups, "cluster %q", id)
	tagged := make([]map[string]string, 0, len(inv.LoadBalancers)+len(inv.TargetGroups))
	for _, b := range inv.LoadBalancers {
		tagged = append(tagged, b.Spec.Tags)
	}
	for _, g := range inv.TargetGroups {
		tagged = append(tagged, g.Spec.Tags)
	}
	for _, tags := range tagged {
		_, err := cloudapi.EncodeLabels(tags, cloudapi.HetznerLabelRules)
		require.NoError(t, err, "cluster %q", id)
	}
}

// TestEveryClusterIDTheConfigAcceptsKeepsItsShares: for every cluster ID the config
// accepts (acceptedClusterIDs), a share under keep-on-delete is released and comes back,
// and every name and tag the cloud holds fits (shareComesBack).
func TestEveryClusterIDTheConfigAcceptsKeepsItsShares(t *testing.T) {
	for _, id := range acceptedClusterIDs(t) {
		shareComesBack(t, id)
	}
}

// FuzzClusterID: a cluster ID the config refuses is refused by name (cluster.id), and one
// it accepts keeps its shares (shareComesBack).
func FuzzClusterID(f *testing.F) {
	for _, id := range []string{"c1", "Prod.EU_1", strings.Repeat("a", 63), strings.Repeat("a", 64), "a-", "-a", ".a", "a b", "ü", ""} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		cfg := Config{Cluster: ClusterConfig{ID: id}}
		if err := cfg.Validate(); err != nil {
			require.ErrorContains(t, err, "cluster.id: ")
			return
		}
		if id == "" {
			return // no cluster ID: the provider has no load balancers
		}
		shareComesBack(t, id)
	})
}
