package providertest

import (
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
)

// ClientBuilder is a cloudprovider.ControllerClientBuilder for tests: it hands out Kube
// under every name, as the cloud-controller-manager hands out one client per identity
// (to the provider's Initialize, to a controller's InitFunc), and records the names asked
// for (Asked), so that a test can check which identity a controller uses.
type ClientBuilder struct {
	// Kube is the clientset handed out, usually a fake one.
	Kube kubernetes.Interface

	mu    sync.Mutex
	asked []string
}

var _ cloudprovider.ControllerClientBuilder = (*ClientBuilder)(nil)

// Config returns an empty rest.Config: nothing here dials a server.
func (b *ClientBuilder) Config(string) (*rest.Config, error) { return &rest.Config{}, nil }

// ConfigOrDie returns an empty rest.Config.
func (b *ClientBuilder) ConfigOrDie(string) *rest.Config { return &rest.Config{} }

// Client records name and returns Kube.
func (b *ClientBuilder) Client(name string) (kubernetes.Interface, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, name)
	return b.Kube, nil
}

// ClientOrDie records name and returns Kube.
func (b *ClientBuilder) ClientOrDie(name string) kubernetes.Interface {
	kube, _ := b.Client(name)
	return kube
}

// Asked returns the names Client and ClientOrDie were asked for, in order.
func (b *ClientBuilder) Asked() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.asked...)
}
