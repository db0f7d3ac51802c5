// Package controllers adds ccmkit's own controllers to a cloud-controller-manager built
// with k8s.io/cloud-provider/app, next to the upstream ones. One line in main.go:
//
//	command := app.NewCloudControllerManagerCommand(opts, initCloud,
//		controllers.With(app.DefaultInitFuncConstructors), names.CCMControllerAliases(),
//		cliflag.NamedFlagSets{}, wait.NeverStop)
//
// With adds, each a controller of --controllers under its name:
//
//   - lbclass.ControllerName ("service-lb-class-controller"): the Services of the
//     provider's load balancer class (package lbclass), as lbclass.ClientName, the
//     upstream service controller's identity. On with "*"; it does not start when the
//     provider serves no class.
//   - sweeper.ControllerName ("ccmkit-sweeper"): deletes what the cluster left behind in
//     the cloud (package sweeper), as sweeper.ClientName. On with "*"; it does not start
//     unless the provider offers a sweeper (ccmkit's provider: sweeper.enabled).
//   - NodeLabelsController ("ccmkit-node-labels"): syncs the targets of the load
//     balancers whose Service selects Nodes by label when a Node's labels change, which
//     the upstream service controller does not do (package controllers/labelwatch, over
//     loadbalancer.LoadBalancer.SyncNodeLabels), as the provider's own identity,
//     <provider>-cloud-provider. On with "*"; it does not start when load balancers are
//     off (LoadBalancerCloud).
//   - TargetGroupCollector ("ccmkit-target-group-collector"): deletes the cluster's target
//     groups that no load balancer names, every cache.maxAge
//     (loadbalancer.LoadBalancer.CollectGroups); it calls only the cloud. On with "*"; it
//     does not start unless the load balancers use target groups.
//
// A controller that does not start says why in the log and the command logs it as
// skipped; nothing of it runs. Each runs in the leader only, like the upstream
// controllers.
//
// This package is the only one of ccmkit's that imports k8s.io/cloud-provider/app (and
// with it the API server's libraries): a program or test that uses provider, lbclass or
// sweeper without the command does not compile them. Such a program starts the load
// balancers' background work itself, as examples/servicecontroller does: the watch of
// Node labels with labelwatch.Run, which does not import the command either.
package controllers
