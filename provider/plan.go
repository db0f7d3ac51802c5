package provider

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// MigrationPlan is what the provider would do in a cluster when it starts (Cloud.Plan):
// per Service of type LoadBalancer it serves, the load balancer it has, adopts, takes
// over or creates and what it would change; per Node, the labels it would give it
// otherwise than the Node has them.
type MigrationPlan struct {
	Services []ServicePlan `json:"services"`
	Nodes    []NodePlan    `json:"nodes"`
}

// ServicePlan is the plan of one Service: loadbalancer.ServicePlan, with what its status
// publishes now.
type ServicePlan struct {
	// Service is the Service's namespace/name.
	Service string `json:"service"`
	// Published are the addresses and hostnames the Service's status publishes now (the
	// earlier cloud-controller-manager's, in a migration).
	Published []string `json:"published,omitempty"`
	// LosesAddress is true when one of Published would not be the Service's any more: a
	// new load balancer, or one that lacks it.
	LosesAddress bool `json:"losesAddress"`
	// Action, LoadBalancerID, Addresses, By and Duplicates are loadbalancer.ServicePlan's.
	Action         loadbalancer.PlanAction `json:"action"`
	LoadBalancerID string                  `json:"loadBalancerID,omitempty"`
	Addresses      []string                `json:"addresses,omitempty"`
	By             string                  `json:"by,omitempty"`
	Duplicates     []string                `json:"duplicates,omitempty"`
	// Changes are the parts of the load balancer that would change
	// (loadbalancer.ServicePlan.Parts).
	Changes []string `json:"changes,omitempty"`
	// Error is why the action is refused or fails.
	Error string `json:"error,omitempty"`
}

// NodePlan is the plan of one Node: the labels the cloud node controller would give it
// from the provider's InstanceMetadata that it has otherwise (a Node is labelled when
// it is initialized: one initialized already keeps its labels, so these are the
// differences between it and the Nodes initialized from now on).
type NodePlan struct {
	Node    string        `json:"node"`
	Changes []LabelChange `json:"changes,omitempty"`
	// Error is why the Node's instance could not be read.
	Error string `json:"error,omitempty"`
}

// LabelChange is one label of a Node that the provider would set otherwise: From is the
// Node's value, To the provider's ("" for a label one of them does not set).
type LabelChange struct {
	Label string `json:"label"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Attention reports whether the plan needs a person's look before the switch: a Service
// would lose an address it publishes, or its sync would be refused or fail.
func (p *MigrationPlan) Attention() bool {
	for _, s := range p.Services {
		if s.LosesAddress || s.Action == loadbalancer.PlanRefused || s.Action == loadbalancer.PlanFails {
			return true
		}
	}
	return false
}

// Plan reads the cluster through kube (the Services and Nodes, one list each; nothing
// else, and nothing written) and the cloud through the provider (reads only: see
// loadbalancer.LoadBalancer.Plan and InstanceMetadata) and returns what the provider
// would do: for every Service of type LoadBalancer it serves (its class) and that is not
// being deleted, the Service's plan, with the Nodes the service controller would give it
// (neither excluded from load balancers nor tainted for deletion); for every Node, the
// labels that would differ. Without load balancers there are no Services in it, without
// instances no Nodes. It makes no event and calls no Initialize.
func (c *Cloud) Plan(ctx context.Context, kube kubernetes.Interface) (*MigrationPlan, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Nodes: %w", err)
	}
	out := &MigrationPlan{Services: []ServicePlan{}, Nodes: []NodePlan{}}
	if c.lbs != nil {
		services, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the Services: %w", err)
		}
		var targets []*corev1.Node
		for i := range nodes.Items {
			if balanced(&nodes.Items[i]) {
				targets = append(targets, &nodes.Items[i])
			}
		}
		for i := range services.Items {
			svc := &services.Items[i]
			if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil || !c.cfg.serves(svc) {
				continue
			}
			p, err := c.lbs.Plan(ctx, svc, targets)
			if err != nil {
				return nil, fmt.Errorf("planning service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
			out.Services = append(out.Services, servicePlan(svc, p))
		}
	}
	if c.instances != nil {
		for i := range nodes.Items {
			out.Nodes = append(out.Nodes, c.nodePlan(ctx, &nodes.Items[i]))
		}
	}
	slices.SortFunc(out.Services, func(a, b ServicePlan) int { return strings.Compare(a.Service, b.Service) })
	slices.SortFunc(out.Nodes, func(a, b NodePlan) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// balanced is the service controller's choice of a load balancer's Nodes: not being
// deleted, not labelled node.kubernetes.io/exclude-from-external-load-balancers (other
// than "false"), not tainted ToBeDeletedByClusterAutoscaler.
func balanced(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return false
	}
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		if b, err := strconv.ParseBool(v); err != nil || b {
			return false
		}
	}
	return !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "ToBeDeletedByClusterAutoscaler" })
}

// servicePlan is p for svc, with what its status publishes.
func servicePlan(svc *corev1.Service, p loadbalancer.ServicePlan) ServicePlan {
	out := ServicePlan{Service: svc.Namespace + "/" + svc.Name, Action: p.Action, LoadBalancerID: p.LoadBalancerID, Addresses: p.Addresses,
		By: p.By, Duplicates: p.Duplicates, Changes: p.Parts()}
	if p.Err != nil {
		out.Error = p.Err.Error()
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		for _, a := range []string{in.IP, in.Hostname} {
			if a == "" {
				continue
			}
			out.Published = append(out.Published, a)
			kept := p.Action == loadbalancer.PlanRefused || p.Action == loadbalancer.PlanFails || slices.Contains(p.Addresses, a)
			out.LosesAddress = out.LosesAddress || p.NewAddress() || !kept
		}
	}
	return out
}

// nodePlan is the plan of the Node n: the labels the cloud node controller sets from
// InstanceMetadata (the instance type, zone and region, each under its stable and its
// beta key, and the additional labels) that n has otherwise, and the provider ID when
// it differs.
func (c *Cloud) nodePlan(ctx context.Context, n *corev1.Node) NodePlan {
	out := NodePlan{Node: n.Name}
	meta, err := c.instances.InstanceMetadata(ctx, n)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	want := map[string]string{}
	for v, keys := range map[string][]string{
		meta.InstanceType: {corev1.LabelInstanceType, corev1.LabelInstanceTypeStable},
		meta.Zone:         {corev1.LabelFailureDomainBetaZone, corev1.LabelTopologyZone},
		meta.Region:       {corev1.LabelFailureDomainBetaRegion, corev1.LabelTopologyRegion},
	} {
		for _, k := range keys {
			want[k] = v // "" when the provider sets none: a difference if the Node has one
		}
	}
	for k, v := range meta.AdditionalLabels {
		want[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have := n.Labels[k]; have != want[k] {
			out.Changes = append(out.Changes, LabelChange{Label: k, From: have, To: want[k]})
		}
	}
	if n.Spec.ProviderID != "" && meta.ProviderID != "" && n.Spec.ProviderID != meta.ProviderID {
		out.Changes = append(out.Changes, LabelChange{Label: "spec.providerID", From: n.Spec.ProviderID, To: meta.ProviderID})
	}
	return out
}

// PlanCommand is the first argument of a cloud-controller-manager's command line that
// runs RunPlanCommand instead of the manager.
const PlanCommand = "plan"

// PlanAttention is the exit code of RunPlanCommand when the plan needs a look
// (MigrationPlan.Attention): a Service would lose an address, or be refused or fail.
const PlanAttention = 3

// RunPlanCommand runs `<ccm> plan [--cloud-provider=NAME] [--cloud-config=FILE]
// [--kubeconfig=FILE] [-o text|json]` with args (after PlanCommand): it builds the
// provider as the manager does from the same flags, reads the cluster (through the
// kubeconfig, else $KUBECONFIG, ~/.kube/config or the Pod's service account) and the
// cloud, and prints the provider's Plan, as text or JSON, to stdout. It writes nothing, to
// the cloud or the cluster. It returns the exit code: 0 when nothing needs a look,
// PlanAttention (3) when a Service would lose an address it publishes or its sync would be
// refused or fail, 1 when the provider, the config or a read fails, 2 on bad flags. A
// CCM's main offers it with RunSubcommand.
func RunPlanCommand(defaultProvider string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runPlan(ctx, defaultProvider, args, stdout, stderr, kubeClient)
}

// kubeClient is the client of the kubeconfig file (empty: client-go's default rules, then
// the Pod's service account).
func kubeClient(file string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = file
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the cluster's client (--kubeconfig): %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

func runPlan(ctx context.Context, defaultProvider string, args []string, stdout, stderr io.Writer, kube func(string) (kubernetes.Interface, error)) int {
	fs := flag.NewFlagSet(PlanCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("cloud-provider", defaultProvider, "the cloud provider, as the manager's --cloud-provider")
	file := fs.String("cloud-config", "", "the cloud config file, as the manager's --cloud-config")
	kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig; empty: $KUBECONFIG, ~/.kube/config, or the Pod's service account")
	format := fs.String("o", "text", "the output: text or json")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(stderr, "Usage: %s [--cloud-provider=NAME] [--cloud-config=FILE] [--kubeconfig=FILE] [-o text|json]\n\n", PlanCommand)
		_, _ = fmt.Fprintf(stderr, "Prints what the CCM would do when it starts, without writing anything: per Service of type LoadBalancer,\n")
		_, _ = fmt.Fprintf(stderr, "the load balancer it keeps, adopts, takes over or creates and what it would change; per Node, the labels\n")
		_, _ = fmt.Fprintf(stderr, "it would set otherwise. Exit code %d: a Service would lose an address, or be refused or fail.\n", PlanAttention)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*format != "text" && *format != "json") {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", PlanCommand, err)
		return 1
	}
	cloud, err := cloudprovider.InitCloudProvider(*name, *file)
	if err != nil {
		return fail(err)
	}
	c, ok := cloud.(*Cloud)
	if !ok {
		return fail(fmt.Errorf("provider %q is not a ccmkit provider", *name))
	}
	client, err := kube(*kubeconfig)
	if err != nil {
		return fail(err)
	}
	p, err := c.Plan(ctx, client)
	if err != nil {
		return fail(err)
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(p)
	} else {
		err = p.WriteText(stdout)
	}
	if err != nil {
		return fail(err)
	}
	if p.Attention() {
		return PlanAttention
	}
	return 0
}

// WriteText writes the plan for a person: each Service and what would be done with it,
// indented lines for its changes, each Node with labels that would differ, and a
// summary.
func (p *MigrationPlan) WriteText(w io.Writer) error {
	var b strings.Builder
	counts := map[loadbalancer.PlanAction]int{}
	loses := 0
	_, _ = fmt.Fprintf(&b, "Services of type LoadBalancer (%d):\n", len(p.Services))
	for _, s := range p.Services {
		counts[s.Action]++
		_, _ = fmt.Fprintf(&b, "  %s: %s\n", s.Service, serviceLine(s))
		if s.LosesAddress {
			loses++
			_, _ = fmt.Fprintf(&b, "    ! loses its address: publishes [%s]\n", strings.Join(s.Published, ", "))
		}
		if s.Error != "" {
			_, _ = fmt.Fprintf(&b, "    ! %s\n", s.Error)
		}
		for _, c := range s.Changes {
			_, _ = fmt.Fprintf(&b, "    - %s\n", c)
		}
	}
	changed := 0
	_, _ = fmt.Fprintf(&b, "Nodes (%d):\n", len(p.Nodes))
	for _, n := range p.Nodes {
		switch {
		case n.Error != "":
			changed++
			_, _ = fmt.Fprintf(&b, "  %s: ! %s\n", n.Node, n.Error)
		case len(n.Changes) == 0:
			_, _ = fmt.Fprintf(&b, "  %s: labels as they are\n", n.Node)
		default:
			changed++
			_, _ = fmt.Fprintf(&b, "  %s:\n", n.Node)
			for _, c := range n.Changes {
				_, _ = fmt.Fprintf(&b, "    - %s: %s → %s\n", c.Label, orNone(c.From), orNone(c.To))
			}
		}
	}
	var parts []string
	for _, a := range []loadbalancer.PlanAction{loadbalancer.PlanUnchanged, loadbalancer.PlanUpdate, loadbalancer.PlanAdopt, loadbalancer.PlanTakeover,
		loadbalancer.PlanCreate, loadbalancer.PlanReplace, loadbalancer.PlanRefused, loadbalancer.PlanFails} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	_, _ = fmt.Fprintf(&b, "Summary: Services: %s; %d would lose an address. Nodes: %d of %d with other labels.\n",
		orNone(strings.Join(parts, ", ")), loses, changed, len(p.Nodes))
	_, err := io.WriteString(w, b.String())
	return err
}

// serviceLine is the one line of a Service's plan.
func serviceLine(s ServicePlan) string {
	addrs := "[" + strings.Join(s.Addresses, ", ") + "]"
	var line string
	switch s.Action {
	case loadbalancer.PlanUnchanged, loadbalancer.PlanUpdate:
		line = fmt.Sprintf("%s, load balancer %s, addresses %s kept", s.Action, s.LoadBalancerID, addrs)
	case loadbalancer.PlanAdopt, loadbalancer.PlanTakeover:
		line = fmt.Sprintf("%s of load balancer %s (%s), addresses %s kept", s.Action, s.LoadBalancerID, s.By, addrs)
	case loadbalancer.PlanCreate:
		line = "create: a NEW load balancer with a NEW address"
	case loadbalancer.PlanReplace:
		line = fmt.Sprintf("replace: load balancer %s (addresses %s) deleted, a NEW one with a NEW address", s.LoadBalancerID, addrs)
	case loadbalancer.PlanRefused:
		line = "refused: nothing written, no load balancer created"
		if s.LoadBalancerID != "" {
			line = fmt.Sprintf("refused: load balancer %s (%s) not adopted, none created", s.LoadBalancerID, s.By)
		}
	default:
		line = string(s.Action) + ": nothing written"
	}
	if len(s.Duplicates) > 0 {
		line += "; duplicates deleted: " + strings.Join(s.Duplicates, ", ")
	}
	return line
}

// orNone is s, or "(none)" when empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
