package lbclass

import cloudprovider "k8s.io/cloud-provider"

const (
	// ControllerName is the class controller's name among the cloud-controller-manager's
	// controllers: what --controllers enables or disables ("*" includes it;
	// "-service-lb-class-controller" leaves it out), and its event source.
	ControllerName = "service-lb-class-controller"
	// ClientName is the identity the class controller calls the API server as: the
	// upstream service controller's, because it needs exactly that controller's
	// permissions (patch services/status for the finalizer and the status; events).
	// With --use-service-account-credentials it is the ServiceAccount
	// kube-system/service-controller, which deploy/ and the Helm chart already bind.
	ClientName = "service-controller"
)

// Cloud is a cloud provider that serves a load balancer class. ccmkit's provider
// (*provider.Cloud) is one: its class is the cloud config's loadBalancer.class.
type Cloud interface {
	// LoadBalancerClass returns the load balancer class the provider serves and the
	// LoadBalancer that serves Services of that class; ok is false when it serves none.
	LoadBalancerClass() (class string, lb cloudprovider.LoadBalancer, ok bool)
}
