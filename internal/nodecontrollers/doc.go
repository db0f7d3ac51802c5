// Package nodecontrollers builds the upstream cloud node and node lifecycle controllers
// (k8s.io/cloud-provider/controllers/node and nodelifecycle) whatever the supported
// k8s.io/cloud-provider minor version, for the demo, the benchmarks and the tests that run
// them beside ccmkit.
//
// Their constructors' worker arguments changed between the minors ccmkit supports
// (docs/versioning.md): NewCloudNodeController takes one worker count in v0.35 and two (node
// initialization, status updates) from v0.36; NewCloudNodeLifecycleController takes none in
// v0.35 and v0.36 and a concurrency from v0.37. ccmkit's library packages never call them
// (a cloud-controller-manager's app package does), so this adaptation stays internal.
package nodecontrollers
