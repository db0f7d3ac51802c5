package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/options"
	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/controllers"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/builtin"
	"github.com/ccmkit/ccmkit/sweeper"
)

const (
	baseDir = "base"
	// sweeperComponentDir is the kustomize component with the sweeper's RBAC.
	sweeperComponentDir = "components/sweeper"
)

// cloudProviderClient is the client name ccmkit's Initialize and its ccmkit-node-labels
// controller ask the client builder for: "<provider>-cloud-provider".
const cloudProviderClient = provider.DefaultProviderName + "-cloud-provider"

// kustomization is the part of kustomization.yaml the base uses; decoding is strict, so a
// field the base starts to use must be added here.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// manifests is every object of the base, by type.
type manifests struct {
	serviceAccounts     []*corev1.ServiceAccount
	secrets             []*corev1.Secret
	deployments         []*appsv1.Deployment
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
}

// readKustomization reads the kustomization.yaml of dir (the base or a component).
func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, yaml.UnmarshalStrict(data, &k), "%s/kustomization.yaml", dir)
	return k
}

// splitDocuments returns the non-empty YAML documents of data.
func splitDocuments(t *testing.T, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err)
		if string(bytes.TrimSpace(js)) == "null" {
			continue // only comments
		}
		docs = append(docs, doc)
	}
}

// decodeStrict decodes one document into its typed object with the client-go scheme, then
// decodes it again strictly into a fresh value of the same type, so that an unknown or
// duplicated field is an error rather than silently dropped.
func decodeStrict(doc []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	strict := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := yaml.UnmarshalStrict(doc, strict); err != nil {
		return nil, err
	}
	return obj, nil
}

// loadManifests decodes every object of the base.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	return loadManifestsFrom(t, baseDir)
}

// loadManifestsFrom decodes every object of the kustomizations in dirs (the base and the
// components an overlay adds to it), as kustomize renders them: none of them patches.
func loadManifestsFrom(t *testing.T, dirs ...string) manifests {
	t.Helper()
	var m manifests
	for _, dir := range dirs {
		m.load(t, dir)
	}
	return m
}

func (m *manifests) load(t *testing.T, dir string) {
	t.Helper()
	for _, file := range readKustomization(t, dir).Resources {
		data, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		docs := splitDocuments(t, data)
		require.NotEmpty(t, docs, "%s holds no object", file)
		for i, doc := range docs {
			obj, err := decodeStrict(doc)
			require.NoError(t, err, "%s, document %d", file, i+1)
			require.True(t, m.add(obj), "%s/%s, document %d: unexpected object %T", dir, file, i+1, obj)
		}
	}
}

// add files obj under its type and reports whether manifests has a place for it.
func (m *manifests) add(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		m.serviceAccounts = append(m.serviceAccounts, o)
	case *corev1.Secret:
		m.secrets = append(m.secrets, o)
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, o)
	case *rbacv1.ClusterRole:
		m.clusterRoles = append(m.clusterRoles, o)
	case *rbacv1.ClusterRoleBinding:
		m.clusterRoleBindings = append(m.clusterRoleBindings, o)
	case *rbacv1.Role:
		m.roles = append(m.roles, o)
	case *rbacv1.RoleBinding:
		m.roleBindings = append(m.roleBindings, o)
	default:
		return false
	}
	return true
}

// deployment returns the one Deployment and its one container.
func (m manifests) deployment(t *testing.T) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	require.Len(t, m.deployments, 1)
	d := m.deployments[0]
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d, d.Spec.Template.Spec.Containers[0]
}

// flagValue returns the value of --name in args and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name {
			return "true", true
		}
	}
	return "", false
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	tests := []struct {
		dir, apiVersion, kind string
	}{
		{baseDir, "kustomize.config.k8s.io/v1beta1", "Kustomization"},
		{sweeperComponentDir, "kustomize.config.k8s.io/v1alpha1", "Component"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			k := readKustomization(t, tt.dir)
			assert.Equal(t, tt.apiVersion, k.APIVersion)
			assert.Equal(t, tt.kind, k.Kind)
			assert.Empty(t, k.Namespace, "a namespace transformer would move the objects that must be outside kube-system (the events RoleBinding in default)")

			for _, file := range k.Resources {
				assert.FileExists(t, filepath.Join(tt.dir, file), "listed in kustomization.yaml")
			}
			entries, err := os.ReadDir(tt.dir)
			require.NoError(t, err)
			var files []string
			for _, e := range entries {
				ext := filepath.Ext(e.Name())
				if e.IsDir() || (ext != ".yaml" && ext != ".yml") || e.Name() == "kustomization.yaml" {
					continue
				}
				files = append(files, e.Name())
			}
			require.NotEmpty(t, files)
			assert.ElementsMatch(t, files, k.Resources, "every manifest in %s is listed once in kustomization.yaml", tt.dir)
		})
	}
}

func TestDecodeStrictRejectsUnknownFields(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr bool
	}{
		{"known fields", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 2}\n", false},
		{"misspelt field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n", true},
		{"duplicate field", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x, name: y}\n", true},
		{"unknown kind", "apiVersion: example.com/v1\nkind: Nothing\nmetadata: {name: x}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeStrict([]byte(tt.doc))
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestManifestsAreInKubeSystem(t *testing.T) {
	m := loadManifestsFrom(t, baseDir, sweeperComponentDir)
	var metas []struct{ kind, name, namespace string }
	for _, o := range m.serviceAccounts {
		metas = append(metas, struct{ kind, name, namespace string }{"ServiceAccount", o.Name, o.Namespace})
	}
	for _, o := range m.secrets {
		metas = append(metas, struct{ kind, name, namespace string }{"Secret", o.Name, o.Namespace})
	}
	for _, o := range m.deployments {
		metas = append(metas, struct{ kind, name, namespace string }{"Deployment", o.Name, o.Namespace})
	}
	for _, o := range m.roles {
		metas = append(metas, struct{ kind, name, namespace string }{"Role", o.Name, o.Namespace})
	}
	for _, o := range m.roleBindings {
		if o.Namespace == "default" && o.RoleRef.Kind == "ClusterRole" && o.RoleRef.Name == "ccmkit:events" {
			continue // events on Nodes, which are written in default
		}
		metas = append(metas, struct{ kind, name, namespace string }{"RoleBinding", o.Name, o.Namespace})
	}
	require.NotEmpty(t, metas)
	for _, md := range metas {
		assert.Equal(t, "kube-system", md.namespace, "%s %s", md.kind, md.name)
	}
}

func TestDeployment(t *testing.T) {
	m := loadManifests(t)
	d, c := m.deployment(t)
	pod := d.Spec.Template.Spec

	t.Run("flags", func(t *testing.T) {
		want := map[string]string{
			"cloud-provider":                  provider.DefaultProviderName,
			"leader-elect":                    "true",
			"use-service-account-credentials": "true",
			"controllers":                     "*,-route",
		}
		for name, value := range want {
			got, ok := flagValue(c.Args, name)
			if assert.True(t, ok, "--%s missing", name) {
				assert.Equal(t, value, got, "--%s", name)
			}
		}
		_, ok := flagValue(c.Args, "bind-address")
		assert.True(t, ok, "--bind-address missing")
	})

	t.Run("cloud config is the mounted Secret", func(t *testing.T) {
		path, ok := flagValue(c.Args, "cloud-config")
		require.True(t, ok, "--cloud-config missing")
		secretName, key := mountedSecretFile(t, pod, c, path)
		secret := findSecret(t, m, secretName)
		assert.Contains(t, secretData(secret), key, "Secret %s has no key %q", secretName, key)
	})

	t.Run("probes use the secure port", func(t *testing.T) {
		port, ok := flagValue(c.Args, "secure-port")
		require.True(t, ok, "--secure-port missing")
		assert.Equal(t, "10258", port)
		assert.Equal(t, cloudprovider.CloudControllerManagerPort, 10258, "the upstream default port moved")
		for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			require.NotNil(t, p, "%s probe", name)
			require.NotNil(t, p.HTTPGet, "%s probe is not an HTTP GET", name)
			assert.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme, "%s probe", name)
			assert.Equal(t, "/healthz", p.HTTPGet.Path, "%s probe", name)
			assert.Equal(t, port, p.HTTPGet.Port.String(), "%s probe", name)
		}
	})

	t.Run("service account", func(t *testing.T) {
		require.Len(t, m.serviceAccounts, 1)
		assert.Equal(t, m.serviceAccounts[0].Name, pod.ServiceAccountName)
	})

	t.Run("scheduling", func(t *testing.T) {
		assert.EqualValues(t, 2, *d.Spec.Replicas)
		assert.Equal(t, "system-cluster-critical", pod.PriorityClassName)
		wantTolerations := []corev1.Toleration{
			{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
		}
		for _, want := range wantTolerations {
			assert.True(t, tolerates(pod.Tolerations, want), "no toleration for taint %s:%s", want.Key, want.Effect)
		}
		require.NotNil(t, pod.Affinity)
		require.NotNil(t, pod.Affinity.PodAntiAffinity)
		anti := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		require.Len(t, anti, 1)
		assert.Equal(t, "kubernetes.io/hostname", anti[0].TopologyKey)
		require.NotNil(t, anti[0].LabelSelector)
		assert.Equal(t, d.Spec.Selector.MatchLabels, anti[0].LabelSelector.MatchLabels)
		require.NotNil(t, pod.Affinity.NodeAffinity)
		assert.NotEmpty(t, pod.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	})

	t.Run("security context", func(t *testing.T) {
		sc := c.SecurityContext
		require.NotNil(t, sc)
		require.NotNil(t, sc.RunAsNonRoot)
		assert.True(t, *sc.RunAsNonRoot)
		require.NotNil(t, sc.ReadOnlyRootFilesystem)
		assert.True(t, *sc.ReadOnlyRootFilesystem)
		require.NotNil(t, sc.AllowPrivilegeEscalation)
		assert.False(t, *sc.AllowPrivilegeEscalation)
		require.NotNil(t, sc.Capabilities)
		assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
		assert.Empty(t, sc.Capabilities.Add)
		require.NotNil(t, sc.SeccompProfile)
		assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	})

	t.Run("resources", func(t *testing.T) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			assert.Contains(t, c.Resources.Requests, r, "request")
			assert.Contains(t, c.Resources.Limits, r, "limit")
		}
	})
}

// mountedSecretFile returns the Secret and key that the container sees at path.
func mountedSecretFile(t *testing.T, pod corev1.PodSpec, c corev1.Container, path string) (secretName, key string) {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		assert.True(t, vm.ReadOnly, "volume %s is not mounted read-only", vm.Name)
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		require.GreaterOrEqual(t, i, 0, "no volume %s", vm.Name)
		src := pod.Volumes[i].Secret
		require.NotNil(t, src, "volume %s is not a Secret", vm.Name)
		if len(src.Items) == 0 {
			return src.SecretName, rel
		}
		for _, item := range src.Items {
			if item.Path == rel {
				return src.SecretName, item.Key
			}
		}
		require.Failf(t, "no such file", "volume %s has no item with path %s", vm.Name, rel)
	}
	require.Failf(t, "not mounted", "no volume mount holds %s", path)
	return "", ""
}

func findSecret(t *testing.T, m manifests, name string) *corev1.Secret {
	t.Helper()
	i := slices.IndexFunc(m.secrets, func(s *corev1.Secret) bool { return s.Name == name })
	require.GreaterOrEqual(t, i, 0, "no Secret %s in the base", name)
	return m.secrets[i]
}

// secretData merges a Secret's data and stringData as the API server does.
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

// tolerates reports whether one of tolerations tolerates the taint key=value:effect.
func tolerates(tolerations []corev1.Toleration, want corev1.Toleration) bool {
	for _, tol := range tolerations {
		if tol.Effect != "" && tol.Effect != want.Effect {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Key == "" || tol.Key == want.Key {
				return true
			}
		case corev1.TolerationOpEqual, "":
			if tol.Key == want.Key && tol.Value == want.Value {
				return true
			}
		}
	}
	return false
}

func TestCloudConfigSecret(t *testing.T) {
	// The credential may come from the environment; keep the test's own out of it.
	t.Setenv("CCMKIT_CLOUD_TOKEN", "")
	t.Setenv("CCMKIT_CLOUD_TOKEN_FILE", "")

	m := loadManifests(t)
	_, c := m.deployment(t)
	path, ok := flagValue(c.Args, "cloud-config")
	require.True(t, ok)
	secretName, key := mountedSecretFile(t, m.deployments[0].Spec.Template.Spec, c, path)
	data, ok := secretData(findSecret(t, m, secretName))[key]
	require.True(t, ok, "Secret %s has no key %s", secretName, key)

	cfg, err := provider.ReadConfig(strings.NewReader(data), provider.DefaultProviderName)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, fake.SectionName, cfg.Backend)
	assert.NotEmpty(t, cfg.Cluster.ID, "cluster.id: load balancers need it")
	assert.False(t, cfg.RoutesEnabled(), "routes are on in the config but the Deployment runs --controllers=*,-route")

	// The whole provider builds from it, the backend section included.
	cloud, err := provider.Factory(builtin.Backend(), provider.Options{ProviderName: provider.DefaultProviderName})(strings.NewReader(data))
	require.NoError(t, err)
	assert.True(t, cloud.HasClusterID())
	_, ok = cloud.LoadBalancer()
	assert.True(t, ok, "load balancers")
}

// grantedVerbs returns the verbs that rules grant on group/resource without a
// resourceNames restriction, and those granted per name.
func grantedVerbs(rules []rbacv1.PolicyRule, group, resource string) (all []string, byName map[string][]string) {
	byName = map[string][]string{}
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) {
			continue
		}
		if len(r.ResourceNames) == 0 {
			all = append(all, r.Verbs...)
			continue
		}
		for _, n := range r.ResourceNames {
			byName[n] = append(byName[n], r.Verbs...)
		}
	}
	return all, byName
}

// controllerClients returns the identities the controllers of examples/ccm (the upstream
// ones, the load balancer class controller and the sweeper) ask the client builder for
// under --use-service-account-credentials.
func controllerClients() []string {
	var clients []string
	for _, ctor := range controllers.With(app.DefaultInitFuncConstructors) {
		client := ctor.InitContext.ClientName
		if client == "" { // ccmkit's load balancer controllers: the provider's own identity
			client = cloudProviderClient
		}
		if !slices.Contains(clients, client) {
			clients = append(clients, client)
		}
	}
	return clients
}

// TestRBAC checks the base's RBAC, and the base's with the component that grants the
// sweeper its own (an overlay adds it when the cloud config enables the sweeper).
func TestRBAC(t *testing.T) {
	for _, set := range []struct {
		name    string
		dirs    []string
		sweeper bool // the sweeper's identity has its grants
	}{
		{"base", []string{baseDir}, false},
		{"base with " + sweeperComponentDir, []string{baseDir, sweeperComponentDir}, true},
	} {
		t.Run(set.name, func(t *testing.T) {
			testRBAC(t, loadManifestsFrom(t, set.dirs...), set.sweeper)
		})
	}
}

func testRBAC(t *testing.T, m manifests, sweeperGranted bool) {
	require.Len(t, m.serviceAccounts, 1)
	sa := m.serviceAccounts[0]
	d, _ := m.deployment(t)
	require.Equal(t, sa.Name, d.Spec.Template.Spec.ServiceAccountName)

	t.Run("no wildcards", func(t *testing.T) {
		var rules []rbacv1.PolicyRule
		for _, r := range m.clusterRoles {
			require.Nil(t, r.AggregationRule, "ClusterRole %s aggregates", r.Name)
			rules = append(rules, r.Rules...)
		}
		for _, r := range m.roles {
			rules = append(rules, r.Rules...)
		}
		require.NotEmpty(t, rules)
		for _, r := range rules {
			for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups, r.ResourceNames} {
				for _, s := range list {
					assert.NotContains(t, s, "*", "rule %+v", r)
				}
			}
			assert.Empty(t, r.NonResourceURLs, "rule %+v", r)
		}
	})

	// Each identity gets exactly what it uses (least privilege): cluster-wide through
	// ClusterRoleBindings, and events only where its recorder writes them.
	t.Run("per identity", func(t *testing.T) {
		events := []string{"create", "patch", "update"}
		want := map[string]struct {
			cluster    map[string][]string // resource -> verbs, cluster-wide
			namespaced map[string][]string // namespace -> verbs on events there
		}{
			sa.Name: {
				cluster:    map[string][]string{"nodes": {"list", "watch"}, "services": {"list", "watch"}},
				namespaced: map[string][]string{"kube-system": events},
			},
			"node-controller": {
				cluster:    map[string][]string{"nodes": {"get", "update", "patch", "delete"}, "nodes/status": {"patch"}},
				namespaced: map[string][]string{"default": events},
			},
			"service-controller": {
				cluster: map[string][]string{"services/status": {"patch"}, "events": events},
			},
			"route-controller": {
				cluster:    map[string][]string{"nodes/status": {"patch"}},
				namespaced: map[string][]string{"default": events},
			},
			cloudProviderClient: {
				cluster: map[string][]string{"events": events, "nodes": {"list", "watch"}, "services": {"patch", "list"}, "services/status": {"patch"}},
			},
			// Nothing unless the component grants it.
			sweeper.ClientName: {},
		}
		if sweeperGranted {
			w := want[sweeper.ClientName]
			w.cluster = map[string][]string{"nodes": {"get"}, "services": {"get", "list"}, "events": events}
			want[sweeper.ClientName] = w
		}
		// Every client a controller of examples/ccm asks for under
		// --use-service-account-credentials has its expectation above.
		for _, client := range controllerClients() {
			assert.Contains(t, want, client, "controller identity %s", client)
		}
		for identity, w := range want {
			got := clusterGrants(m, identity)
			for resource, verbs := range got {
				slices.Sort(verbs)
				got[resource] = verbs
			}
			wantCluster := map[string][]string{}
			for resource, verbs := range w.cluster {
				wantCluster[resource] = slices.Sorted(slices.Values(verbs))
			}
			assert.Equal(t, wantCluster, got, "cluster-wide grants of %s", identity)
			for ns, verbs := range w.namespaced {
				gotNS := namespacedGrants(m, identity, ns)["events"]
				assert.ElementsMatch(t, verbs, gotNS, "events of %s in %s", identity, ns)
			}
		}
	})

	// The manager may request the controllers' tokens, and only theirs.
	t.Run("controller identities", func(t *testing.T) {
		clients := controllerClients()
		require.Contains(t, clients, sweeper.ClientName)
		if !sweeperGranted {
			clients = slices.DeleteFunc(clients, func(c string) bool { return c == sweeper.ClientName })
		}
		roleBoundTo(t, m, sa.Name, "ccmkit:cloud-controller-manager")
		rules := kubeSystemRules(m, sa.Name)
		createSA, _ := grantedVerbs(rules, "", "serviceaccounts")
		assert.Equal(t, []string{"create"}, createSA, "unrestricted serviceaccounts verbs")
		tokenAll, tokenByName := grantedVerbs(rules, "", "serviceaccounts/token")
		assert.Empty(t, tokenAll, "tokens must be limited by name")
		_, getByName := grantedVerbs(rules, "", "serviceaccounts")
		require.Contains(t, clients, cloudProviderClient, "the provider's identity: events, ccmkit's load balancer controllers")
		for _, client := range clients {
			assert.Equal(t, []string{"create"}, tokenByName[client], "serviceaccounts/token %s", client)
			assert.Equal(t, []string{"get"}, getByName[client], "serviceaccounts %s", client)
		}
		assert.Len(t, tokenByName, len(clients), "tokens of other ServiceAccounts")
		assert.Len(t, getByName, len(clients), "other ServiceAccounts")
	})

	t.Run("leader election", func(t *testing.T) {
		opts, err := options.NewCloudControllerManagerOptions()
		require.NoError(t, err)
		le := opts.Generic.LeaderElection
		require.Equal(t, "leases", le.ResourceLock)
		require.Equal(t, "kube-system", le.ResourceNamespace)

		role := roleBoundTo(t, m, sa.Name, "ccmkit:cloud-controller-manager")
		all, byName := grantedVerbs(role.Rules, "coordination.k8s.io", "leases")
		assert.ElementsMatch(t, []string{"create"}, all)
		assert.ElementsMatch(t, []string{"get", "update"}, byName[le.ResourceName])
		assert.Len(t, byName, 1, "leases other than %s", le.ResourceName)
	})

	t.Run("authentication delegation", func(t *testing.T) {
		roleBoundTo(t, m, sa.Name, "extension-apiserver-authentication-reader")
		clusterRoleBoundTo(t, m, sa.Name, "system:auth-delegator")
	})

	t.Run("bindings refer to roles that exist", func(t *testing.T) {
		builtinClusterRoles := []string{"system:auth-delegator"}
		builtinRoles := []string{"extension-apiserver-authentication-reader"}
		for _, b := range m.clusterRoleBindings {
			require.Equal(t, "ClusterRole", b.RoleRef.Kind, b.Name)
			exists := slices.ContainsFunc(m.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
			assert.True(t, exists || slices.Contains(builtinClusterRoles, b.RoleRef.Name), "ClusterRoleBinding %s: no ClusterRole %s", b.Name, b.RoleRef.Name)
		}
		for _, b := range m.roleBindings {
			if b.RoleRef.Kind == "ClusterRole" {
				exists := slices.ContainsFunc(m.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
				assert.True(t, exists, "RoleBinding %s: no ClusterRole %s", b.Name, b.RoleRef.Name)
				continue
			}
			require.Equal(t, "Role", b.RoleRef.Kind, b.Name)
			exists := slices.ContainsFunc(m.roles, func(r *rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == b.Namespace })
			assert.True(t, exists || slices.Contains(builtinRoles, b.RoleRef.Name), "RoleBinding %s: no Role %s", b.Name, b.RoleRef.Name)
		}
	})
}

// hasSubject reports whether subjects name the ServiceAccount kube-system/name.
func hasSubject(subjects []rbacv1.Subject, name string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == name && s.Namespace == "kube-system"
	})
}

// clusterRoleBoundTo requires a ClusterRoleBinding of the ServiceAccount to the ClusterRole
// roleName and returns the ClusterRole if the base defines it (nil for a built-in one).
func clusterRoleBoundTo(t *testing.T, m manifests, serviceAccount, roleName string) *rbacv1.ClusterRole {
	t.Helper()
	bound := slices.ContainsFunc(m.clusterRoleBindings, func(b *rbacv1.ClusterRoleBinding) bool {
		return b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == roleName && hasSubject(b.Subjects, serviceAccount)
	})
	require.True(t, bound, "no ClusterRoleBinding of ServiceAccount %s to ClusterRole %s", serviceAccount, roleName)
	i := slices.IndexFunc(m.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == roleName })
	if i < 0 {
		return nil
	}
	return m.clusterRoles[i]
}

// roleBoundTo requires a RoleBinding in kube-system of the ServiceAccount to the Role
// roleName and returns the Role if the base defines it (nil for a built-in one).
func roleBoundTo(t *testing.T, m manifests, serviceAccount, roleName string) *rbacv1.Role {
	t.Helper()
	bound := slices.ContainsFunc(m.roleBindings, func(b *rbacv1.RoleBinding) bool {
		return b.Namespace == "kube-system" && b.RoleRef.Kind == "Role" && b.RoleRef.Name == roleName && hasSubject(b.Subjects, serviceAccount)
	})
	require.True(t, bound, "no RoleBinding of ServiceAccount %s to Role %s", serviceAccount, roleName)
	i := slices.IndexFunc(m.roles, func(r *rbacv1.Role) bool { return r.Name == roleName })
	if i < 0 {
		return nil
	}
	return m.roles[i]
}

// kubeSystemRules returns the rules of every Role that a RoleBinding in kube-system binds
// the ServiceAccount kube-system/serviceAccount to.
func kubeSystemRules(m manifests, serviceAccount string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range m.roleBindings {
		if b.Namespace != "kube-system" || b.RoleRef.Kind != "Role" || !hasSubject(b.Subjects, serviceAccount) {
			continue
		}
		for _, r := range m.roles {
			if r.Namespace == b.Namespace && r.Name == b.RoleRef.Name {
				rules = append(rules, r.Rules...)
			}
		}
	}
	return rules
}

// clusterGrants returns the verbs per resource ("nodes", "nodes/status") that the base's
// ClusterRoleBindings grant the ServiceAccount in kube-system, cluster-wide.
func clusterGrants(m manifests, serviceAccount string) map[string][]string {
	out := map[string][]string{}
	for _, b := range m.clusterRoleBindings {
		if !hasSubject(b.Subjects, serviceAccount) {
			continue
		}
		i := slices.IndexFunc(m.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
		if i < 0 {
			continue // a built-in ClusterRole (system:auth-delegator), checked on its own
		}
		addRules(out, m.clusterRoles[i].Rules)
	}
	return out
}

// namespacedGrants returns the verbs per resource that the base's RoleBindings in namespace
// grant the ServiceAccount in kube-system, through a Role or a ClusterRole.
func namespacedGrants(m manifests, serviceAccount, namespace string) map[string][]string {
	out := map[string][]string{}
	for _, b := range m.roleBindings {
		if b.Namespace != namespace || !hasSubject(b.Subjects, serviceAccount) {
			continue
		}
		if b.RoleRef.Kind == "ClusterRole" {
			if i := slices.IndexFunc(m.clusterRoles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name }); i >= 0 {
				addRules(out, m.clusterRoles[i].Rules)
			}
			continue
		}
		if i := slices.IndexFunc(m.roles, func(r *rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == namespace }); i >= 0 {
			addRules(out, m.roles[i].Rules)
		}
	}
	return out
}

// addRules adds the verbs of the core-group rules without resource names to out.
func addRules(out map[string][]string, rules []rbacv1.PolicyRule) {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, "") || len(r.ResourceNames) > 0 {
			continue
		}
		for _, res := range r.Resources {
			out[res] = append(out[res], r.Verbs...)
		}
	}
}
