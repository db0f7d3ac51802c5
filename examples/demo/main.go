// Command demo runs the upstream cloud node and node lifecycle controllers of
// k8s.io/cloud-provider against the ccmkit provider on its in-memory fake cloud, with an
// in-memory Kubernetes API (client-go's fake clientset), and tells what happens: Nodes
// registered as kubelets with --cloud-provider=external register them are initialized from
// the cloud, a stopped instance gets the shutdown taint, and the Node of a deleted instance
// is deleted while the cloud API fails, but no other Node is. It ends with the cloud API
// calls each step cost.
//
//	go run ./examples/demo                 # the embedded cloud.yaml
//	go run ./examples/demo -config my.yaml # a cloud config of your own
//	go run ./examples/demo -v 2            # with the controllers' and ccmkit's logs
//
// It needs no cluster, no container runtime and no network.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/klog/v2"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/nodecontrollers"
	"github.com/ccmkit/ccmkit/provider"
	"github.com/ccmkit/ccmkit/provider/builtin"
)

//go:embed cloud.yaml
var defaultConfig []byte

// timeout bounds every wait of the demo: the controllers act within seconds.
const timeout = 2 * time.Minute

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// demo is the state of one run.
type demo struct {
	kube   kubernetes.Interface
	cloud  *fake.Cloud
	chaos  *faultinject.Client
	out    io.Writer
	steps  []step
	before fake.Calls
	start  time.Time
}

// step is one line of the summary table.
type step struct {
	name  string
	took  time.Duration
	calls fake.Calls
}

// run runs the demo with the command line args and writes its story to out.
func run(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("demo", flag.ContinueOnError)
	configPath := flags.String("config", "", "cloud config file (default: the embedded cloud.yaml)")
	verbosity := flags.Int("v", -1, "show the controllers' and ccmkit's logs at this verbosity")
	if err := flags.Parse(args); err != nil {
		return err
	}

	logs := klog.NewKlogr()
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if *verbosity < 0 {
		_ = klogFlags.Set("logtostderr", "false")
		_ = klogFlags.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	} else {
		_ = klogFlags.Set("v", fmt.Sprint(*verbosity))
	}

	config := defaultConfig
	source := "the embedded examples/demo/cloud.yaml"
	if *configPath != "" {
		var err error
		if config, err = os.ReadFile(*configPath); err != nil {
			return err
		}
		source = *configPath
	}

	d := &demo{out: out, start: time.Now()}
	d.say("ccmkit demo: the upstream cloud node and node lifecycle controllers against the ccmkit provider")
	d.say("cloud config: %s (backend fake: an in-memory cloud)", source)

	// The provider is built the way a cloud-controller-manager builds it from
	// --cloud-config, with the fake cloud wrapped in a fault injector that is off for now.
	backend := provider.Backend[fake.Config]{
		Name: fake.SectionName,
		New: func(cfg *provider.Config, section fake.Config) (cloudapi.Client, error) {
			c, err := builtin.Backend().New(cfg, section)
			if err != nil {
				return nil, err
			}
			d.cloud = c.(*fake.Cloud)
			d.chaos = faultinject.Wrap(d.cloud, faultinject.Config{Seed: 1})
			d.chaos.SetEnabled(false)
			return d.chaos, nil
		},
	}
	cloud, err := provider.Factory(backend, provider.Options{})(bytes.NewReader(config))
	if err != nil {
		return err
	}
	inv := d.cloud.Inventory()
	d.say("the cloud has %d instances in region %s", len(inv.Instances), d.cloud.Config().Region)

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logs))
	defer cancel()
	kube := kubefake.NewClientset()
	d.kube = kube
	cloud.Initialize(clientBuilder{kube}, ctx.Done())

	// 1. Kubelets register their Nodes, tainted uninitialized. They do so before the
	// controllers start: client-go's fake clientset can lose an object created between an
	// informer's list and its watch (seen with v0.35), and the controllers find the Nodes in
	// their first list as well as they would in a watch event.
	d.begin()
	for _, inst := range inv.Instances {
		if err := d.registerNode(ctx, inst.Name); err != nil {
			return err
		}
	}
	if err := d.startControllers(ctx, cloud); err != nil {
		return err
	}
	d.say("")
	d.say("1. %d kubelets (--cloud-provider=external) register their Nodes with the %s taint", len(inv.Instances), cloudproviderapi.TaintExternalCloudProvider)
	for _, inst := range inv.Instances {
		node, err := d.waitNode(ctx, inst.Name, "initialized", func(n *corev1.Node) bool {
			return n.Spec.ProviderID != "" && len(n.Status.Addresses) > 0 && !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider)
		})
		if err != nil {
			return err
		}
		d.describeNode(node)
	}
	d.end("initialize the Nodes")

	// 2. An instance is stopped: its Node gets the shutdown taint.
	victim := inv.Instances[1]
	d.begin()
	d.say("")
	d.say("2. instance %s (Node %s) is stopped in the cloud; its kubelet stops reporting", victim.ID, victim.Name)
	if err := d.cloud.SetInstanceState(victim.ID, cloudapi.InstanceStopped); err != nil {
		return err
	}
	if err := d.setReady(ctx, victim.Name, corev1.ConditionUnknown); err != nil {
		return err
	}
	if _, err := d.waitNode(ctx, victim.Name, "shutdown taint", func(n *corev1.Node) bool { return hasTaint(n, cloudproviderapi.TaintNodeShutdown) }); err != nil {
		return err
	}
	d.say("   Node %s has the taint %s: pods move, the Node stays", victim.Name, cloudproviderapi.TaintNodeShutdown)
	d.end("stopped instance: shutdown taint")

	// 3. An instance is deleted while the cloud API fails.
	gone := inv.Instances[2]
	d.begin()
	d.say("")
	d.say("3. every kubelet stops reporting (a network partition), instance %s (Node %s) is deleted,", gone.ID, gone.Name)
	d.say("   and the cloud API fails: the next 3 GetInstance and 2 ListInstances calls time out, fail or are throttled")
	d.chaos.Script(cloudapi.OpGetInstance,
		faultinject.Fault{Kind: faultinject.Timeout}, faultinject.Fault{Kind: faultinject.Transient}, faultinject.Fault{Kind: faultinject.Throttle})
	d.chaos.Script(cloudapi.OpListInstances, faultinject.Fault{Kind: faultinject.Transient}, faultinject.Fault{Kind: faultinject.Throttle})
	d.chaos.SetEnabled(true)
	if err := d.cloud.DeleteInstance(gone.ID); err != nil {
		return err
	}
	for _, inst := range inv.Instances {
		if err := d.setReady(ctx, inst.Name, corev1.ConditionUnknown); err != nil {
			return err
		}
	}
	if err := d.waitGone(ctx, gone.Name); err != nil {
		return err
	}
	faults := 0
	for _, n := range d.chaos.Injected().Total().Faults {
		faults += n
	}
	d.say("   Node %s is deleted, once the cloud answered that instance %s does not exist", gone.Name, gone.ID)
	nodes, err := d.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var left []string
	for _, n := range nodes.Items {
		left = append(left, n.Name)
	}
	d.say("   %d cloud calls failed on purpose; none was taken for \"gone\": Nodes %s are still there", faults, strings.Join(left, ", "))
	if len(nodes.Items) != len(inv.Instances)-1 {
		return fmt.Errorf("%d Nodes left, want %d: a Node was deleted although its instance exists", len(nodes.Items), len(inv.Instances)-1)
	}
	d.chaos.SetEnabled(false)
	d.end("deleted instance: Node deleted, under faults")

	cancel()
	d.summary()
	return nil
}

// startControllers runs the two upstream controllers as a cloud-controller-manager does,
// with short periods so that the demo takes seconds.
func (d *demo) startControllers(ctx context.Context, cloud cloudprovider.Interface) error {
	factory := informers.NewSharedInformerFactory(d.kube, 0)
	nodes := factory.Core().V1().Nodes()
	cnc, err := nodecontrollers.NewNode(nodes, d.kube, cloud, time.Second, 2, 2)
	if err != nil {
		return err
	}
	lifecycle, err := nodecontrollers.NewLifecycle(nodes, d.kube, cloud, 500*time.Millisecond, 2)
	if err != nil {
		return err
	}
	metrics := controllersmetrics.NewControllerManagerMetrics("demo")
	factory.Start(ctx.Done())
	go cnc.RunWithContext(ctx, metrics)
	go lifecycle.Run(ctx, metrics)
	return nil
}

func (d *demo) registerNode(ctx context.Context, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	_, err := d.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

func (d *demo) setReady(ctx context.Context, name string, status corev1.ConditionStatus) error {
	node, err := d.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.Now()}}
	_, err = d.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (d *demo) waitNode(ctx context.Context, name, what string, done func(*corev1.Node) bool) (*corev1.Node, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		node, err := d.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && done(node) {
			return node, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("node %s: not %s after %s", name, what, timeout)
}

func (d *demo) waitGone(ctx context.Context, name string) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := d.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("node " + name + " still exists after " + timeout.String())
}

func (d *demo) describeNode(n *corev1.Node) {
	var addrs []string
	for _, a := range n.Status.Addresses {
		addrs = append(addrs, fmt.Sprintf("%s=%s", a.Type, a.Address))
	}
	d.say("   %-7s %-16s %-10s zone=%s region=%s  %s", n.Name, n.Spec.ProviderID,
		n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelTopologyRegion],
		strings.Join(addrs, " "))
}

func (d *demo) begin() {
	d.before = d.cloud.Calls()
	d.steps = append(d.steps, step{took: time.Since(d.start)})
}

func (d *demo) end(name string) {
	s := &d.steps[len(d.steps)-1]
	s.name = name
	s.took = time.Since(d.start) - s.took
	s.calls = d.cloud.Calls().Sub(d.before)
}

func (d *demo) summary() {
	d.say("")
	d.say("cloud API calls that reached the fake cloud (after ccmkit's snapshot, retries and rate limit):")
	w := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "step\ttime\tcalls\tby operation")
	for _, s := range d.steps {
		var ops []string
		for _, op := range slices.Sorted(maps.Keys(s.calls)) {
			ops = append(ops, fmt.Sprintf("%s %d", op, s.calls[op]))
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", s.name, s.took.Round(10*time.Millisecond), s.calls.Total(), strings.Join(ops, ", "))
	}
	_ = w.Flush()
	d.say("")
	d.say("total %s; the controllers kept polling the whole time (node status every 1s, lifecycle every 0.5s)", time.Since(d.start).Round(10*time.Millisecond))
}

func (d *demo) say(format string, args ...any) { _, _ = fmt.Fprintf(d.out, format+"\n", args...) }

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// clientBuilder hands the provider the in-memory Kubernetes client, as the
// cloud-controller-manager hands it a real one.
type clientBuilder struct{ kube kubernetes.Interface }

func (b clientBuilder) Config(string) (*rest.Config, error)         { return &rest.Config{}, nil }
func (b clientBuilder) ConfigOrDie(string) *rest.Config             { return &rest.Config{} }
func (b clientBuilder) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b clientBuilder) ClientOrDie(string) kubernetes.Interface     { return b.kube }
