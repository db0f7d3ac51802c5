// Package builtin registers ccmkit's built-in cloud provider, "ccmkit", served by the
// in-memory fake cloud of package fake: the provider of the demo, of examples/ccm and of
// anyone trying ccmkit without a cloud. Blank-importing it is the whole integration:
//
//	import _ "github.com/ccmkit/ccmkit/provider/builtin" // registers --cloud-provider=ccmkit
//
// The fake cloud is described by the cloud config's `fake:` section (see fake.Config); an
// empty section is an empty cloud. With `fake.stateFile` set, the cloud outlives the
// process: its load balancers, routes, addresses and instances are kept in that file and
// loaded at the next start (fake.Open), so a restarted or failed-over
// cloud-controller-manager finds its load balancers with their addresses.
//
// A cloud's own cloud-controller-manager does not import this package: its adapter calls
// provider.Register under its own name, and its binary neither offers --cloud-provider=ccmkit
// nor links the fake cloud. Tests that want the fake cloud without the global registry use
// package providertest, or provider.Factory(builtin.Backend(), opts).
package builtin
