// Package harness runs ccmkit's cloud-controller-manager against a real control plane for
// the e2e suite and the demo: kube-apiserver and etcd as processes on 127.0.0.1 (through
// controller-runtime's envtest, from binaries built by `make controlplane`), the fake cloud
// described by a cloud config behind a fault injector, and the CCM command of
// k8s.io/cloud-provider/app in this process, built as examples/ccm builds it, under
// --cloud-provider=ccmkit-e2e. It also acts as kubelets do (RegisterNode, SetNodeReady).
//
// It also runs examples/ccm as its own process (BuildCCM, StartCCMProcess) under
// --cloud-provider=ccmkit, over a cloud config whose `fake:` section names a state file
// (WithStateFile): a cloud that outlives the process, killed with SIGKILL and started
// again, or shared by leader-elected replicas; and any other command of the repository
// (Build, StartProcess), such as examples/restcloud and its restcloud-server, or
// examples/hcloud/ccm (a package of a module the e2e module requires by a replace).
//
// One CCM runs at a time per process: the provider registration is process-wide, and each
// start uses the Cloud last passed to StartCCM, so a restarted CCM meets its predecessor's
// cloud.
package harness
