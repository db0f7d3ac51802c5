// Package zones implements the deprecated cloudprovider.Zones over the shared instance
// snapshot. The cloud node controller does not call it when InstancesV2 is offered, as it
// is by ccmkit; it remains for tools that still do.
package zones
