// Package provider is ccmkit's cloudprovider.Interface: it reads the cloud config, builds
// the cloud client and assembles the sub-interfaces (instances, zones, loadbalancer and
// routes) around one instrumented client and three snapshots of the cloud (instances,
// load balancers, routes), each refreshed after cache.maxAge.
//
// A cloud team registers its adapter under its own name from its adapter package's init,
// and its CCM's main.go blank-imports that package:
//
//	func init() {
//		provider.Register("mycloud", provider.Backend[Config]{Name: "mycloud", New: newClient},
//			provider.Options{ProviderIDTemplate: "mycloud://{id}"})
//	}
//
// Importing provider registers nothing and links no fake cloud. The built-in provider
// "ccmkit", served by the in-memory fake cloud, is registered by a blank import of package
// provider/builtin (the demo and examples/ccm).
//
// Tests and programs that want no global registry build a provider with New from a Config
// and a cloudapi.Client, or with Factory from a config file. Tests over the fake cloud get
// one, with the fake at hand, from package providertest in one call.
//
// The order of things follows the cloud-controller-manager: ReadConfig decodes and
// resolves credentials (the only I/O), Validate reports every problem at once, New
// assembles without calling the cloud or starting goroutines, and Initialize (after
// leader election) sets up the event recorder. The load balancers' background work (the
// watch of Node labels, the collection of unused target groups: Cloud.LoadBalancerWork)
// runs as controllers that package controllers adds to the command, each of which
// --controllers switches.
//
// Cloud.AdmissionPolicy writes the admission policy of the load balancer annotations for
// the provider's configuration, and RunAdmissionPolicyCommand is the `admission-policy`
// subcommand a CCM's main.go offers with one call.
package provider
