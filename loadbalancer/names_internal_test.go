package loadbalancer

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer/internal/plan"
)

// nameUID is a Service UID as the API server makes them: the longest defaultName.
const nameUID = "0f8fad5b-d9cb-469f-a165-70867728950e"

// clusterIDs are cluster IDs of every length from 1 to twice maxNameLength (the provider's
// config admits up to 63 characters; New admits any), each in several spellings: lower
// case, upper case, '.' and '_' (folded into '-'), trailing '-', digits, and runes that
// are not ASCII.
func clusterIDs() []string {
	var ids []string
	for n := 1; n <= 2*maxNameLength; n++ {
		ids = append(ids,
			strings.Repeat("a", n),
			strings.Repeat("A", n),
			strings.Repeat("7", n),
			"a"+strings.Repeat(".", n-1),
			"b"+strings.Repeat("_", n-1),
			"c"+strings.Repeat("-", n-1),
			strings.Repeat("x.Y_z-", n)[:n],
			strings.Repeat("ü", n),
		)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// checkName fails the test unless name passes every check a load balancer's name meets:
// the name annotation's (what ccmkit asks a cloud for, and its admission policy), the
// spec's (cloudapi.LoadBalancerSpec.Validate) and the fake cloud's (its length limit,
// fake.MaxNameLength), by creating and deleting a load balancer of that name in cloud.
func checkName(t *testing.T, cloud *fake.Cloud, name string, what ...any) {
	t.Helper()
	a, _, errs := parseAnnotations(DefaultAnnotationPrefix, nil, Aliases{}, map[string]string{DefaultAnnotationPrefix + AnnotationName: name})
	require.Empty(t, errs, what...)
	require.Equal(t, name, a.name, what...)
	spec := cloudapi.LoadBalancerSpec{Name: name}
	require.NoError(t, spec.Validate(), what...)
	api, _ := cloud.LoadBalancers()
	lb, err := api.CreateLoadBalancer(t.Context(), spec)
	require.NoError(t, err, what...)
	require.NoError(t, api.DeleteLoadBalancer(t.Context(), lb.ID), what...)
}

// TestNamesFitForAnyClusterID: for every cluster ID (clusterIDs), every name ccmkit gives a
// load balancer (a Service's, a share's of the longest share key, a released one's of
// each, of a 63-character name annotation's, with cloud IDs up to the 255 characters the
// load-balancer-id annotation takes) passes checkName, the names of two clusters never
// meet, a kept name is never the name it was made from nor a share's, and the tags and
// listener names of the longest share key, Service name and port name are carried and read
// back.
func TestNamesFitForAnyClusterID(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63), UID: nameUID}}
	share := (&intents{shareAcross: false}).shareKey(svc.Namespace, strings.Repeat("f", maxNameLength))
	across := (&intents{shareAcross: true}).shareKey(svc.Namespace, strings.Repeat("f", maxNameLength))
	lbIDs := []string{"lb-1", "lb-2", strings.Repeat("x", maxIDLength), "arn:aws:elasticloadbalancing:eu-1:1:loadbalancer/net/x/1"}

	prefixes := map[string]string{} // namePrefix → cluster ID
	for _, id := range clusterIDs() {
		p := namePrefix(id)
		require.NotContains(t, prefixes, p, "cluster IDs %q and %q share the names of their shares and target groups", prefixes[p], id)
		prefixes[p] = id

		own := []string{defaultName(id, svc), shareName(id, share), shareName(id, across), strings.Repeat("m", maxNameLength)}
		for _, name := range own {
			checkName(t, cloud, name, "cluster %q", id)
			kept := map[string]string{} // kept name → the load balancer ID
			for _, lbID := range lbIDs {
				k := keptName(name, lbID)
				checkName(t, cloud, k, "cluster %q: the kept name of %q", id, name)
				assert.NotEqual(t, name, k)
				assert.NotEqual(t, shareName(id, share), k)
				assert.NotContains(t, kept, k, "two kept load balancers of one name get one kept name")
				kept[k] = lbID
				assert.NotEqual(t, k, keptName(k, lbID), "kept again (a retried release): still another name")
			}
		}

		tags := map[string]string{cloudapi.TagCluster: id, cloudapi.TagShare: share, cloudapi.TagService: nameUID, cloudapi.TagServiceName: svc.Namespace + "/" + svc.Name}
		for _, owner := range []string{shareOwnerPrefix + share, shareOwnerPrefix + across, nameUID} {
			assert.Equal(t, owner, ownerKey(ownerTags(id, owner)), "the owner tags name the owner")
		}
		labels, err := cloudapi.EncodeLabels(tags, cloudapi.HetznerLabelRules)
		require.NoError(t, err, "cluster %q: the tags fit the narrowest label syntax", id)
		back, err := cloudapi.DecodeLabels(labels, cloudapi.HetznerLabelRules)
		require.NoError(t, err)
		require.Equal(t, tags, back)
	}

	// A listener of a share is named by its Service's UID and its port's name: the
	// longest name a port may have (IANA_SVC_NAME, 15 characters), or the default.
	longPort := "p" + strings.Repeat("-x", 7)
	require.Empty(t, validation.IsValidPortName(longPort))
	spec := cloudapi.LoadBalancerSpec{Name: "listeners", Listeners: []cloudapi.Listener{
		{Name: plan.ListenerName(nameUID, longPort), Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
		{Name: plan.ListenerName(nameUID, "sctp-65535"), Protocol: cloudapi.ProtocolSCTP, Port: 65535, TargetPort: 30081},
	}}
	require.NoError(t, spec.Validate())
	api, _ := cloud.LoadBalancers()
	made, err := api.CreateLoadBalancer(t.Context(), spec)
	require.NoError(t, err)
	for _, l := range made.Spec.Listeners {
		assert.Equal(t, nameUID, plan.ListenerOwner(l.Name))
		assert.LessOrEqual(t, len(l.Name), maxNameLength)
	}
}

// TestNamePrefixKeepsAValidClusterID: a cluster ID that is a name of at most 24
// characters begins its names as it is, as it always did (no rename on upgrade); any
// other gets a hash of the whole ID.
func TestNamePrefixKeepsAValidClusterID(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"c1", "c1"},
		{"prod-eu-1", "prod-eu-1"},
		{strings.Repeat("a", maxPrefixLength), strings.Repeat("a", maxPrefixLength)},
	} {
		assert.Equal(t, tt.want, namePrefix(tt.id))
	}
	for _, id := range []string{"Prod", "prod.eu", "prod_eu", "prod-", strings.Repeat("a", maxPrefixLength+1), "ü"} {
		p := namePrefix(id)
		assert.NotEqual(t, id, p)
		assert.LessOrEqual(t, len(p), maxPrefixLength)
		assert.Regexp(t, `-?[0-9a-f]{8}$`, p, "ends with a hash of the ID")
	}
}

// FuzzNames checks the names and tags of a cluster, a share and a Service for any cluster
// ID, share (namespace and name, as the share annotation and Options.ShareAcrossNamespaces
// read it), Service UID, port name and cloud ID: a share key the annotation accepts makes
// a share whose owner tags name it and whose names are valid (checkName), and a released
// load balancer's name is valid and never the name it had; a port name makes a listener
// name that names its Service; two cluster IDs never share a namePrefix.
func FuzzNames(f *testing.F) {
	f.Add("c1", "C1", "default", "front", false, nameUID, "http", "lb-1")
	f.Add(strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("n", 63), strings.Repeat("f", 63), true, nameUID, "p-x-x-x-x-x-x-x", strings.Repeat("x", 255))
	f.Add("prod.eu", "prod-eu", "team-a", "-bad", false, "uid", "", "")
	f.Add("ü", "Ü", "kube-system", "a", true, "", "a:b", "lb 1")
	f.Add("a_", "a-", "ns", "web/x", false, nameUID, "tcp-80", "lb-000001")
	cloud, err := fake.New(fake.Config{})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, id, other, namespace, shareValue string, across bool, uid, port, lbID string) {
		if id == "" || other == "" {
			return // New refuses an empty cluster ID
		}
		if id != other {
			require.NotEqual(t, namePrefix(id), namePrefix(other), "cluster IDs %q and %q", id, other)
		}
		l := &LoadBalancer{intents: intents{shareAcross: across, prefix: DefaultAnnotationPrefix}}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "svc", UID: types.UID(uid),
			Annotations: map[string]string{DefaultAnnotationPrefix + AnnotationShare: shareValue}}}
		key, err := l.ShareKey(svc)
		if err != nil {
			require.ErrorContains(t, err, AnnotationShare)
			return
		}
		require.NotEmpty(t, key)
		owner, err := l.intents.owner(svc)
		if uid == "" {
			require.Error(t, err, "a Service without a UID has no owner")
			return
		}
		require.NoError(t, err)
		require.Equal(t, shareOwnerPrefix+key, owner)
		require.Equal(t, owner, ownerKey(ownerTags(id, owner)))

		name := shareName(id, key)
		checkName(t, cloud, name, "share %q of cluster %q", key, id)
		kept := keptName(name, lbID)
		checkName(t, cloud, kept, "the kept name of %q", name)
		require.NotEqual(t, name, kept)
		// The name annotation takes what the share annotation does: a share's name.
		annotated := key[strings.LastIndex(key, "/")+1:]
		checkName(t, cloud, keptName(annotated, lbID), "the kept name of %q", annotated)
		require.NotEqual(t, annotated, keptName(annotated, lbID))
		if strings.Contains(uid, ":") {
			return // the API server's UIDs have none
		}
		require.Equal(t, uid, plan.ListenerOwner(plan.ListenerName(uid, port)))
	})
}
