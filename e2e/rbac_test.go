package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/sweeper"
)

// repeatedEvent is why a recorder's patch and update of events go unused in a short run.
const repeatedEvent = "a recorder patches or updates an event only when it repeats within the aggregation window"

// unusedGrants are the permissions the chart grants that TestChartRBACRunsTheCCM's scenario
// does not exercise, each with the reason it is granted all the same. Any other grant the
// scenario leaves unused fails the test: remove it from the chart and the kustomize base,
// or exercise it, or add it here with its reason.
var unusedGrants = map[string]string{
	"ccmkit-cloud-controller-manager nodes list":    "informers list first where the API server does not stream the initial list in the watch (WatchList); this one does",
	"ccmkit-cloud-controller-manager services list": "as nodes list",
	"ccmkit-e2e-cloud-provider nodes list":          "as the manager's nodes list: the load balancers' watch of Node labels streams its initial list",
	"ccmkit-e2e-cloud-provider services list":       "a Service of a share lists the Services of its share before it deletes the share's load balancer; this scenario has no share (TestServicesShareALoadBalancer lists them)",
	"ccmkit-sweeper services list":                  "the sweeper lists the Services of a share before it deletes an orphaned shared load balancer; this scenario orphans none",
	"ccmkit-cloud-controller-manager configmaps list": "extension-apiserver-authentication-reader, a built-in Role, grants list with get and watch; " +
		"the authentication ConfigMap is read by a watch that streams its initial list",
	"ccmkit-cloud-controller-manager events patch":  repeatedEvent,
	"ccmkit-cloud-controller-manager events update": repeatedEvent,
	"node-controller events patch":                  repeatedEvent,
	"node-controller events update":                 repeatedEvent,
	"service-controller events update":              repeatedEvent,
	"route-controller events create":                "route-controller records events only when a route cannot be created",
	"route-controller events patch":                 repeatedEvent,
	"route-controller events update":                repeatedEvent,
	"ccmkit-e2e-cloud-provider events create":       "ccmkit records events only about a problem with a Service (a bad annotation, a refused write)",
	"ccmkit-e2e-cloud-provider events patch":        repeatedEvent,
	"ccmkit-e2e-cloud-provider events update":       repeatedEvent,
	"ccmkit-sweeper events patch":                   repeatedEvent,
	"ccmkit-sweeper events update":                  repeatedEvent,
}

// expectedRefusals are the requests of the CCM's identities that the API server refuses
// on purpose: upstream code that tolerates the refusal, for a permission the CCM does not
// need. Keyed by "<identity> <verb> <requestURI>".
var expectedRefusals = map[string]string{
	"ccmkit-cloud-controller-manager get /api/v1/namespaces/kube-system": "the client builder checks that kube-system exists before it creates a " +
		"controller's ServiceAccount, to create the namespace if not; it ignores the refusal, and kube-system always exists",
}

// auditEvent is the part of an audit.k8s.io/v1 Event the check reads.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// TestChartRBACRunsTheCCM installs the chart (cloud config for the harness's cloud, the
// harness's provider name) into a real kube-apiserver with RBAC authorization, and runs
// the CCM with the Deployment's own flags under the chart's ServiceAccount — not an admin —
// with --use-service-account-credentials, so every controller calls as the identity the
// chart binds for it. The CCM must initialize Nodes, provision a load balancer (one
// through the upstream service controller, one through the load balancer class
// controller), delete the
// Node of a deleted instance, sweep an orphaned load balancer and route (sweeper.enabled,
// with a short grace period) and serve /metrics to the chart's scraper identity; the API
// server's audit log must show no request of the CCM's identities refused (403), and
// every permission the chart grants used by the scenario or listed in unusedGrants.
func TestChartRBACRunsTheCCM(t *testing.T) {
	cp, err := harness.StartControlPlaneWith(harness.ControlPlaneOptions{AuditServiceAccounts: true})
	require.NoError(t, err)
	cfg, err := os.ReadFile(filepath.Join("testdata", "cloud.yaml"))
	require.NoError(t, err)
	// ccmkit also serves a load balancer class, so the class controller runs too.
	cfg = append(cfg, "loadBalancer: {class: "+e2eClass+"}\n"...)
	cloudConfig := filepath.Join(t.TempDir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(cloudConfig, cfg, 0o600))
	cloud, err := harness.NewCloud(cfg, faultyCloud)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, cp: cp, cloud: cloud, client: cp.Client, log: &syncBuffer{}}
	t.Cleanup(func() {
		defer func() { assert.NoError(t, cp.Stop()) }()
		if e.ccm != nil {
			assert.NoError(t, e.ccm.Stop())
		}
		if t.Failed() {
			t.Logf("last lines of the CCM's log:\n%s", e.log.tail(80))
		}
	})

	// Install the chart for real.
	objs := decodeObjects(t, helmTemplate(t,
		"--set", "cloudProvider="+harness.ProviderName,
		"--set-file", "cloudConfig.content="+cloudConfig,
		"--set", "routes.configureCloudRoutes=true",
		"--set", "routes.clusterCIDR="+strings.ReplaceAll(harness.ClusterCIDRs, ",", "\\,"),
		"--set", "metrics.scraperClusterRole.create=true",
		"--set", "sweeper.enabled=true", "--set", "sweeper.gracePeriod=1s", "--set", "sweeper.interval=1s"))
	a := newApplier(t, cp.Config)
	var deployment, scraper, secret *unstructured.Unstructured
	for _, o := range objs {
		require.NoError(t, a.apply(ctx, o, false))
		switch {
		case o.GetKind() == "Deployment":
			deployment = o
		case o.GetKind() == "ServiceAccount" && strings.HasSuffix(o.GetName(), "-metrics-scraper"):
			scraper = o
		case o.GetKind() == "Secret":
			secret = o
		}
	}
	require.NotNil(t, secret, "the chart renders the cloud config's Secret")
	require.NotNil(t, deployment, "the chart renders a Deployment")
	require.NotNil(t, scraper, "metrics.scraperClusterRole.create renders the scraper's ServiceAccount")

	// The Deployment's container, its ServiceAccount, and a kubeconfig with a token of it.
	var d struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deployment.Object, &d))
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	manager := pod.ServiceAccountName
	namespace := deployment.GetNamespace()
	kubeconfig := writeTokenKubeconfig(t, cp, namespace, manager)

	// The cloud config as the chart renders it: the test's, with the sweeper section.
	encoded, ok, err := unstructured.NestedString(secret.Object, "data", "cloud.yaml")
	require.NoError(t, err)
	require.True(t, ok, "the Secret has no cloud.yaml")
	chartConfig, err := base64.StdEncoding.DecodeString(encoded)
	require.NoError(t, err)
	require.Contains(t, string(chartConfig), "sweeper:")

	// Orphans for the sweeper, whose owners never existed: its live GETs of the Service
	// and the Node and its events are what the chart grants it. The route is outside
	// --cluster-cidr, which the route controller leaves alone.
	lbs, _ := cloud.Fake.LoadBalancers()
	orphanLB, err := lbs.CreateLoadBalancer(ctx, cloudapi.LoadBalancerSpec{Name: "orphan", Tags: map[string]string{
		cloudapi.TagCluster: clusterID, cloudapi.TagService: "gone-uid", cloudapi.TagServiceName: metav1.NamespaceDefault + "/gone"}})
	require.NoError(t, err)
	rts, _ := cloud.Fake.Routes()
	orphanRoute, err := rts.CreateRoute(ctx, cloudapi.RouteSpec{DestinationCIDR: "10.250.2.0/24", TargetInstanceID: "i-0003",
		Tags: map[string]string{cloudapi.TagCluster: clusterID, cloudapi.TagNode: "node-gone"}})
	require.NoError(t, err)

	// The Deployment's flags, where the pod and this test differ: the cloud config file,
	// the serving address, and the kubeconfigs that in a pod are the in-cluster config of
	// the pod's ServiceAccount. The controller periods are shortened as in every scenario.
	port := freePort(t)
	cloudConfigFile := filepath.Join(cp.Dir(), "cloud.yaml")
	require.NoError(t, os.WriteFile(cloudConfigFile, chartConfig, 0o600))
	var flags []string
	for _, arg := range pod.Containers[0].Args {
		name, _, _ := strings.Cut(arg, "=")
		switch name {
		case "--cloud-config":
			arg = "--cloud-config=" + cloudConfigFile
		case "--bind-address":
			arg = "--bind-address=127.0.0.1"
		case "--secure-port":
			arg = "--secure-port=" + strconv.Itoa(port)
		}
		require.NotContains(t, arg, "$(", "a variable the test does not provide: %s", arg)
		flags = append(flags, arg)
	}
	require.Contains(t, flags, "--use-service-account-credentials")
	flags = append(flags,
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--node-monitor-period="+harness.Periods.NodeMonitor.String(),
		"--node-status-update-frequency="+harness.Periods.NodeStatus.String(),
	)
	e.ccm, err = harness.RunCCM(cloud, e.log, flags)
	require.NoError(t, err)

	// The scenario: Nodes initialized and their routes created, a load balancer
	// provisioned, a stopped instance's Node tainted, a deleted instance's Node deleted.
	e.registerNode(harness.NodeSpec{Name: "node-a", PodCIDRs: []string{"10.244.1.0/24"}})
	e.registerNode(harness.NodeSpec{Name: "node-b", PodCIDRs: []string{"10.244.2.0/24"}})
	e.registerNode(harness.NodeSpec{Name: "node-c", PodCIDRs: []string{"10.244.3.0/24"}})
	e.waitNodesInitialized("node-a", "node-b", "node-c")
	e.waitRoutes("a route per Node", map[string]string{"10.244.1.0/24": "i-0001", "10.244.2.0/24": "i-0002", "10.244.3.0/24": "i-0003"})
	e.eventually("NetworkUnavailable=False on node-a", func(context.Context) (bool, error) {
		n, err := e.node("node-a")
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeNetworkUnavailable {
				return c.Status == corev1.ConditionFalse, nil
			}
		}
		return false, nil
	})
	svc := e.createService(newLBService("web"))
	ing := e.waitIngress("web")
	assert.NotEmpty(t, ing.IP, "the load balancer's address in the Service's status")
	lb := e.waitLB(svc, "targets every Node", targetsAre("i-0001", "i-0002", "i-0003"))
	e.waitSays("web", lb.ID) // patch of services and services/status by the provider's identity
	classy := e.createService(newLBService("classy", withLBClass(e2eClass)))
	e.waitIngress("classy")
	lb = e.waitLB(classy, "targets every Node", targetsAre("i-0001", "i-0002", "i-0003"))
	e.waitSays("classy", lb.ID)
	require.NoError(t, cloud.Fake.SetInstanceState("i-0003", cloudapi.InstanceStopped))
	_, err = harness.SetNodeReady(ctx, cp.Client, "node-c", false)
	require.NoError(t, err)
	e.eventually("shutdown taint on node-c", func(context.Context) (bool, error) {
		n, err := e.node("node-c")
		return err == nil && hasTaint(n, cloudproviderapi.TaintNodeShutdown), err
	})
	_, err = harness.SetNodeReady(ctx, cp.Client, "node-b", false)
	require.NoError(t, err)
	require.NoError(t, cloud.Fake.DeleteInstance("i-0002"))
	e.eventually("node-b deleted", func(context.Context) (bool, error) {
		_, err := e.node("node-b")
		return apierrors.IsNotFound(err), nil
	})

	// /metrics: served to the scraper's token, refused to an identity without the grant.
	scraperToken := token(t, cp, scraper.GetNamespace(), scraper.GetName())
	managerToken := token(t, cp, namespace, manager)
	e.eventually("/metrics served to the scraper", func(context.Context) (bool, error) {
		code, body, err := getMetrics(port, scraperToken)
		if err != nil {
			return false, nil //nolint:nilerr // the server may not listen yet: poll again
		}
		return code == http.StatusOK && strings.Contains(body, "# HELP"), nil
	})
	code, _, err := getMetrics(port, managerToken)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "/metrics for an identity without the metrics-reader grant")

	// The sweeper has deleted the orphans, recorded it, and left the rest alone.
	e.eventually("the sweeper deleted the orphaned load balancer and route", func(context.Context) (bool, error) {
		return !slices.Contains(e.lbIDs(), orphanLB.ID) && !slices.Contains(e.routeIDs(), orphanRoute.ID), nil
	})
	e.waitEvent("gone", corev1.EventTypeNormal, sweeper.EventDeletedLoadBalancer, orphanLB.ID)
	e.waitNodeEvent("node-gone", corev1.EventTypeNormal, sweeper.EventDeletedRoute, orphanRoute.ID)
	e.waitLB(svc, "still there", func(cloudapi.LoadBalancer) bool { return true })

	require.NoError(t, e.ccm.Stop())
	e.ccm = nil

	// The audit log: nothing refused, and every grant used or explained.
	events := readAudit(t, cp.AuditLogPath)
	identities := map[string]bool{}
	for _, ev := range events {
		identities[ev.User.Username] = true
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != http.StatusForbidden {
			continue
		}
		account := strings.TrimPrefix(ev.User.Username, "system:serviceaccount:"+namespace+":")
		account = strings.TrimPrefix(account, "system:serviceaccount:kube-system:")
		if _, ok := expectedRefusals[account+" "+ev.Verb+" "+ev.RequestURI]; ok {
			continue
		}
		t.Errorf("refused (403): %s %s by %s: the chart's RBAC misses it", ev.Verb, ev.RequestURI, ev.User.Username)
	}
	t.Logf("%d requests by %d ServiceAccounts in the audit log:\n  %s", len(events), len(identities), strings.Join(summarize(events), "\n  "))

	grants := chartGrants(ctx, t, cp, objs)
	require.NotEmpty(t, grants)

	// Enough: every resource request of an identity the chart binds is allowed by the
	// chart's own grants. The API server's answer alone would not tell: its bootstrap
	// policy binds roles of its own to node-controller, service-controller and
	// route-controller, the kube-controller-manager's identities of the same names.
	bound := map[string]bool{}
	for _, g := range grants {
		bound[g.user] = true
	}
	for _, ev := range events {
		if !bound[ev.User.Username] || ev.ObjectRef == nil {
			continue // non-resource URLs (/healthz, discovery): public to every identity
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == http.StatusForbidden {
			continue // reported above
		}
		if !slices.ContainsFunc(grants, func(g grant) bool { return g.allows(ev) }) {
			t.Errorf("%s %s by %s is allowed only by a role outside the chart: the chart's RBAC misses it", ev.Verb, ev.RequestURI, ev.User.Username)
		}
	}
	var unused, explained []string
	for _, g := range grants {
		if g.usedBy(events) {
			continue
		}
		key := fmt.Sprintf("%s %s %s", g.account, g.resource(), g.verb)
		if reason, ok := unusedGrants[key]; ok {
			explained = append(explained, key+": "+reason)
			continue
		}
		unused = append(unused, key)
	}
	sort.Strings(unused)
	sort.Strings(explained)
	t.Logf("%d grants, %d used by the scenario; unused but explained:\n  %s", len(grants), len(grants)-len(explained)-len(unused), strings.Join(explained, "\n  "))
	assert.Empty(t, unused, "granted by the chart but never used by the CCM in this scenario (remove the grant, or add it to unusedGrants with the reason)")
}

// grant is one (ServiceAccount, API group, resource, verb) a binding of the chart allows,
// limited to a namespace (RoleBinding) and to names (resourceNames) where the rule is.
type grant struct {
	account, namespace string // namespace: "" for a ClusterRoleBinding
	group, res, sub    string
	verb               string
	names              []string
	user               string // system:serviceaccount:<ns>:<account>
}

func (g grant) resource() string {
	if g.sub != "" {
		return g.res + "/" + g.sub
	}
	return g.res
}

// usedBy reports whether a request in events that the API server authorized was allowed
// by g (a 404 or 409 answer still used the permission).
func (g grant) usedBy(events []auditEvent) bool {
	return slices.ContainsFunc(events, func(ev auditEvent) bool {
		refused := ev.ResponseStatus == nil || ev.ResponseStatus.Code == http.StatusForbidden || ev.ResponseStatus.Code == http.StatusUnauthorized
		return !refused && g.allows(ev)
	})
}

// allows reports whether g allows the request ev.
func (g grant) allows(ev auditEvent) bool {
	r := ev.ObjectRef
	if ev.User.Username != g.user || r == nil {
		return false
	}
	if r.APIGroup != g.group || r.Resource != g.res || r.Subresource != g.sub || ev.Verb != g.verb {
		return false
	}
	if g.namespace != "" && r.Namespace != g.namespace {
		return false
	}
	return len(g.names) == 0 || slices.Contains(g.names, r.Name)
}

// chartGrants lists what the chart's bindings grant to ServiceAccounts, reading each role
// (the chart's own and the system roles it binds) from the API server.
func chartGrants(ctx context.Context, t *testing.T, cp *harness.ControlPlane, objs []*unstructured.Unstructured) []grant {
	t.Helper()
	var grants []grant
	for _, o := range objs {
		var subjects []rbacv1.Subject
		var ref rbacv1.RoleRef
		switch o.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b))
			subjects, ref = b.Subjects, b.RoleRef
		case "RoleBinding":
			var b rbacv1.RoleBinding
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b))
			subjects, ref = b.Subjects, b.RoleRef
		default:
			continue
		}
		var rules []rbacv1.PolicyRule
		if ref.Kind == "ClusterRole" {
			role, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, ref.Name, metav1.GetOptions{})
			require.NoError(t, err, "ClusterRole %s bound by %s", ref.Name, o.GetName())
			rules = role.Rules
		} else {
			role, err := cp.Client.RbacV1().Roles(o.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
			require.NoError(t, err, "Role %s/%s bound by %s", o.GetNamespace(), ref.Name, o.GetName())
			rules = role.Rules
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				continue
			}
			for _, rule := range rules {
				for _, group := range rule.APIGroups {
					for _, resource := range rule.Resources {
						res, sub, _ := strings.Cut(resource, "/")
						for _, verb := range rule.Verbs {
							grants = append(grants, grant{
								account: s.Name, namespace: o.GetNamespace(), group: group, res: res, sub: sub,
								verb: verb, names: rule.ResourceNames, user: saUser(s.Namespace, s.Name),
							})
						}
					}
				}
			}
		}
	}
	return grants
}

func saUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// readAudit reads the audit log's events.
func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var events []auditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var ev auditEvent
		require.NoError(t, json.Unmarshal(s.Bytes(), &ev), "audit log line %q", s.Text())
		events = append(events, ev)
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, events, "the audit log is empty")
	return events
}

// token returns a one-hour token of the ServiceAccount, from the TokenRequest API.
func token(t *testing.T, cp *harness.ControlPlane, namespace, name string) string {
	t.Helper()
	tr, err := cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	require.NoError(t, err, "a token of %s/%s", namespace, name)
	return tr.Status.Token
}

// writeTokenKubeconfig writes a kubeconfig that reaches the control plane with a token of
// the ServiceAccount, as the in-cluster config of a pod running under it does.
func writeTokenKubeconfig(t *testing.T, cp *harness.ControlPlane, namespace, name string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token(t, cp, namespace, name)}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	kc.CurrentContext = "e2e"
	path := filepath.Join(cp.Dir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// getMetrics GETs the CCM's /metrics with a bearer token, skipping the certificate check
// as the chart's monitors do (the serving certificate is self-signed).
func getMetrics(port int, bearer string) (int, string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed serving certificate on loopback
	}}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// summarize counts the requests by identity, verb, resource and answer, for the test log.
func summarize(events []auditEvent) []string {
	counts := map[string]int{}
	for _, ev := range events {
		what := ev.RequestURI
		if r := ev.ObjectRef; r != nil {
			what = strings.TrimPrefix(r.APIGroup+"/"+r.Resource, "/")
			if r.Subresource != "" {
				what += "/" + r.Subresource
			}
			if r.Namespace != "" {
				what += " in " + r.Namespace
			}
		}
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		counts[fmt.Sprintf("%s %s %s -> %d", strings.TrimPrefix(ev.User.Username, "system:serviceaccount:"), ev.Verb, what, code)]++
	}
	lines := make([]string, 0, len(counts))
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%s (x%d)", k, n))
	}
	sort.Strings(lines)
	return lines
}
