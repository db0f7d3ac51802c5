package cloudapimock

import "go.uber.org/mock/gomock"

// Cloud is a mock cloud with every capability: Client answers Instances, LoadBalancers
// and Routes with the mocks beside it, any number of times. The three APIs have no
// expectations, so any call of theirs that a test did not expect fails it.
type Cloud struct {
	Client        *MockClient
	Instances     *MockInstanceAPI
	LoadBalancers *MockLoadBalancerAPI
	Routes        *MockRouteAPI
}

// NewCloud returns a Cloud whose mocks report to ctrl.
func NewCloud(ctrl *gomock.Controller) *Cloud {
	c := &Cloud{
		Client:        NewMockClient(ctrl),
		Instances:     NewMockInstanceAPI(ctrl),
		LoadBalancers: NewMockLoadBalancerAPI(ctrl),
		Routes:        NewMockRouteAPI(ctrl),
	}
	c.Client.EXPECT().Instances().Return(c.Instances).AnyTimes()
	c.Client.EXPECT().LoadBalancers().Return(c.LoadBalancers, true).AnyTimes()
	c.Client.EXPECT().Routes().Return(c.Routes, true).AnyTimes()
	return c
}
