// Command demo runs ccmkit's cloud-controller-manager against a real kube-apiserver and
// etcd on 127.0.0.1, over the fake cloud its cloud config describes, and tells what the
// controllers do: Nodes registered as kubelets with --cloud-provider=external register
// them get initialized from the cloud, a LoadBalancer Service gets its EXTERNAL-IP, the
// pod CIDRs get routes, a stopped instance gets the shutdown taint, a deleted instance's
// Node is removed, and a deleted Service's load balancer goes. It ends with a table of
// each step's time and cloud API calls.
//
//	make demo                                   # from the repository root
//	cd e2e && go run ./demo -keep               # then keep it running; Ctrl-C stops it
//	cd e2e && go run ./demo -config my.yaml     # a cloud config of your own
//
// The fake cloud keeps its state in a state file (the `fake:` section's stateFile; unless
// the config names one, cloud-state.json beside the cluster's other files), so that it
// outlives the cloud-controller-manager as a real cloud would. With -keep, the story's
// cloud-controller-manager hands over to examples/ccm, built and started as its own
// process on the same cloud config and state file, exactly as a user runs it; Enter kills
// that process (SIGKILL) and starts it again, and the demo shows that every Service kept
// its address. The kube-apiserver and etcd binaries come from `make controlplane`. Ctrl-C
// at any point stops every process the demo started and removes its files (a state file
// the config names is kept).
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/e2e/harness"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

//go:embed cloud.yaml
var defaultConfig []byte

// timeout bounds each wait for a controller; they act within seconds.
const timeout = 2 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once, without the cleanup
	}()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "demo interrupted: stopped everything it started")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// demo is the state of one run.
type demo struct {
	ctx       context.Context
	out       io.Writer
	cp        *harness.ControlPlane
	cloud     *harness.Cloud
	stateFile string
	steps     []step
	before    fake.Calls
	start     time.Time
}

// step is one line of the summary table.
type step struct {
	name  string
	took  time.Duration
	calls fake.Calls
}

func (d *demo) say(format string, args ...any) { _, _ = fmt.Fprintf(d.out, format+"\n", args...) }

// begin starts a step: its time and cloud calls are counted from here.
func (d *demo) begin(title string) {
	d.say("\n== %s", title)
	d.before = d.cloud.Fake.Calls()
	d.start = time.Now()
}

// end closes the step begun last.
func (d *demo) end(name string) {
	d.steps = append(d.steps, step{name: name, took: time.Since(d.start), calls: d.cloud.Fake.Calls().Sub(d.before)})
}

// wait polls cond until it holds, ctx ends or timeout passes.
func (d *demo) wait(what string, cond func(context.Context) (bool, error)) error {
	if err := harness.Eventually(d.ctx, timeout, what, cond); err != nil {
		if d.ctx.Err() != nil {
			return d.ctx.Err()
		}
		return err
	}
	return nil
}

// run runs the demo with the command line's args, writing the story to out; with -keep it
// reads the Enter key presses that restart the cloud-controller-manager from in.
func run(ctx context.Context, args []string, in io.Reader, out io.Writer) (err error) {
	flags := flag.NewFlagSet("demo", flag.ContinueOnError)
	flags.SetOutput(out)
	configPath := flags.String("config", "", "cloud config file (default: the embedded demo/cloud.yaml)")
	keep := flags.Bool("keep", false, "keep the cluster running after the story, until Ctrl-C, with the cloud-controller-manager as its own process that Enter restarts, and print its kubeconfig")
	logPath := flags.String("log", "", "write the cloud-controller-manager's log to this file (default: discarded)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	config, source := defaultConfig, "the embedded e2e/demo/cloud.yaml"
	if *configPath != "" {
		if config, err = os.ReadFile(*configPath); err != nil {
			return err
		}
		source = *configPath
	}
	var logFile io.Writer
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		logFile = f
	}

	d := &demo{ctx: ctx, out: out}
	stateFile, err := harness.StateFileOf(config)
	if err != nil {
		return fmt.Errorf("cloud config %s: %w", source, err)
	}
	d.say("ccmkit demo: the cloud-controller-manager (k8s.io/cloud-provider's command with ccmkit's provider)")
	d.say("against a real kube-apiserver and etcd, over the fake cloud of %s", source)

	started := time.Now()
	if d.cp, err = harness.StartControlPlane(); err != nil {
		return err
	}
	defer func() {
		if stopErr := d.cp.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	if stateFile == "" {
		// The cloud lives as long as the cluster: beside etcd's data, removed with it.
		stateFile = filepath.Join(d.cp.Dir(), "cloud-state.json")
		if config, err = harness.WithStateFile(config, stateFile); err != nil {
			return fmt.Errorf("cloud config %s: %w", source, err)
		}
	}
	if d.cloud, err = harness.NewCloud(config, faultinject.Config{}); err != nil {
		return fmt.Errorf("cloud config %s: %w", source, err)
	}
	d.stateFile = stateFile
	version, err := d.cp.Client.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	d.say("kube-apiserver %s and etcd on %s, ready in %.1f s", version.GitVersion, d.cp.Config.Host, time.Since(started).Seconds())
	d.say("the fake cloud keeps its state in %s", stateFile)

	ccm, err := harness.StartCCM(d.cp, d.cloud, logFile)
	if err != nil {
		return err
	}
	stopCCM := func() error {
		if ccm == nil {
			return nil
		}
		err := ccm.Stop()
		ccm = nil
		if err != nil {
			return fmt.Errorf("stopping the cloud-controller-manager: %w", err)
		}
		return nil
	}
	defer func() {
		if stopErr := stopCCM(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	d.say("cloud-controller-manager started: --cloud-provider=%s, controllers cloud-node, cloud-node-lifecycle, service, route", harness.ProviderName)

	for _, scene := range []func() error{d.initNodes, d.loadBalancer, d.shutdown, d.deleteInstance, d.deleteService} {
		if err := scene(); err != nil {
			return err
		}
	}
	d.summary()

	if *keep {
		if err := stopCCM(); err != nil {
			return err
		}
		return d.keep(config, in, logFile)
	}
	return nil
}

var nodeNames = []string{"node-a", "node-b", "node-c"}

func (d *demo) initNodes() error {
	d.begin("Nodes register as kubelets with --cloud-provider=external do (uninitialized taint, pod CIDR)")
	for i, name := range nodeNames {
		spec := harness.NodeSpec{Name: name, PodCIDRs: []string{fmt.Sprintf("10.244.%d.0/24", i+1)}}
		if _, err := harness.RegisterNode(d.ctx, d.cp.Client, spec); err != nil {
			return err
		}
		d.say("registered %s with taint %s", name, cloudproviderapi.TaintExternalCloudProvider)
	}
	var nodes []corev1.Node
	if err := d.wait("every Node initialized", func(ctx context.Context) (bool, error) {
		list, err := d.cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		nodes = list.Items
		return len(nodes) == len(nodeNames) && !slices.ContainsFunc(nodes, uninitialized), nil
	}); err != nil {
		return err
	}
	for _, n := range nodes {
		var addrs []string
		for _, a := range n.Status.Addresses {
			addrs = append(addrs, fmt.Sprintf("%s=%s", a.Type, a.Address))
		}
		d.say("%s initialized: providerID %s, %s, zone %s, region %s", n.Name, n.Spec.ProviderID,
			n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelTopologyRegion])
		d.say("    addresses %s", strings.Join(addrs, " "))
	}
	if err := d.wait("a route per Node pod CIDR", func(context.Context) (bool, error) {
		return len(d.cloud.Fake.Inventory().Routes) == len(nodeNames), nil
	}); err != nil {
		return err
	}
	for _, r := range d.cloud.Fake.Inventory().Routes {
		d.say("route in the cloud: %s → %s (Node %s)", r.DestinationCIDR, r.TargetInstanceID, r.Tags[cloudapi.TagNode])
	}
	d.end("3 Nodes initialized, 3 routes")
	return nil
}

// uninitialized reports whether the cloud node controller has yet to finish the Node:
// provider ID, taint removed, and (a separate write) its addresses.
func uninitialized(n corev1.Node) bool {
	return n.Spec.ProviderID == "" || len(n.Status.Addresses) == 0 || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == cloudproviderapi.TaintExternalCloudProvider
	})
}

func (d *demo) loadBalancer() error {
	d.begin("a LoadBalancer Service")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := d.cp.Client.CoreV1().Services(svc.Namespace).Create(d.ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.say("created Service default/web, type LoadBalancer, port 80")
	var ing corev1.LoadBalancerIngress
	if err := d.wait("web's EXTERNAL-IP", func(ctx context.Context) (bool, error) {
		s, err := d.cp.Client.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		ing = s.Status.LoadBalancer.Ingress[0]
		return true, nil
	}); err != nil {
		return err
	}
	mode := "unset"
	if ing.IPMode != nil {
		mode = string(*ing.IPMode)
	}
	d.say("web EXTERNAL-IP %s (ipMode %s); the cloud reported the new load balancer provisioning, and ccmkit asked the service controller to come back in %s", ing.IP, mode, loadbalancer.ProvisioningRetryDelay)
	for _, lb := range d.cloud.Fake.Inventory().LoadBalancers {
		d.say("    cloud load balancer %s %q: %s, listeners %d, targets %s", lb.ID, lb.Spec.Name, lb.Status, len(lb.Spec.Listeners), strings.Join(lb.Spec.Targets, ","))
	}
	d.end("LoadBalancer Service → EXTERNAL-IP")
	return nil
}

func (d *demo) shutdown() error {
	d.begin("instance i-0003 (node-c) stopped")
	if err := d.cloud.Fake.SetInstanceState("i-0003", cloudapi.InstanceStopped); err != nil {
		return err
	}
	if _, err := harness.SetNodeReady(d.ctx, d.cp.Client, "node-c", false); err != nil {
		return err
	}
	d.say("stopped i-0003 in the cloud; node-c's kubelet stops posting (Ready=Unknown)")
	if err := d.wait("the shutdown taint on node-c", func(ctx context.Context) (bool, error) {
		n, err := d.cp.Client.CoreV1().Nodes().Get(ctx, "node-c", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == cloudproviderapi.TaintNodeShutdown }), nil
	}); err != nil {
		return err
	}
	d.say("node-c has taint %s; the Node stays", cloudproviderapi.TaintNodeShutdown)
	d.end("shutdown taint")
	return nil
}

func (d *demo) deleteInstance() error {
	d.begin("instance i-0002 (node-b) deleted")
	if err := d.cloud.Fake.DeleteInstance("i-0002"); err != nil {
		return err
	}
	if _, err := harness.SetNodeReady(d.ctx, d.cp.Client, "node-b", false); err != nil {
		return err
	}
	d.say("deleted i-0002 in the cloud; node-b is NotReady")
	if err := d.wait("node-b removed", func(ctx context.Context) (bool, error) {
		_, err := d.cp.Client.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}
	d.say("node-b deleted by the node lifecycle controller")
	if err := d.wait("node-b's target and route gone", func(context.Context) (bool, error) {
		inv := d.cloud.Fake.Inventory()
		for _, lb := range inv.LoadBalancers {
			if slices.Contains(lb.Spec.Targets, "i-0002") {
				return false, nil
			}
		}
		return !slices.ContainsFunc(inv.Routes, func(r cloudapi.Route) bool { return r.TargetInstanceID == "i-0002" }), nil
	}); err != nil {
		return err
	}
	d.say("i-0002 is no longer a load balancer target, and its route is gone")
	d.end("Node of a deleted instance removed")
	return nil
}

func (d *demo) deleteService() error {
	d.begin("the Service deleted")
	if err := d.cp.Client.CoreV1().Services(metav1.NamespaceDefault).Delete(d.ctx, "web", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := d.wait("web and its load balancer gone", func(ctx context.Context) (bool, error) {
		_, err := d.cp.Client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(d.cloud.Fake.Inventory().LoadBalancers) == 0, nil
	}); err != nil {
		return err
	}
	d.say("the load balancer is gone from the cloud and the finalizer released the Service")
	d.end("Service deleted → load balancer gone")
	return nil
}

func (d *demo) summary() {
	d.say("\n== summary")
	w := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintln(w, "step\ttime\tcloud reads\tcloud writes\t")
	var reads, writes int64
	for _, s := range d.steps {
		_, _ = fmt.Fprintf(w, "%s\t%.1f s\t%d\t%d\t\n", s.name, s.took.Seconds(), s.calls.Reads(), s.calls.Writes())
		reads += s.calls.Reads()
		writes += s.calls.Writes()
	}
	_, _ = fmt.Fprintf(w, "total\t\t%d\t%d\t\n", reads, writes)
	_ = w.Flush()
}
