// Package provider is ccmkit's cloudprovider.Interface: it reads the cloud config, builds
// the cloud client and assembles the sub-interfaces (instances, zones, and as they land
// loadbalancer and routes) around one instrumented client and one instance snapshot.
//
// Blank-importing it registers the provider "ccmkit", whose built-in backend is the
// in-memory fake cloud described in the cloud config:
//
//	import _ "github.com/ccmkit/ccmkit/provider"
//
// A cloud team registers its own adapter under its own name from its adapter package's
// init, and its CCM's main.go blank-imports that package instead:
//
//	func init() {
//		provider.Register("mycloud", provider.Backend[Config]{Name: "mycloud", New: newClient},
//			provider.Options{ProviderIDTemplate: "mycloud://{id}"})
//	}
//
// Tests and programs that want no global registry build a provider with New from a Config
// and a cloudapi.Client, or with Factory from a config file. Tests over the fake cloud get
// one, with the fake at hand, from package providertest in one call.
//
// The order of things follows the cloud-controller-manager: ReadConfig decodes and
// resolves credentials (the only I/O), Validate reports every problem at once, New
// assembles without calling the cloud or starting goroutines, and Initialize (after
// leader election) sets up events.
package provider
