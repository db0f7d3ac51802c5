// Package providerid formats and parses Kubernetes provider IDs, the spec.providerID of a
// Node that names its cloud instance.
//
// The default format is "<provider-name>://<instance-id>". A cloud migrating from an
// existing cloud-controller-manager keeps its format with a template such as
// "aws:///{zone}/{id}" or "gce://my-project/{zone}/{id}": Nodes registered by the old
// controller keep working, and new ones get the same shape.
//
// Parsing is strict: a provider ID that does not match the template (another cloud's
// prefix, a missing instance ID, extra path segments), that is longer than MaxLength, or
// whose values hold anything but printable ASCII characters other than "/" and the space
// (a NUL or another control character, white space, a non-ASCII letter) is an error that
// says what was expected, quoting the ID cut to a bound. It is never read as "instance not
// found", because that would make the node lifecycle controller delete the Node. Format
// makes only provider IDs that Parse accepts, and Compile refuses a template with a
// character that is no printable ASCII or is a space.
package providerid
