package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/e2e/harness"
)

// keep hands the cluster over to examples/ccm, started as its own process with the cloud
// config (and so the state file) the story ran on, and keeps it running until ctx ends.
// Each line read from in kills that process with SIGKILL and starts it again, then shows
// every LoadBalancer Service's addresses before and after, and its load balancer in the
// cloud. The process's output goes to logFile (nil: discarded).
func (d *demo) keep(config []byte, in io.Reader, logFile io.Writer) (err error) {
	d.say("\n== the cloud-controller-manager as its own process")
	d.say("building %s with go build (up to a minute or two the first time)", harness.CCMPackage)
	dir, err := os.MkdirTemp(d.cp.Dir(), "bin-") // removed with the control plane's files
	if err != nil {
		return err
	}
	bin, err := harness.BuildCCM(d.ctx, dir)
	if err != nil {
		if d.ctx.Err() != nil {
			return d.ctx.Err()
		}
		return err
	}
	ccm, err := harness.StartCCMProcess(bin, d.cp, config, logFile)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := ccm.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the cloud-controller-manager: %w", stopErr)
		}
	}()
	d.say("started examples/ccm on the same cloud config and state file, pid %d:\n  %s", ccm.Pid(), ccm.CommandLine())

	d.say("\nThe cluster keeps running. Try:")
	d.say("  kubectl --kubeconfig %s get nodes -o wide", d.cp.KubeconfigPath)
	d.say("  kubectl --kubeconfig %s create service loadbalancer demo --tcp=80:8080", d.cp.KubeconfigPath)
	d.say("  kubectl --kubeconfig %s get services", d.cp.KubeconfigPath)
	d.say("The cloud is kept in %s: the cloud-controller-manager can die and start again,", d.stateFile)
	d.say("and every Service keeps its address. Press Enter to kill it (SIGKILL) and start it again.")
	d.say("Ctrl-C stops everything and removes every file the demo wrote.")

	presses := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(in)
		for lines.Scan() {
			select {
			case presses <- struct{}{}:
			case <-d.ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-d.ctx.Done():
			d.say("stopping")
			return nil
		case <-presses:
		}
		if ccm, err = d.restart(bin, config, logFile, ccm); err != nil {
			return err
		}
	}
}

// restart kills ccm, starts a new process and reports each LoadBalancer Service's
// addresses before and after the new process has ensured its load balancer.
func (d *demo) restart(bin string, config []byte, logFile io.Writer, ccm *harness.CCMProcess) (*harness.CCMProcess, error) {
	d.say("\n== the cloud-controller-manager killed and started again")
	before, err := d.loadBalancerServices(d.ctx)
	if err != nil {
		return ccm, err
	}
	if err := ccm.Kill(); err != nil {
		return ccm, err
	}
	d.say("killed pid %d with SIGKILL", ccm.Pid())
	// Events carry whole seconds: start in a new second, so that every EnsuredLoadBalancer
	// event from then on is the new process's.
	since := time.Now().Truncate(time.Second).Add(time.Second)
	select {
	case <-d.ctx.Done():
		return ccm, d.ctx.Err()
	case <-time.After(time.Until(since)):
	}
	next, err := harness.StartCCMProcess(bin, d.cp, config, logFile)
	if err != nil {
		return ccm, err
	}
	d.say("started it again, pid %d", next.Pid())
	if len(before) == 0 {
		d.say("no LoadBalancer Service yet: create one (see above) and press Enter again")
		return next, nil
	}
	var after []lbService
	if err := d.wait("the new cloud-controller-manager to ensure every LoadBalancer Service", func(ctx context.Context) (bool, error) {
		if exited, err := next.Exited(); exited {
			return false, err
		}
		events, err := d.cp.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=EnsuredLoadBalancer"})
		if err != nil {
			return false, err
		}
		ensured := map[string]bool{}
		for _, ev := range events.Items {
			if !ev.LastTimestamp.Time.Before(since) || !ev.EventTime.Time.Before(since) {
				ensured[string(ev.InvolvedObject.UID)] = true
			}
		}
		if after, err = d.loadBalancerServices(ctx); err != nil {
			return false, err
		}
		for _, s := range after {
			if !ensured[s.uid] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return next, err
	}

	lbs := map[string]cloudapi.LoadBalancer{}
	for _, lb := range d.cloud.Fake.Inventory().LoadBalancers {
		lbs[lb.Spec.Tags[cloudapi.TagService]] = lb
	}
	was := map[string][]string{}
	for _, s := range before {
		was[s.uid] = s.ips
	}
	w := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "Service\tbefore\tafter\tload balancer in the cloud\t")
	kept := true
	for _, s := range after {
		lb := lbs[s.uid]
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s %s\t\n", s.name, strings.Join(was[s.uid], ","), strings.Join(s.ips, ","), lb.ID, strings.Join(lb.Addresses, ","))
		if _, existed := was[s.uid]; existed && len(was[s.uid]) > 0 && !slices.Equal(was[s.uid], s.ips) {
			kept = false
		}
	}
	_ = w.Flush()
	if kept {
		d.say("every Service kept its address: the new process found its load balancers in %s", d.stateFile)
	} else {
		d.say("a Service's address changed across the restart: that is a bug; please report it")
	}
	return next, nil
}

// lbService is a LoadBalancer Service with its addresses.
type lbService struct {
	name, uid string
	ips       []string // sorted
}

// loadBalancerServices lists the LoadBalancer Services of every namespace, by name.
func (d *demo) loadBalancerServices(ctx context.Context) ([]lbService, error) {
	list, err := d.cp.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []lbService
	for _, s := range list.Items {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.DeletionTimestamp != nil {
			continue
		}
		svc := lbService{name: s.Namespace + "/" + s.Name, uid: string(s.UID)}
		for _, ing := range s.Status.LoadBalancer.Ingress {
			svc.ips = append(svc.ips, ing.IP)
		}
		slices.Sort(svc.ips)
		out = append(out, svc)
	}
	slices.SortFunc(out, func(a, b lbService) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
