// Package zones implements the deprecated cloudprovider.Zones over the instance lookup
// shared with package instances. The cloud node controller does not call it when
// InstancesV2 is offered, as it is by ccmkit; it remains for tools that still do.
//
// provider.New builds it over the provider's instance lookup. A program that composes its
// own cloudprovider.Interface builds it with New over an instances.NewLookup, shared with
// package instances (see that package's example).
package zones
