package provider

import (
	"errors"
	"flag"
	"fmt"
	"io"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// AdmissionPolicy returns the ValidatingAdmissionPolicies and bindings that make the API
// server check the load balancer annotations this provider reads, as YAML
// (loadbalancer.AdmissionPolicy): under its annotation prefix, with the adapter's
// declared settings and annotation aliases, for the Services of its load balancer class. It fails when the
// provider serves no load balancers (the backend has none, or enable.loadBalancers is
// false): it then reads no annotation.
func (c *Cloud) AdmissionPolicy() ([]byte, error) {
	if c.lbs == nil {
		return nil, errors.New("load balancers are off (enable.loadBalancers: false, or the backend has none): ccmkit reads no Service annotation")
	}
	return loadbalancer.AdmissionPolicy(loadbalancer.AdmissionPolicyOptions{
		AnnotationPrefix: c.cfg.LoadBalancer.AnnotationPrefix,
		Settings:         c.opts.LoadBalancerSettings,
		Aliases:          c.opts.LoadBalancerAliases,
		Class:            c.cfg.LoadBalancer.Class,
		ClassOnly:        !c.cfg.ServesUnclassed(),
		Shape:            c.opts.LoadBalancerShape,
	})
}

// AdmissionPolicyCommand is the first argument of a cloud-controller-manager's command
// line that runs RunAdmissionPolicyCommand instead of the manager.
const AdmissionPolicyCommand = "admission-policy"

// RunAdmissionPolicyCommand runs `<ccm> admission-policy [--cloud-provider=NAME]
// [--cloud-config=FILE]` with args (after AdmissionPolicyCommand): it builds the provider
// as the manager does from the same flags, without calling the cloud, and prints its
// AdmissionPolicy to stdout, for `kubectl apply -f -`. defaultProvider is the default of
// --cloud-provider, the provider the command's main registers. It returns the exit code:
// 0 when printed, 1 when the provider or the config fails, 2 on bad flags. A CCM's main
// offers it with one line before it starts the manager:
//
//	if len(os.Args) > 1 && os.Args[1] == provider.AdmissionPolicyCommand {
//		os.Exit(provider.RunAdmissionPolicyCommand("myprovider", os.Args[2:], os.Stdout, os.Stderr))
//	}
func RunAdmissionPolicyCommand(defaultProvider string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(AdmissionPolicyCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("cloud-provider", defaultProvider, "the cloud provider, as the manager's --cloud-provider")
	file := fs.String("cloud-config", "", "the cloud config file, as the manager's --cloud-config")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(stderr, "Usage: %s [--cloud-provider=NAME] [--cloud-config=FILE]\n\n", AdmissionPolicyCommand)
		_, _ = fmt.Fprintf(stderr, "Prints the ValidatingAdmissionPolicies that make the API server refuse malformed load balancer\n")
		_, _ = fmt.Fprintf(stderr, "annotations of this configuration (prefix, the adapter's settings, class), for kubectl apply -f -.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cloud, err := cloudprovider.InitCloudProvider(*name, *file)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", AdmissionPolicyCommand, err)
		return 1
	}
	c, ok := cloud.(*Cloud)
	if !ok {
		_, _ = fmt.Fprintf(stderr, "%s: provider %q is not a ccmkit provider\n", AdmissionPolicyCommand, *name)
		return 1
	}
	out, err := c.AdmissionPolicy()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", AdmissionPolicyCommand, err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", AdmissionPolicyCommand, err)
		return 1
	}
	return 0
}
