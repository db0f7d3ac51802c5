// Package lbclass serves Services of one load balancer class (spec.loadBalancerClass)
// with a cloud provider's LoadBalancer, as the upstream service controller serves Services
// without a class.
//
// The upstream service controller (k8s.io/cloud-provider/controllers/service) skips every
// Service whose spec.loadBalancerClass is set: the field exists so that several load
// balancer implementations (MetalLB, a gateway, a second cloud) can share a cluster, each
// serving its own class. This package is the controller for the class the provider serves:
// ccmkit's provider serves the cloud config's loadBalancer.class.
//
// # In a cloud-controller-manager
//
// One line in main.go adds it, with ccmkit's other controllers (package controllers),
// next to the upstream controllers:
//
//	command := app.NewCloudControllerManagerCommand(opts, initCloud,
//		controllers.With(app.DefaultInitFuncConstructors), names.CCMControllerAliases(),
//		cliflag.NamedFlagSets{}, wait.NeverStop)
//
// It is the controller ControllerName ("service-lb-class-controller") of --controllers,
// on with "*". Without a configured class it does not start (the InitFunc reports it not
// started and the command logs `Skipping "service-lb-class-controller"`): nothing runs,
// nothing is watched beyond the shared informers the upstream controllers use anyway. It
// calls the API server as ClientName, "service-controller", the upstream service
// controller's identity, because it needs exactly that controller's permissions (patch on
// services/status, events); the RBAC in deploy/ and the Helm chart already grants them.
//
// ccmkit's cloud config says which Services ccmkit serves:
//
//	loadBalancer:
//	  class: example.com/ccmkit   # Services of this class: this package's controller
//	  serveUnclassed: true        # Services without a class: the upstream controller (default)
//
// With serveUnclassed false the provider's LoadBalancer answers (nil, false), so the
// upstream service controller does not start (it logs that the cloud provider does not
// support external load balancers; --controllers=*,-service silences it) and touches no
// Service, and Services without a class are left to another implementation.
//
// # What a Service of the class gets
//
// Exactly what a Service without a class gets from the upstream service controller, which
// this controller follows line by line (its behaviour is the same in Kubernetes 1.35, 1.36
// and 1.37): the same LoadBalancer calls (EnsureLoadBalancer, UpdateLoadBalancer,
// EnsureLoadBalancerDeleted, GetLoadBalancer) with the same arguments and so the same
// cloud calls; the finalizer service.kubernetes.io/load-balancer-cleanup added before the
// first Ensure and removed after the delete; status.loadBalancer patched from Ensure's
// answer (ipMode included) only when it changed; the events EnsuringLoadBalancer,
// EnsuredLoadBalancer, SyncLoadBalancerFailed, DeletingLoadBalancer, DeletedLoadBalancer,
// DeleteLoadBalancerFailed, UpdatedLoadBalancer, UpdateLoadBalancerFailed and
// UnAvailableLoadBalancer; a failed sync retried after MinRetryDelay doubling to
// MaxRetryDelay, and a RetryError (a load balancer still provisioning) after its own
// delay; a Node added, deleted, relabelled with node.kubernetes.io/exclude-from-external-
// load-balancers or given a new provider ID reaching every load balancer of the class,
// with the upstream node set (every Node but those being deleted, excluded by the label,
// or tainted ToBeDeletedByClusterAutoscaler; readiness is the health check's business).
// Where upstream has a data race (its node sync reads its Service cache without a lock)
// this controller does not, and a Service whose finalizer someone removed is still cleaned
// up when it goes.
//
// # What is never touched
//
// A Service of another class: no write, no event, no cloud call. The one exception
// concerns the cloud, not the Service: a Service the controller served that moved to
// another class (via type ClusterIP, which drops spec.loadBalancerClass, and back, faster
// than the controller looked at the middle state) still has the controller's load
// balancer, which is deleted; the Service, its status and its finalizer are left to the
// other class's controller.
//
// A Service without a class is the upstream service controller's when it serves them (the
// provider's LoadBalancer is offered and --controllers enables service-lb-controller); a
// Service that leaves the class through type ClusterIP becomes one, and the upstream
// controller cleans it up over the same LoadBalancer. When the upstream controller does
// not serve them, this controller cleans up after a Service without a class that holds
// the finalizer and is being deleted or no longer of type LoadBalancer, but only when its
// load balancer is provably this cluster's (the LoadBalancer finds one by this cluster's
// and the Service's owner tags) or the controller served it under the same UID: then it
// deletes the load balancer, removes the finalizer and clears the status, as upstream
// would. Otherwise the Service is another implementation's and is not written.
//
// # Why a controller of its own
//
// The alternative, a second upstream service controller over a clientset and informers
// that show it the Services of the class as unclassed ones and hide the rest, was
// rejected. The illusion breaks where a Service leaves the class: type ClusterIP drops
// spec.loadBalancerClass, so the filter would hide the Service, and the wrapped controller
// would take it for deleted, delete its load balancer from its cache and never remove the
// finalizer or clear the status of the real object. It would also rest on every read and
// write the upstream controller makes, in each supported minor, going through the
// wrapper; share upstream's global metrics and work queue names with the real service
// controller; and inherit its node sync's data race. A controller that reads the real
// objects and filters by class is simpler to prove, and is proven against the upstream one
// (the same calls for the same scenario) in its tests.
package lbclass
