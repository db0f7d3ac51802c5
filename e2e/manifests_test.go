package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/ccmkit/ccmkit/e2e/harness"
)

// The deploy manifests (deploy/base, the kustomize base, and deploy/helm/ccmkit, the chart)
// meet the real kube-apiserver here: rendered, applied with server-side dry run, and, in
// TestChartRBACRunsTheCCM, applied for real and used to run the CCM.

const (
	deployDir = "../deploy"
	chartDir  = deployDir + "/helm/ccmkit"
	// prometheusOperator is the module whose CustomResourceDefinitions the chart's
	// ServiceMonitor, PodMonitor and PrometheusRule are checked against (the Go module proxy
	// serves it).
	prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
)

// helm returns the helm binary `make unit` installs into ../.bin, or one in PATH.
func helm(t *testing.T) string {
	t.Helper()
	local, err := filepath.Abs(filepath.Join("..", ".bin", "helm"))
	require.NoError(t, err)
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if path, err := exec.LookPath("helm"); err == nil {
		return path
	}
	require.FailNow(t, "helm not found", "no helm at %s or in PATH: `make e2e` installs it there", local)
	return ""
}

// helmTemplate renders the chart as release ccmkit in kube-system with the further args
// (--values FILE, --set K=V...).
func helmTemplate(t *testing.T, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm(t), append([]string{"template", "ccmkit", chartDir, "--namespace", "kube-system"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "helm template %s: %s", strings.Join(args, " "), stderr.String())
	return stdout.Bytes()
}

// kustomizeBase renders deploy/base, and after it the components in dirs (under deploy/, as
// an overlay adds them), as `kubectl kustomize` does for what they use (deploy's unit test
// decodes each kustomization.yaml strictly, so a new field fails there first): their
// resources in order, with the kustomization's namespace on every object that names none.
func kustomizeBase(t *testing.T, components ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, dir := range append([]string{"base"}, components...) {
		objs = append(objs, kustomizeDir(t, dir)...)
	}
	return objs
}

func kustomizeDir(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.NotEmpty(t, k.Resources)
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(deployDir, dir, r))
		require.NoError(t, err)
		for _, o := range decodeObjects(t, data) {
			if o.GetNamespace() == "" && !clusterScoped(o) {
				o.SetNamespace(k.Namespace)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// clusterScoped reports whether o's kind is one of the cluster-scoped kinds the manifests
// use.
func clusterScoped(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace":
		return true
	}
	return false
}

// decodeObjects splits a multi-document YAML stream into objects, skipping empty documents.
func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err)
		if string(js) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		require.NoError(t, o.UnmarshalJSON(js), "%s", doc)
		objs = append(objs, o)
	}
}

// applier applies objects with server-side apply, as `kubectl apply --server-side` does,
// with strict field validation: a field the API server does not know is an error.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// apply applies o; dryRun asks the API server to validate and admit it without storing it.
func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
	}
	var res dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		res = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "ccmkit-e2e", Force: new(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := res.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// installMonitorCRDs installs the prometheus-operator's ServiceMonitor, PodMonitor and
// PrometheusRule definitions, from the module of prometheusOperator, and waits until they
// are served.
func installMonitorCRDs(ctx context.Context, t *testing.T, a *applier) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
	cmd.Dir = t.TempDir() // outside any module: nothing is added to a go.mod
	out, err := cmd.Output()
	require.NoError(t, err, "go mod download %s", prometheusOperator)
	var mod struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.Empty(t, mod.Error)
	for _, name := range []string{"servicemonitors", "podmonitors", "prometheusrules"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+name+".yaml"))
		require.NoError(t, err)
		crds := decodeObjects(t, data)
		require.Len(t, crds, 1)
		require.NoError(t, a.apply(ctx, crds[0], false))
	}
	require.NoError(t, harness.Eventually(ctx, wait, "the monitor CRDs are served", func(context.Context) (bool, error) {
		a.mapper.Reset()
		for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
			if _, err := a.mapper.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: kind}, "v1"); err != nil {
				return false, nil //nolint:nilerr // not served yet: poll again
			}
		}
		return true, nil
	}))
}

// TestManifestsAreAcceptedByTheAPIServer applies the kustomize base (alone and with the
// sweeper's component) and the chart, rendered
// with its defaults and with every ci/*-values.yaml, to a real kube-apiserver with
// server-side dry run and strict field validation: every object must be admitted.
func TestManifestsAreAcceptedByTheAPIServer(t *testing.T) {
	cp, err := harness.StartControlPlane()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cp.Stop()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := newApplier(t, cp.Config)
	installMonitorCRDs(ctx, t, a)

	sets := map[string][]*unstructured.Unstructured{
		"kustomize base":                     kustomizeBase(t),
		"kustomize base, components/sweeper": kustomizeBase(t, "components/sweeper"),
	}
	sets["chart defaults"] = decodeObjects(t, helmTemplate(t))
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		sets["chart "+filepath.Base(f)] = decodeObjects(t, helmTemplate(t, "--values", f))
	}
	names := make([]string, 0, len(sets))
	for name := range sets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			objs := sets[name]
			require.NotEmpty(t, objs)
			// The namespaces the objects live in exist, as they must before an install
			// (a value such as leaderElection.leaseNamespace names one).
			for _, o := range objs {
				if ns := o.GetNamespace(); ns != "" {
					nsObj := &unstructured.Unstructured{}
					nsObj.SetAPIVersion("v1")
					nsObj.SetKind("Namespace")
					nsObj.SetName(ns)
					require.NoError(t, a.apply(ctx, nsObj, false))
				}
			}
			kinds := map[string]int{}
			for _, o := range objs {
				require.NoError(t, a.apply(ctx, o, true))
				kinds[o.GetKind()]++
			}
			t.Logf("%d objects admitted: %v", len(objs), kinds)
		})
	}
}
