package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/builtin"
	"github.com/ccmkit/ccmkit/sweeper"
)

// The chart, and the install its defaults are compared with deploy/base for:
// `helm install ccmkit deploy/helm/ccmkit -n kube-system`.
const (
	chartDir         = "helm/ccmkit"
	releaseName      = "ccmkit"
	releaseNamespace = "kube-system"
)

// monitorKinds are the Prometheus operator's kinds the chart renders, which client-go's
// scheme does not know: they are checked as unstructured YAML.
var monitorKinds = []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"}

// helmBinary returns the helm that `make unit` installs into ../.bin, or else one in PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	local, err := filepath.Abs(filepath.Join("..", ".bin", "helm"))
	require.NoError(t, err)
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if path, err := exec.LookPath("helm"); err == nil {
		return path
	}
	require.FailNow(t, "helm not found",
		"no helm at %s or in PATH: `make unit` installs it there (go install helm.sh/helm/v4/cmd/helm), then run the test again", local)
	return ""
}

// runHelm runs helm with its own empty configuration, cache and data directories and
// returns its standard output; the error holds its standard error.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// helmTemplate renders the chart as the release ccmkit in namespace with the further
// flags in args (--values, --set).
func helmTemplate(t *testing.T, namespace string, args ...string) ([]byte, error) {
	t.Helper()
	return runHelm(t, append([]string{"template", releaseName, chartDir, "--namespace", namespace}, args...)...)
}

// rendered is what the chart renders: the objects of the base's types, the Services and
// ConfigMaps and the admission policies, all decoded strictly, and the monitors and rules
// as unstructured YAML.
type rendered struct {
	manifests
	services   []*corev1.Service
	configMaps []*corev1.ConfigMap
	monitors   []map[string]any
	// admission are the ValidatingAdmissionPolicies and their bindings.
	admission []runtime.Object
}

// render renders the chart in kube-system and decodes every object.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	return renderIn(t, releaseNamespace, args...)
}

func renderIn(t *testing.T, namespace string, args ...string) rendered {
	t.Helper()
	out, err := helmTemplate(t, namespace, args...)
	require.NoError(t, err)
	docs := splitDocuments(t, out)
	require.NotEmpty(t, docs, "helm template rendered nothing")
	var r rendered
	for i, doc := range docs {
		var typeMeta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		require.NoError(t, yaml.Unmarshal(doc, &typeMeta), "document %d", i+1)
		if slices.Contains(monitorKinds, typeMeta.Kind) {
			var u map[string]any
			require.NoError(t, yaml.UnmarshalStrict(doc, &u), "document %d", i+1)
			r.monitors = append(r.monitors, u)
			continue
		}
		obj, err := decodeStrict(doc)
		require.NoError(t, err, "document %d:\n%s", i+1, doc)
		switch o := obj.(type) {
		case *corev1.Service:
			r.services = append(r.services, o)
			continue
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			r.admission = append(r.admission, o)
			continue
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			r.configMaps = append(r.configMaps, cm)
			continue
		}
		require.True(t, r.add(obj), "document %d: unexpected object %T", i+1, obj)
	}
	return r
}

// ciValuesFiles returns the chart's ci/*-values.yaml.
func ciValuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no values files in %s/ci", chartDir)
	return files
}

// ciFile returns the path of one of the chart's ci values files.
func ciFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(chartDir, "ci", name)
	require.FileExists(t, path)
	return path
}

// chartValues is the part of the chart's values the tests read back from a values file;
// a key the file leaves out is the zero value.
type chartValues struct {
	Replicas      *int32 `json:"replicas"`
	CloudProvider string `json:"cloudProvider"`
	CloudConfig   struct {
		Content           string `json:"content"`
		ExistingSecret    string `json:"existingSecret"`
		ExistingSecretKey string `json:"existingSecretKey"`
	} `json:"cloudConfig"`
	CloudToken struct {
		SecretName string `json:"secretName"`
		Key        string `json:"key"`
		Optional   *bool  `json:"optional"`
	} `json:"cloudToken"`
	Image struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		Digest     string `json:"digest"`
	} `json:"image"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets"`
	Routes           struct {
		ClusterCIDR string `json:"clusterCIDR"`
	} `json:"routes"`
	Sweeper struct {
		Enabled     bool   `json:"enabled"`
		GracePeriod string `json:"gracePeriod"`
		Interval    string `json:"interval"`
	} `json:"sweeper"`
	LeaderElection struct {
		LeaseDuration  string `json:"leaseDuration"`
		RenewDeadline  string `json:"renewDeadline"`
		RetryPeriod    string `json:"retryPeriod"`
		LeaseNamespace string `json:"leaseNamespace"`
		LeaseName      string `json:"leaseName"`
	} `json:"leaderElection"`
	ExtraArgs      []string                    `json:"extraArgs"`
	NodeSelector   map[string]string           `json:"nodeSelector"`
	PodAnnotations map[string]string           `json:"podAnnotations"`
	PodLabels      map[string]string           `json:"podLabels"`
	Resources      corev1.ResourceRequirements `json:"resources"`
	ServiceAccount struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"serviceAccount"`
	Metrics struct {
		ServiceMonitor struct {
			Interval string            `json:"interval"`
			Labels   map[string]string `json:"labels"`
		} `json:"serviceMonitor"`
		PodMonitor struct {
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"podMonitor"`
		ScraperClusterRole struct {
			Subjects []rbacv1.Subject `json:"subjects"`
		} `json:"scraperClusterRole"`
		GrafanaDashboard struct {
			Label       string            `json:"label"`
			LabelValue  string            `json:"labelValue"`
			Namespace   string            `json:"namespace"`
			Annotations map[string]string `json:"annotations"`
		} `json:"grafanaDashboard"`
		PrometheusRule struct {
			Labels map[string]string `json:"labels"`
		} `json:"prometheusRule"`
	} `json:"metrics"`
}

func readValues(t *testing.T, path string) chartValues {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var v chartValues
	require.NoError(t, yaml.Unmarshal(data, &v), path)
	return v
}

// chartAppVersion returns Chart.yaml's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(data, &chart))
	require.NotEmpty(t, chart.AppVersion)
	return chart.AppVersion
}

// field returns the value at path in unstructured YAML: map keys (string) and list
// indexes (int).
func field(t *testing.T, obj any, path ...any) any {
	t.Helper()
	cur := obj
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			require.True(t, ok, "%v is not a mapping", path[:i])
			cur, ok = m[k]
			require.True(t, ok, "no %v", path[:i+1])
		case int:
			l, ok := cur.([]any)
			require.True(t, ok, "%v is not a list", path[:i])
			require.Less(t, k, len(l), "no %v", path[:i+1])
			cur = l[k]
		default:
			require.Failf(t, "bad path", "%v", path)
		}
	}
	return cur
}

// stringMap converts an unstructured mapping of strings.
func stringMap(t *testing.T, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%v is not a mapping", v)
	out := map[string]string{}
	for k, val := range m {
		s, ok := val.(string)
		require.True(t, ok, "%s: %v is not a string", k, val)
		out[k] = s
	}
	return out
}

// isSubset reports whether every label of sub is in labels.
func isSubset(sub, labels map[string]string) bool {
	for k, v := range sub {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return len(sub) > 0
}

// ruleKey describes one policy rule, independent of the order of its lists.
func ruleKey(r rbacv1.PolicyRule) string {
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	return fmt.Sprintf("apiGroups=%q resources=%q verbs=%q resourceNames=%q nonResourceURLs=%q",
		sorted(r.APIGroups), sorted(r.Resources), sorted(r.Verbs), sorted(r.ResourceNames), sorted(r.NonResourceURLs))
}

// roleRules returns the rules of every ClusterRole and Role by kind, namespace and name.
func roleRules(m manifests) map[string][]string {
	out := map[string][]string{}
	add := func(kind, namespace, name string, rules []rbacv1.PolicyRule) {
		key := kind + " " + namespace + "/" + name
		for _, r := range rules {
			out[key] = append(out[key], ruleKey(r))
		}
		slices.Sort(out[key])
	}
	for _, r := range m.clusterRoles {
		add("ClusterRole", "", r.Name, r.Rules)
	}
	for _, r := range m.roles {
		add("Role", r.Namespace, r.Name, r.Rules)
	}
	return out
}

// bindings describes every ClusterRoleBinding and RoleBinding by kind, namespace and
// name: its role and its subjects, with the ServiceAccount manager written as <manager>.
func bindings(m manifests, manager string) map[string][]string {
	out := map[string][]string{}
	add := func(kind, namespace, name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		desc := []string{"roleRef " + ref.Kind + " " + ref.Name}
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == manager {
				s.Name = "<manager>"
			}
			desc = append(desc, "subject "+s.Kind+" "+s.Namespace+"/"+s.Name)
		}
		slices.Sort(desc)
		out[kind+" "+namespace+"/"+name] = desc
	}
	for _, b := range m.clusterRoleBindings {
		add("ClusterRoleBinding", "", b.Name, b.RoleRef, b.Subjects)
	}
	for _, b := range m.roleBindings {
		add("RoleBinding", b.Namespace, b.Name, b.RoleRef, b.Subjects)
	}
	return out
}

// envFromSecret returns the container's environment variables filled from a Secret.
func envFromSecret(c corev1.Container) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out = append(out, e)
		}
	}
	return out
}

func TestHelmLint(t *testing.T) {
	for _, values := range append([]string{""}, ciValuesFiles(t)...) {
		name := "defaults"
		args := []string{"lint", "--strict", chartDir, "--namespace", releaseNamespace}
		if values != "" {
			name = filepath.Base(values)
			args = append(args, "--values", values)
		}
		t.Run(name, func(t *testing.T) {
			out, err := runHelm(t, args...)
			require.NoError(t, err, "%s", out)
		})
	}
}

// TestHelmDefaultsMatchBase renders the chart with its default values and compares it
// with the kustomize base.
func TestHelmDefaultsMatchBase(t *testing.T) {
	base := loadManifests(t)
	chart := render(t)
	baseDeployment, baseContainer := base.deployment(t)
	d, c := chart.deployment(t)
	basePod, pod := baseDeployment.Spec.Template.Spec, d.Spec.Template.Spec

	t.Run("objects", func(t *testing.T) {
		counts := func(m manifests) []int {
			return []int{len(m.serviceAccounts), len(m.secrets), len(m.deployments), len(m.clusterRoles),
				len(m.clusterRoleBindings), len(m.roles), len(m.roleBindings)}
		}
		assert.Equal(t, counts(base), counts(chart.manifests), "objects of each kind")
		assert.Empty(t, chart.services)
		assert.Empty(t, chart.configMaps)
		assert.Empty(t, chart.monitors)
	})

	t.Run("rbac rules", func(t *testing.T) {
		want := roleRules(base)
		require.NotEmpty(t, want)
		assert.Equal(t, want, roleRules(chart.manifests))
	})

	t.Run("bindings", func(t *testing.T) {
		require.Len(t, base.serviceAccounts, 1)
		require.Len(t, chart.serviceAccounts, 1)
		assert.Equal(t, chart.serviceAccounts[0].Name, pod.ServiceAccountName)
		want := bindings(base, base.serviceAccounts[0].Name)
		require.NotEmpty(t, want)
		assert.Equal(t, want, bindings(chart.manifests, chart.serviceAccounts[0].Name))
	})

	t.Run("deployment", func(t *testing.T) {
		assert.Equal(t, baseContainer.Args, c.Args, "args")
		assert.Equal(t, baseContainer.Env, c.Env, "env")
		assert.Equal(t, basePod.Volumes, pod.Volumes, "volumes")
		assert.Equal(t, baseContainer.VolumeMounts, c.VolumeMounts, "volume mounts")
		assert.Equal(t, basePod.SecurityContext, pod.SecurityContext, "pod security context")
		assert.Equal(t, baseContainer.SecurityContext, c.SecurityContext, "container security context")
		assert.Equal(t, basePod.Tolerations, pod.Tolerations, "tolerations")
		assert.Equal(t, baseContainer.Ports, c.Ports, "ports")
		assert.Equal(t, baseContainer.LivenessProbe, c.LivenessProbe, "liveness probe")
		assert.Equal(t, baseContainer.ReadinessProbe, c.ReadinessProbe, "readiness probe")
		assert.Equal(t, baseContainer.Resources, c.Resources, "resources")
		assert.Equal(t, baseDeployment.Spec.Replicas, d.Spec.Replicas, "replicas")
		assert.Equal(t, baseDeployment.Spec.Strategy, d.Spec.Strategy, "strategy")
		assert.Equal(t, basePod.PriorityClassName, pod.PriorityClassName, "priority class")
		assert.Equal(t, basePod.HostNetwork, pod.HostNetwork, "host network")
		assert.Equal(t, basePod.DNSPolicy, pod.DNSPolicy, "DNS policy")
		assert.Equal(t, baseContainer.Name, c.Name)

		baseRepo, _, _ := strings.Cut(baseContainer.Image, ":")
		assert.Equal(t, baseRepo+":"+chartAppVersion(t), c.Image, "the base's image at the chart's appVersion")
	})

	t.Run("affinity", func(t *testing.T) {
		require.NotNil(t, pod.Affinity)
		assert.Equal(t, basePod.Affinity.NodeAffinity, pod.Affinity.NodeAffinity)
		// The same anti-affinity, on the chart's own selector.
		want := basePod.Affinity.PodAntiAffinity.DeepCopy()
		require.Len(t, want.RequiredDuringSchedulingIgnoredDuringExecution, 1)
		want.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels = d.Spec.Selector.MatchLabels
		assert.Equal(t, want, pod.Affinity.PodAntiAffinity)
		assert.True(t, isSubset(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels), "the selector selects the pods")
	})

	t.Run("cloud config", func(t *testing.T) {
		path, ok := flagValue(c.Args, "cloud-config")
		require.True(t, ok)
		baseSecret, baseKey := mountedSecretFile(t, basePod, baseContainer, path)
		secret, key := mountedSecretFile(t, pod, c, path)
		assert.Equal(t, baseSecret, secret)
		assert.Equal(t, baseKey, key)
		want := secretData(findSecret(t, base, baseSecret))[baseKey]
		require.NotEmpty(t, want)
		assert.Equal(t, want, secretData(findSecret(t, chart.manifests, secret))[key])
	})
}

// TestHelmRenders renders every ci values file and checks what must hold whatever the
// values: strict decoding (in render), one Deployment whose cloud config and
// ServiceAccount are there, and RBAC without wildcards that binds every identity the
// manager uses.
func TestHelmRenders(t *testing.T) {
	// Another provider name reads other variables; keep the test's own out of them.
	t.Setenv("CCMKIT_CLOUD_TOKEN", "")
	t.Setenv("CCMKIT_CLOUD_TOKEN_FILE", "")
	for _, values := range ciValuesFiles(t) {
		t.Run(filepath.Base(values), func(t *testing.T) {
			v := readValues(t, values)
			r := render(t, "--values", values)
			d, c := r.deployment(t)
			pod := d.Spec.Template.Spec
			providerName, ok := flagValue(c.Args, "cloud-provider")
			require.True(t, ok, "--cloud-provider")
			leader, ok := flagValue(c.Args, "leader-elect")
			require.True(t, ok)
			assert.Equal(t, "true", leader, "--leader-elect")

			assert.Equal(t, releaseNamespace, d.Namespace, "Deployment %s", d.Name)
			for _, s := range r.secrets {
				assert.Equal(t, releaseNamespace, s.Namespace, "Secret %s", s.Name)
			}
			for _, s := range r.serviceAccounts {
				assert.Equal(t, releaseNamespace, s.Namespace, "ServiceAccount %s", s.Name)
			}

			t.Run("cloud config", func(t *testing.T) {
				path, ok := flagValue(c.Args, "cloud-config")
				require.True(t, ok)
				secretName, key := mountedSecretFile(t, pod, c, path)
				if v.CloudConfig.ExistingSecret != "" {
					assert.Equal(t, v.CloudConfig.ExistingSecret, secretName)
					return
				}
				data, ok := secretData(findSecret(t, r.manifests, secretName))[key]
				require.True(t, ok, "Secret %s has no key %s", secretName, key)
				cfg, err := provider.ReadConfig(strings.NewReader(data), providerName)
				require.NoError(t, err)
				require.NoError(t, cfg.Validate())
				_, routes := flagValue(c.Args, "configure-cloud-routes")
				assert.Equal(t, cfg.RoutesEnabled(), routes, "enable.routes in the cloud config and --configure-cloud-routes")
				assert.Equal(t, v.Sweeper.Enabled, cfg.Sweeper.Enabled, "sweeper.enabled in the values and the cloud config")
			})

			t.Run("service account", func(t *testing.T) {
				name := pod.ServiceAccountName
				require.NotEmpty(t, name)
				if v.ServiceAccount.Name != "" {
					assert.Equal(t, v.ServiceAccount.Name, name)
				}
				assert.True(t, slices.ContainsFunc(r.serviceAccounts, func(sa *corev1.ServiceAccount) bool { return sa.Name == name }),
					"no ServiceAccount %s", name)
			})

			t.Run("rbac", func(t *testing.T) {
				checkRBAC(t, r.manifests, pod.ServiceAccountName, providerName, v.Sweeper.Enabled)
			})
		})
	}
}

// checkRBAC checks the RBAC the chart renders for the manager's ServiceAccount (in
// kube-system) and the provider name, with or without the sweeper's.
func checkRBAC(t *testing.T, m manifests, manager, providerName string, sweeperOn bool) {
	t.Helper()
	var rules []rbacv1.PolicyRule
	for _, r := range m.clusterRoles {
		require.Nil(t, r.AggregationRule, "ClusterRole %s aggregates", r.Name)
		rules = append(rules, r.Rules...)
	}
	for _, r := range m.roles {
		rules = append(rules, r.Rules...)
	}
	for _, r := range rules {
		for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups, r.ResourceNames, r.NonResourceURLs} {
			for _, s := range list {
				assert.NotContains(t, s, "*", "rule %+v", r)
			}
		}
		if len(r.NonResourceURLs) > 0 {
			assert.Equal(t, []string{"/metrics"}, r.NonResourceURLs, "the only non-resource URL is the scraper's")
			assert.Equal(t, []string{"get"}, r.Verbs)
			assert.Empty(t, r.Resources)
		}
	}

	prefix := releaseName + ":"
	informers := clusterRoleBoundTo(t, m, manager, prefix+"cloud-controller-manager")
	require.NotNil(t, informers)
	for _, client := range []string{"node-controller", "service-controller", "route-controller"} {
		require.NotNil(t, clusterRoleBoundTo(t, m, client, prefix+client), "%s's own ClusterRole", client)
	}
	providerClient := providerName + "-cloud-provider"
	events := clusterRoleBoundTo(t, m, providerClient, prefix+"events")
	require.NotNil(t, events)
	require.Len(t, events.Rules, 1)

	clients := []string{"node-controller", "service-controller", "route-controller", providerClient}
	if sweeperOn {
		clients = append(clients, sweeper.ClientName)
		sweeperRole := clusterRoleBoundTo(t, m, sweeper.ClientName, prefix+sweeper.ClientName)
		require.NotNil(t, sweeperRole, "the sweeper's own ClusterRole")
		assert.Equal(t, map[string][]string{"nodes": {"get"}, "services": {"get", "list"}, "events": {"create", "patch", "update"}},
			clusterGrants(m, sweeper.ClientName), "the sweeper's grants")
	} else {
		assert.Empty(t, clusterGrants(m, sweeper.ClientName), "grants of the sweeper, which is off")
	}

	role := roleBoundTo(t, m, manager, prefix+"cloud-controller-manager")
	require.NotNil(t, role)
	managerRules := kubeSystemRules(m, manager)
	tokenAll, tokenByName := grantedVerbs(managerRules, "", "serviceaccounts/token")
	assert.Empty(t, tokenAll, "tokens must be limited by name")
	assert.ElementsMatch(t, clients, slices.Collect(maps.Keys(tokenByName)), "the identities the manager may request tokens for")
	_, getByName := grantedVerbs(managerRules, "", "serviceaccounts")
	assert.ElementsMatch(t, clients, slices.Collect(maps.Keys(getByName)), "the ServiceAccounts the manager may get")
	roleBoundTo(t, m, manager, "extension-apiserver-authentication-reader")
	clusterRoleBoundTo(t, m, manager, "system:auth-delegator")
}

// chartCloudConfig returns the cloud config of the chart's own Secret as the Deployment
// mounts it.
func chartCloudConfig(t *testing.T, r rendered) string {
	t.Helper()
	d, c := r.deployment(t)
	path, ok := flagValue(c.Args, "cloud-config")
	require.True(t, ok)
	secretName, key := mountedSecretFile(t, d.Spec.Template.Spec, c, path)
	data, ok := secretData(findSecret(t, r.manifests, secretName))[key]
	require.True(t, ok, "Secret %s has no key %s", secretName, key)
	return data
}

// TestHelmSweeper renders ci/sweeper-values.yaml: the chart's cloud config gains a sweeper
// section from the values and builds a provider whose sweeper is on, and the RBAC is the
// base's with the kustomize component of the sweeper.
func TestHelmSweeper(t *testing.T) {
	t.Setenv("CCMKIT_CLOUD_TOKEN", "")
	t.Setenv("CCMKIT_CLOUD_TOKEN_FILE", "")
	values := ciFile(t, "sweeper-values.yaml")
	v := readValues(t, values)
	require.True(t, v.Sweeper.Enabled)
	chart := render(t, "--values", values)

	t.Run("rbac is the base's with the component", func(t *testing.T) {
		want := loadManifestsFrom(t, baseDir, sweeperComponentDir)
		require.Len(t, want.serviceAccounts, 1)
		require.Len(t, chart.serviceAccounts, 1)
		assert.Equal(t, roleRules(want), roleRules(chart.manifests))
		assert.Equal(t, bindings(want, want.serviceAccounts[0].Name), bindings(chart.manifests, chart.serviceAccounts[0].Name))
	})

	t.Run("cloud config", func(t *testing.T) {
		data := chartCloudConfig(t, chart)
		content := chartCloudConfig(t, render(t))
		assert.True(t, strings.HasPrefix(data, content), "cloudConfig.content is kept as written, the sweeper section after it:\n%s", data)

		cfg, err := provider.ReadConfig(strings.NewReader(data), provider.DefaultProviderName)
		require.NoError(t, err)
		require.NoError(t, cfg.Validate())
		assert.True(t, cfg.Sweeper.Enabled)
		grace, err := time.ParseDuration(v.Sweeper.GracePeriod)
		require.NoError(t, err)
		interval, err := time.ParseDuration(v.Sweeper.Interval)
		require.NoError(t, err)
		assert.Equal(t, grace, cfg.Sweeper.GracePeriod)
		assert.Equal(t, interval, cfg.Sweeper.Interval)

		// The whole provider builds from it and offers the sweeper its load balancers.
		cloud, err := provider.Factory(builtin.Backend(), provider.Options{ProviderName: provider.DefaultProviderName})(strings.NewReader(data))
		require.NoError(t, err)
		c, ok := cloud.(sweeper.Cloud)
		require.True(t, ok, "%T offers no sweeper", cloud)
		target, ok := c.Sweeper()
		require.True(t, ok, "the sweeper is off")
		assert.NotNil(t, target.LoadBalancers)
		assert.Equal(t, grace, target.Options.GracePeriod)
	})

	t.Run("ccmkit's defaults", func(t *testing.T) {
		data := chartCloudConfig(t, render(t, "--set", "sweeper.enabled=true"))
		cfg, err := provider.ReadConfig(strings.NewReader(data), provider.DefaultProviderName)
		require.NoError(t, err)
		assert.True(t, cfg.Sweeper.Enabled)
		assert.Equal(t, provider.DefaultSweeperGracePeriod, cfg.Sweeper.GracePeriod)
		assert.Equal(t, provider.DefaultSweeperInterval, cfg.Sweeper.Interval)
	})

	t.Run("off", func(t *testing.T) {
		r := render(t)
		cfg, err := provider.ReadConfig(strings.NewReader(chartCloudConfig(t, r)), provider.DefaultProviderName)
		require.NoError(t, err)
		assert.False(t, cfg.Sweeper.Enabled)
		assert.Empty(t, clusterGrants(r.manifests, sweeper.ClientName))
		assert.Empty(t, kubeSystemRules(r.manifests, sweeper.ClientName))
	})

	// With a Secret of the operator's, the chart grants and the operator switches the
	// sweeper on in that Secret.
	t.Run("existing secret", func(t *testing.T) {
		r := render(t, "--values", ciFile(t, "existing-secret-values.yaml"), "--set", "sweeper.enabled=true")
		assert.Empty(t, r.secrets)
		d, c := r.deployment(t)
		providerName, ok := flagValue(c.Args, "cloud-provider")
		require.True(t, ok)
		checkRBAC(t, r.manifests, d.Spec.Template.Spec.ServiceAccountName, providerName, true)
	})
}

func TestHelmExistingSecret(t *testing.T) {
	values := ciFile(t, "existing-secret-values.yaml")
	v := readValues(t, values)
	require.NotEmpty(t, v.CloudConfig.ExistingSecret)
	require.NotEmpty(t, v.CloudConfig.ExistingSecretKey)
	r := render(t, "--values", values)
	d, c := r.deployment(t)

	assert.Empty(t, r.secrets, "the chart renders no Secret of its own")
	path, ok := flagValue(c.Args, "cloud-config")
	require.True(t, ok)
	secretName, key := mountedSecretFile(t, d.Spec.Template.Spec, c, path)
	assert.Equal(t, v.CloudConfig.ExistingSecret, secretName)
	assert.Equal(t, v.CloudConfig.ExistingSecretKey, key)

	t.Run("credential", func(t *testing.T) {
		providerName, ok := flagValue(c.Args, "cloud-provider")
		require.True(t, ok)
		assert.Equal(t, v.CloudProvider, providerName)

		envs := envFromSecret(c)
		require.Len(t, envs, 1)
		ref := envs[0].ValueFrom.SecretKeyRef
		assert.Equal(t, v.CloudToken.SecretName, ref.Name)
		assert.Equal(t, v.CloudToken.Key, ref.Key)
		assert.Equal(t, v.CloudToken.Optional, ref.Optional)

		// The provider of that name reads its credential from exactly this variable.
		base := loadManifests(t)
		baseDeployment, baseContainer := base.deployment(t)
		basePath, ok := flagValue(baseContainer.Args, "cloud-config")
		require.True(t, ok)
		baseSecret, baseKey := mountedSecretFile(t, baseDeployment.Spec.Template.Spec, baseContainer, basePath)
		config := secretData(findSecret(t, base, baseSecret))[baseKey]
		t.Setenv(envs[0].Name, "from-the-environment")
		t.Setenv(envs[0].Name+"_FILE", "")
		cfg, err := provider.ReadConfig(strings.NewReader(config), providerName)
		require.NoError(t, err)
		assert.Equal(t, "from-the-environment", cfg.Credentials.Token.Reveal(), "%s is not the variable provider %q reads", envs[0].Name, providerName)
	})

	t.Run("image", func(t *testing.T) {
		assert.Equal(t, v.Image.Repository+":"+v.Image.Tag+"@"+v.Image.Digest, c.Image)
		assert.Equal(t, v.ImagePullSecrets, d.Spec.Template.Spec.ImagePullSecrets)
	})

	t.Run("defaults have the chart's Secret", func(t *testing.T) {
		r := render(t)
		d, c := r.deployment(t)
		secretName, _ := mountedSecretFile(t, d.Spec.Template.Spec, c, path)
		findSecret(t, r.manifests, secretName)
	})
}

func TestHelmRoutes(t *testing.T) {
	values := ciFile(t, "routes-values.yaml")
	v := readValues(t, values)
	require.NotEmpty(t, v.Routes.ClusterCIDR)

	t.Run("off by default", func(t *testing.T) {
		_, c := render(t).deployment(t)
		controllers, _ := flagValue(c.Args, "controllers")
		assert.Contains(t, strings.Split(controllers, ","), "-route")
		for _, flag := range []string{"configure-cloud-routes", "cluster-cidr", "leader-elect-lease-duration",
			"leader-elect-renew-deadline", "leader-elect-retry-period", "leader-elect-resource-namespace", "leader-elect-resource-name"} {
			_, ok := flagValue(c.Args, flag)
			assert.False(t, ok, "--%s without its value", flag)
		}
	})

	r := render(t, "--values", values)
	_, c := r.deployment(t)

	t.Run("flags", func(t *testing.T) {
		controllers, ok := flagValue(c.Args, "controllers")
		require.True(t, ok)
		assert.NotContains(t, strings.Split(controllers, ","), "-route")
		assert.Contains(t, strings.Split(controllers, ","), "*")
		configure, ok := flagValue(c.Args, "configure-cloud-routes")
		assert.True(t, ok)
		assert.Equal(t, "true", configure)
		cidr, ok := flagValue(c.Args, "cluster-cidr")
		assert.True(t, ok)
		assert.Equal(t, v.Routes.ClusterCIDR, cidr)
		for _, extra := range v.ExtraArgs {
			assert.Contains(t, c.Args, extra)
		}
	})

	t.Run("controllers without the wildcard get route", func(t *testing.T) {
		_, c := render(t, "--set", "routes.configureCloudRoutes=true", "--set", "routes.clusterCIDR=10.244.0.0/16",
			"--set", "controllers={cloud-node,cloud-node-lifecycle,-route}").deployment(t)
		controllers, _ := flagValue(c.Args, "controllers")
		assert.Equal(t, "cloud-node,cloud-node-lifecycle,route", controllers)
	})

	t.Run("leader election", func(t *testing.T) {
		le := v.LeaderElection
		require.NotEmpty(t, le.LeaseNamespace)
		require.NotEqual(t, releaseNamespace, le.LeaseNamespace)
		for flag, want := range map[string]string{
			"leader-elect-lease-duration":     le.LeaseDuration,
			"leader-elect-renew-deadline":     le.RenewDeadline,
			"leader-elect-retry-period":       le.RetryPeriod,
			"leader-elect-resource-namespace": le.LeaseNamespace,
			"leader-elect-resource-name":      le.LeaseName,
		} {
			got, ok := flagValue(c.Args, flag)
			if assert.True(t, ok, "--%s", flag) {
				assert.Equal(t, want, got, "--%s", flag)
			}
		}

		// The lease's rules follow it to its namespace, for its name only.
		var leaseRoles []*rbacv1.Role
		for _, role := range r.roles {
			all, byName := grantedVerbs(role.Rules, "coordination.k8s.io", "leases")
			if len(all) == 0 && len(byName) == 0 {
				continue
			}
			leaseRoles = append(leaseRoles, role)
			assert.Equal(t, le.LeaseNamespace, role.Namespace, "Role %s", role.Name)
			assert.Equal(t, []string{"create"}, all)
			assert.Equal(t, map[string][]string{le.LeaseName: {"get", "update"}}, byName)
		}
		require.Len(t, leaseRoles, 1)
		manager := r.deployments[0].Spec.Template.Spec.ServiceAccountName
		bound := slices.ContainsFunc(r.roleBindings, func(b *rbacv1.RoleBinding) bool {
			return b.Namespace == le.LeaseNamespace && b.RoleRef.Kind == "Role" && b.RoleRef.Name == leaseRoles[0].Name &&
				hasSubject(b.Subjects, manager)
		})
		assert.True(t, bound, "no RoleBinding of %s to the lease's Role in %s", manager, le.LeaseNamespace)
	})
}

func TestHelmMonitoring(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		r := render(t)
		assert.Empty(t, r.monitors)
		assert.Empty(t, r.services)
		for _, role := range r.clusterRoles {
			for _, rule := range role.Rules {
				assert.Empty(t, rule.NonResourceURLs, "ClusterRole %s", role.Name)
			}
		}
	})

	values := ciFile(t, "monitoring-values.yaml")
	v := readValues(t, values)
	r := render(t, "--values", values)
	d, c := r.deployment(t)
	podLabels := d.Spec.Template.Labels
	port, ok := flagValue(c.Args, "secure-port")
	require.True(t, ok)
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "https" })
	require.GreaterOrEqual(t, i, 0, "no container port https")
	assert.Equal(t, port, fmt.Sprint(c.Ports[i].ContainerPort), "the https port is the secure port")

	require.Len(t, r.services, 1)
	svc := r.services[0]
	t.Run("service", func(t *testing.T) {
		assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
		assert.True(t, isSubset(svc.Spec.Selector, podLabels), "the Service selects the pods")
		require.Len(t, svc.Spec.Ports, 1)
		assert.Equal(t, "https", svc.Spec.Ports[0].Name)
		assert.Equal(t, port, fmt.Sprint(svc.Spec.Ports[0].Port))
		assert.Equal(t, "https", svc.Spec.Ports[0].TargetPort.String())
	})

	byKind := map[string]map[string]any{}
	for _, m := range r.monitors {
		kind, _ := m["kind"].(string)
		require.NotContains(t, byKind, kind, "two %ss", kind)
		byKind[kind] = m
		assert.Equal(t, "monitoring.coreos.com/v1", m["apiVersion"], kind)
		assert.Equal(t, releaseNamespace, field(t, m, "metadata", "namespace"), kind)
	}
	require.Len(t, byKind, 2)

	// The token Secret the monitors send, and what its ServiceAccount may do.
	var tokenSecret string
	checkEndpoint := func(t *testing.T, ep any) {
		assert.Equal(t, "https", field(t, ep, "port"))
		assert.Equal(t, "https", field(t, ep, "scheme"))
		assert.Equal(t, "/metrics", field(t, ep, "path"))
		assert.Equal(t, true, field(t, ep, "tlsConfig", "insecureSkipVerify"))
		assert.Equal(t, "Bearer", field(t, ep, "authorization", "type"))
		assert.Equal(t, corev1.ServiceAccountTokenKey, field(t, ep, "authorization", "credentials", "key"))
		name, _ := field(t, ep, "authorization", "credentials", "name").(string)
		require.NotEmpty(t, name)
		if tokenSecret == "" {
			tokenSecret = name
		}
		assert.Equal(t, tokenSecret, name, "both monitors send the same token")
	}

	t.Run("service monitor", func(t *testing.T) {
		sm := byKind["ServiceMonitor"]
		require.NotNil(t, sm)
		assert.True(t, isSubset(stringMap(t, field(t, sm, "spec", "selector", "matchLabels")), svc.Labels), "selects the Service")
		assert.Equal(t, []any{releaseNamespace}, field(t, sm, "spec", "namespaceSelector", "matchNames"))
		assert.True(t, isSubset(v.Metrics.ServiceMonitor.Labels, stringMap(t, field(t, sm, "metadata", "labels"))), "labels from the values")
		endpoints, _ := field(t, sm, "spec", "endpoints").([]any)
		require.Len(t, endpoints, 1)
		checkEndpoint(t, endpoints[0])
		assert.Equal(t, v.Metrics.ServiceMonitor.Interval, field(t, endpoints[0], "interval"))
	})

	t.Run("pod monitor", func(t *testing.T) {
		pm := byKind["PodMonitor"]
		require.NotNil(t, pm)
		assert.True(t, isSubset(stringMap(t, field(t, pm, "spec", "selector", "matchLabels")), podLabels), "selects the pods")
		endpoints, _ := field(t, pm, "spec", "podMetricsEndpoints").([]any)
		require.Len(t, endpoints, 1)
		checkEndpoint(t, endpoints[0])
		assert.Equal(t, v.Metrics.PodMonitor.ScrapeTimeout, field(t, endpoints[0], "scrapeTimeout"))
	})

	t.Run("scraper may get /metrics and nothing else", func(t *testing.T) {
		require.NotEmpty(t, tokenSecret)
		secret := findSecret(t, r.manifests, tokenSecret)
		assert.Equal(t, corev1.SecretTypeServiceAccountToken, secret.Type)
		scraper := secret.Annotations[corev1.ServiceAccountNameKey]
		require.NotEmpty(t, scraper)
		assert.True(t, slices.ContainsFunc(r.serviceAccounts, func(sa *corev1.ServiceAccount) bool { return sa.Name == scraper }),
			"no ServiceAccount %s", scraper)
		var reader *rbacv1.ClusterRole
		for _, role := range r.clusterRoles {
			if slices.ContainsFunc(role.Rules, func(rule rbacv1.PolicyRule) bool { return len(rule.NonResourceURLs) > 0 }) {
				require.Nil(t, reader, "two ClusterRoles with non-resource URLs")
				reader = role
			}
		}
		require.NotNil(t, reader)
		assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
		clusterRoleBoundTo(t, r.manifests, scraper, reader.Name)
		i := slices.IndexFunc(r.clusterRoleBindings, func(b *rbacv1.ClusterRoleBinding) bool { return b.RoleRef.Name == reader.Name })
		require.GreaterOrEqual(t, i, 0)
		for _, s := range v.Metrics.ScraperClusterRole.Subjects {
			assert.Contains(t, r.clusterRoleBindings[i].Subjects, s, "subjects from the values")
		}
		// The manager itself gains nothing.
		manager := d.Spec.Template.Spec.ServiceAccountName
		assert.False(t, slices.ContainsFunc(r.clusterRoleBindings, func(b *rbacv1.ClusterRoleBinding) bool {
			return b.RoleRef.Name == reader.Name && hasSubject(b.Subjects, manager)
		}))
	})
}

func TestHelmSingleReplica(t *testing.T) {
	values := ciFile(t, "single-replica-values.yaml")
	v := readValues(t, values)
	require.NotNil(t, v.Replicas)
	r := render(t, "--values", values)
	d, c := r.deployment(t)
	pod := d.Spec.Template.Spec

	assert.Equal(t, v.Replicas, d.Spec.Replicas)
	assert.False(t, pod.HostNetwork)
	assert.Equal(t, corev1.DNSClusterFirst, pod.DNSPolicy)
	assert.Empty(t, pod.PriorityClassName)
	require.NotNil(t, pod.Affinity)
	assert.Nil(t, pod.Affinity.PodAntiAffinity, "podAntiAffinity: none")
	assert.NotNil(t, pod.Affinity.NodeAffinity, "the default node affinity stays")
	assert.Equal(t, v.NodeSelector, pod.NodeSelector)
	assert.True(t, isSubset(v.PodLabels, d.Spec.Template.Labels), "podLabels")
	assert.True(t, isSubset(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels), "the selector selects the pods")
	assert.True(t, isSubset(v.PodAnnotations, d.Spec.Template.Annotations), "podAnnotations")
	assert.Equal(t, v.Resources.Requests, c.Resources.Requests)

	assert.Equal(t, v.ServiceAccount.Name, pod.ServiceAccountName)
	require.Len(t, r.serviceAccounts, 1)
	assert.Equal(t, v.ServiceAccount.Annotations, r.serviceAccounts[0].Annotations)
}

func TestHelmReleaseNamespace(t *testing.T) {
	const namespace = "cloud-system"
	r := renderIn(t, namespace)
	d, _ := r.deployment(t)
	manager := d.Spec.Template.Spec.ServiceAccountName
	assert.Equal(t, namespace, d.Namespace)
	for _, s := range r.secrets {
		assert.Equal(t, namespace, s.Namespace, "Secret %s", s.Name)
	}
	for _, s := range r.serviceAccounts {
		assert.Equal(t, namespace, s.Namespace, "ServiceAccount %s", s.Name)
	}
	// The controllers' identities, the lease and the authentication ConfigMap stay in
	// kube-system, where the manager is bound from its own namespace.
	for _, role := range r.roles {
		assert.Equal(t, "kube-system", role.Namespace, "Role %s", role.Name)
	}
	isManager := func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == manager && s.Namespace == namespace
	}
	for _, b := range r.roleBindings {
		if b.Namespace == "default" && b.RoleRef.Name == releaseName+":events" {
			continue // events on Nodes, by node-controller and route-controller
		}
		assert.Equal(t, "kube-system", b.Namespace, "RoleBinding %s", b.Name)
		assert.True(t, slices.ContainsFunc(b.Subjects, isManager), "RoleBinding %s binds %s/%s", b.Name, namespace, manager)
	}
	var clusterBound int
	for _, b := range r.clusterRoleBindings {
		for _, s := range b.Subjects {
			if s.Name == manager {
				assert.Equal(t, namespace, s.Namespace, "ClusterRoleBinding %s", b.Name)
				clusterBound++
			} else {
				assert.Equal(t, "kube-system", s.Namespace, "ClusterRoleBinding %s, %s", b.Name, s.Name)
			}
		}
	}
	assert.Equal(t, 2, clusterBound, "the controllers' ClusterRole and system:auth-delegator")
}

// TestHelmRejectsBadValues checks that helm template fails on values the schema or the
// templates reject, and passes on a valid one given the same way.
func TestHelmRejectsBadValues(t *testing.T) {
	tests := []struct {
		name   string
		values string
		want   []string // in the error
	}{
		{"valid", "replicas: 3\n", nil},
		{"replicas not a number", "replicas: two\n", []string{"schema", "replicas"}},
		{"unknown top-level key", "replicaCount: 2\n", []string{"schema", "replicaCount"}},
		{"unknown nested key", "image: {repo: example.com/ccm}\n", []string{"schema", "repo"}},
		{"hostNetwork not a boolean", "hostNetwork: \"yes\"\n", []string{"schema", "hostNetwork"}},
		{"controllers not a list", "controllers: \"*,-route\"\n", []string{"schema", "controllers"}},
		{"provider name not lower case", "cloudProvider: My_Cloud\n", []string{"schema", "cloudProvider"}},
		{"duration not a duration", "leaderElection: {leaseDuration: 15}\n", []string{"schema", "leaseDuration"}},
		{"monitor switch not a boolean", "metrics: {serviceMonitor: {enabled: \"true\"}}\n", []string{"schema", "enabled"}},
		{"extra argument not a flag", "extraArgs: [v=2]\n", []string{"schema", "extraArgs"}},
		{"podAntiAffinity unknown", "podAntiAffinity: sometimes\n", []string{"schema", "podAntiAffinity"}},
		{"routes without the cluster CIDR", "routes: {configureCloudRoutes: true}\n", []string{"routes.clusterCIDR"}},
		{"monitor without a token", "metrics: {podMonitor: {enabled: true}}\n", []string{"metrics.scraperClusterRole.create", "metrics.bearerTokenSecret.name"}},
		{"no ServiceAccount", "serviceAccount: {create: false}\n", []string{"serviceAccount.name"}},
		{"no cloud config", "cloudConfig: {content: \"\"}\n", []string{"cloudConfig.existingSecret"}},
		{"dashboard label not a label key", "metrics: {grafanaDashboard: {label: \"grafana dashboard\"}}\n", []string{"schema", "label"}},
		{"rule switch not a boolean", "metrics: {prometheusRule: {enabled: \"true\"}}\n", []string{"schema", "enabled"}},
		{"sweeper switch not a boolean", "sweeper: {enabled: \"true\"}\n", []string{"schema", "enabled"}},
		{"sweeper grace period not a duration", "sweeper: {enabled: true, gracePeriod: 10}\n", []string{"schema", "gracePeriod"}},
		{"sweeper in the cloud config", "cloudConfig: {content: \"backend: fake\\nsweeper: {enabled: true}\\n\"}\n", []string{"sweeper section", "sweeper.enabled"}},
		{"cloud config not a mapping", "sweeper: {enabled: true}\ncloudConfig: {content: \"- backend\\n\"}\n", []string{"cloudConfig.content"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "values.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tt.values), 0o600))
			out, err := helmTemplate(t, releaseNamespace, "--values", file)
			if tt.want == nil {
				require.NoError(t, err)
				assert.NotEmpty(t, out)
				return
			}
			require.Error(t, err, "helm template accepted %q", tt.values)
			var exitErr *exec.ExitError
			require.True(t, errors.As(err, &exitErr), "helm did not run: %v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
