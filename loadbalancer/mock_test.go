package loadbalancer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

const (
	mockUID     = "5f0c7b6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
	mockAddress = "203.0.113.10"
)

// mockService is a Service with a TCP and a UDP port.
func mockService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(mockUID)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
			},
		},
	}
}

// mockNodes are three Nodes with instances and one without a provider ID, which is no
// target.
func mockNodes() []*corev1.Node {
	node := func(name, providerID string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	return []*corev1.Node{
		node("node-c", "ccmkit://i-c"), node("node-a", "ccmkit://i-a"), node("node-new", ""), node("node-b", "ccmkit://i-b"),
	}
}

// mockOwner is the owner tag filter of mockService's load balancer.
func mockOwner() map[string]string {
	return map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: mockUID}
}

// mockSpec is the load balancer mockService asks for on mockNodes, written out by hand.
func mockSpec() cloudapi.LoadBalancerSpec {
	return cloudapi.LoadBalancerSpec{
		Name: "c1-a5f0c7b6e1d2a4c3b9e8f0a1b2c3d4e5f",
		Listeners: []cloudapi.Listener{
			{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
			{Name: "dns", Protocol: cloudapi.ProtocolUDP, Port: 53, TargetPort: 30053},
		},
		Targets: []string{"i-a", "i-b", "i-c"},
		HealthCheck: &cloudapi.HealthCheck{
			Protocol: cloudapi.HealthCheckHTTP, Port: loadbalancer.KubeProxyHealthzPort, Path: "/healthz",
			Interval: 10 * time.Second, Timeout: 5 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3,
		},
		Tags: map[string]string{
			cloudapi.TagCluster: "c1", cloudapi.TagService: mockUID, cloudapi.TagServiceName: "default/web",
		},
	}
}

// mockConverged is mockService's load balancer, active and matching mockSpec.
func mockConverged() *cloudapi.LoadBalancer {
	return &cloudapi.LoadBalancer{ID: "lb-1", Spec: mockSpec(), Addresses: []string{mockAddress}, Status: cloudapi.LoadBalancerActive}
}

// mockListOptions are the options of a list by mockService's owner tags: a fresh read.
func mockListOptions(token string) cloudapi.ListOptions {
	return cloudapi.ListOptions{Tags: mockOwner(), PageToken: token}
}

// clusterList expects the snapshot's list by the cluster tag, answered with none: the
// one EnsureLoadBalancerDeleted makes (when the snapshot is older than its maximum age)
// to find the shares' load balancers the Service may have listeners on.
func clusterList(m *cloudapimock.MockLoadBalancerAPIMockRecorder) *cloudapimock.MockLoadBalancerAPIListLoadBalancersCall {
	return m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil)
}

// mockClusterListOptions are the options of the snapshot's list by the cluster tag.
func mockClusterListOptions(token string) cloudapi.ListOptions {
	return cloudapi.ListOptions{Tags: map[string]string{cloudapi.TagCluster: "c1"}, PageToken: token}
}

func mockPage(token string, lbs ...*cloudapi.LoadBalancer) *cloudapi.LoadBalancerPage {
	p := &cloudapi.LoadBalancerPage{NextPageToken: token}
	for _, lb := range lbs {
		p.Items = append(p.Items, *lb)
	}
	return p
}

func newMockLoadBalancer(t *testing.T) (*loadbalancer.LoadBalancer, *cloudapimock.MockLoadBalancerAPI) {
	t.Helper()
	m := cloudapimock.NewMockLoadBalancerAPI(gomock.NewController(t))
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	lb, err := loadbalancer.New(m, loadbalancer.Options{ClusterID: "c1", ProviderID: format})
	require.NoError(t, err)
	return lb, m
}

// mockRequireActive checks the status of mockConverged.
func mockRequireActive(t *testing.T, st *corev1.LoadBalancerStatus, err error) {
	t.Helper()
	require.NoError(t, err)
	require.Len(t, st.Ingress, 1)
	assert.Equal(t, mockAddress, st.Ingress[0].IP)
	require.NotNil(t, st.Ingress[0].IPMode)
	assert.Equal(t, corev1.LoadBalancerIPModeVIP, *st.Ingress[0].IPMode)
}

// TestEnsureCallSequences pins the exact cloud calls of EnsureLoadBalancer: the mock fails
// the test on any call it does not expect, and on an expected call that is not made. Each
// case has a new LoadBalancer, so its first call lists the snapshot by the cluster tag;
// anything but a converged, active load balancer is then read afresh by owner tags.
func TestEnsureCallSequences(t *testing.T) {
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpCreateLoadBalancer, "", context.DeadlineExceeded)
	conflict := cloudapi.NewError(cloudapi.ErrConflict, cloudapi.OpCreateLoadBalancer, "", errors.New("name taken"))
	// foreign carries another Service's tags, and a backend that ignores the filter returns it.
	foreign := mockConverged()
	foreign.ID = "lb-0"
	foreign.Spec.Name = "someone-else"
	foreign.Spec.Tags = map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "another-uid"}

	// stale is mockService's load balancer as a snapshot taken before node i-c came.
	stale := mockConverged()
	stale.Spec.Targets = []string{"i-a", "i-b"}
	// moved is the same load balancer after someone removed i-b behind ccmkit's back.
	moved := mockConverged()
	moved.Spec.Targets = []string{"i-a"}
	provisioning := mockConverged()
	provisioning.Status, provisioning.Addresses = cloudapi.LoadBalancerProvisioning, nil
	// otherCluster carries mockService's UID but another cluster's tag; a backend that
	// ignores the cluster filter returns it.
	otherCluster := mockConverged()
	otherCluster.ID = "lb-9"
	otherCluster.Spec.Tags = map[string]string{cloudapi.TagCluster: "c2", cloudapi.TagService: mockUID}

	tests := []struct {
		name   string
		expect func(m *cloudapimock.MockLoadBalancerAPIMockRecorder)
		check  func(t *testing.T, st *corev1.LoadBalancerStatus, err error)
	}{
		{
			name: "converged: the snapshot's list by the cluster tag and nothing else",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", mockConverged()), nil)
			},
			check: mockRequireActive,
		},
		{
			name: "first ensure: absent from the snapshot, a list by owner tags confirms, one create with the desired spec",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					m.CreateLoadBalancer(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
						assert.Equal(t, mockSpec(), spec)
						return &cloudapi.LoadBalancer{ID: "lb-1", Spec: spec, Status: cloudapi.LoadBalancerProvisioning}, nil
					}),
				)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				var retry *api.RetryError
				require.ErrorAs(t, err, &retry, "a provisioning load balancer is a retry")
				assert.Equal(t, loadbalancer.ProvisioningRetryDelay, retry.RetryAfter())
			},
		},
		{
			name: "absent from the snapshot but found by owner tags: adopted, no create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "lost create answer: list again and adopt, no second create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					m.CreateLoadBalancer(gomock.Any(), gomock.Cond(func(spec cloudapi.LoadBalancerSpec) bool {
						return spec.Name == mockSpec().Name && cloudapi.MatchTags(spec.Tags, mockOwner())
					})).Return(nil, transient),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "conflicting create: list again and adopt, no second create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					m.CreateLoadBalancer(gomock.Any(), gomock.Any()).Return(nil, conflict),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "lost create answer, and the list finds nothing: an error, no second create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					m.CreateLoadBalancer(gomock.Any(), gomock.Any()).Return(nil, transient),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
				)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, cloudapi.ErrTransient)
			},
		},
		{
			name: "the snapshot's page token is followed",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("page-2"), nil),
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("page-2")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "the owner list's page token is followed",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("page-2"), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("page-2")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "a stale snapshot: the update's changes come from a fresh read, not from the snapshot",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", stale), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", moved), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", gomock.Any()).DoAndReturn(func(_ context.Context, _ string, u cloudapi.LoadBalancerUpdate) (*cloudapi.LoadBalancer, error) {
						assert.Equal(t, mockSpec(), u.Spec)
						assert.Equal(t, cloudapi.LoadBalancerChanges{AddTargets: []string{"i-b", "i-c"}}, u.Changes, "i-b, removed behind ccmkit's back, is added back")
						return mockConverged(), nil
					}),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "provisioning in the snapshot: read afresh",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", provisioning), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "the snapshot cannot be listed: read afresh, a cloud error is no absence",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListLoadBalancers, "", nil)),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "a backend that ignores the filter: the other owner's load balancer is not touched",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", foreign), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", foreign), nil),
					m.CreateLoadBalancer(gomock.Any(), mockSpec()).Return(mockConverged(), nil),
				)
			},
			check: mockRequireActive,
		},
		{
			name: "a backend that ignores the cluster filter: another cluster's load balancer is not in the snapshot",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", otherCluster), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					m.CreateLoadBalancer(gomock.Any(), mockSpec()).Return(mockConverged(), nil),
				)
			},
			check: mockRequireActive,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			tt.expect(m.EXPECT())
			st, err := lb.EnsureLoadBalancer(ctx, "c", mockService(), mockNodes())
			tt.check(t, st, err)
		})
	}
}

// TestUpdateCallSequences pins the exact cloud calls of UpdateLoadBalancer. Every write is
// based on a read begun after the node set arrived: the list of the cluster's load
// balancers when it began after that (and after the Service's last write or failed call),
// else the Service's own list by owner tags.
func TestUpdateCallSequences(t *testing.T) {
	stale := mockConverged()
	stale.Spec.Targets = []string{"i-a", "i-b"}
	changedBehind := mockConverged()
	changedBehind.Spec.Targets = []string{"i-a"}
	addC := cloudapi.LoadBalancerUpdate{Spec: mockSpec(), Changes: cloudapi.LoadBalancerChanges{AddTargets: []string{"i-c"}}, Current: stale}
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListLoadBalancers, "", nil)
	tests := []struct {
		name string
		// prior, when set, is an UpdateLoadBalancer with the node set before the change,
		// made first.
		prior bool
		// calls is how many times UpdateLoadBalancer is called with the new node set.
		calls  int
		expect func(m *cloudapimock.MockLoadBalancerAPIMockRecorder)
		check  func(t *testing.T, errs []error)
	}{
		{
			name:  "unchanged nodes: the snapshot's list and nothing else",
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", mockConverged()), nil)
			},
			check: func(t *testing.T, errs []error) { require.NoError(t, errs[0]) },
		},
		{
			name:  "a new node: the list begun after the node set arrived is the base of the one update",
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", stale), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", addC).Return(mockConverged(), nil),
				)
			},
			check: func(t *testing.T, errs []error) { require.NoError(t, errs[0]) },
		},
		{
			name:  "a new node after a list begun before it: a new list, begun after it, is the base",
			prior: true,
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", stale), nil),
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", changedBehind), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", cloudapi.LoadBalancerUpdate{Spec: mockSpec(), Changes: cloudapi.LoadBalancerChanges{AddTargets: []string{"i-b", "i-c"}}, Current: changedBehind}).Return(mockConverged(), nil),
				)
			},
			check: func(t *testing.T, errs []error) { require.NoError(t, errs[0]) },
		},
		{
			name:  "gone behind ccmkit's back: absent from the list, a read by owner tags confirms, an error and no create",
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
				)
			},
			check: func(t *testing.T, errs []error) { require.ErrorIs(t, errs[0], cloudapi.ErrNotFound) },
		},
		{
			name:  "the list fails: the read by owner tags is the base, and the list waits for its backoff",
			calls: 2,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(nil, transient),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", stale), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", addC).Return(mockConverged(), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
				)
			},
			check: func(t *testing.T, errs []error) {
				require.NoError(t, errs[0])
				require.NoError(t, errs[1])
			},
		},
		{
			name:  "a failed update distrusts the list: the next write is based on a read by owner tags",
			calls: 2,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", stale), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", addC).Return(nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpUpdateLoadBalancer, "lb-1", nil)),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", stale), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", addC).Return(mockConverged(), nil),
				)
			},
			check: func(t *testing.T, errs []error) {
				require.ErrorIs(t, errs[0], cloudapi.ErrTransient)
				require.NoError(t, errs[1])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			tt.expect(m.EXPECT())
			if tt.prior {
				require.NoError(t, lb.UpdateLoadBalancer(ctx, "c", mockService(), mockNodes()[1:]), "the node set before the change")
			}
			nodes := mockNodes()
			errs := make([]error, tt.calls)
			for i := range errs {
				errs[i] = lb.UpdateLoadBalancer(ctx, "c", mockService(), nodes)
			}
			tt.check(t, errs)
		})
	}
}

// TestEnsureDeletedCallSequences pins the exact cloud calls of EnsureLoadBalancerDeleted.
func TestEnsureDeletedCallSequences(t *testing.T) {
	tests := []struct {
		name   string
		expect func(m *cloudapimock.MockLoadBalancerAPIMockRecorder)
	}{
		{
			name: "nothing found: one list, no delete",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					clusterList(m), // the shares the Service may have listeners on
				)
			},
		},
		{
			name: "found on the second page: two lists, one delete",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("page-2"), nil),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("page-2")).Return(mockPage("", mockConverged()), nil),
					m.DeleteLoadBalancer(gomock.Any(), "lb-1").Return(nil),
					clusterList(m),
				)
			},
		},
		{
			name: "already gone when deleted: fine",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
					m.DeleteLoadBalancer(gomock.Any(), "lb-1").Return(cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpDeleteLoadBalancer, "lb-1", nil)),
					clusterList(m),
				)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			tt.expect(m.EXPECT())
			require.NoError(t, lb.EnsureLoadBalancerDeleted(ctx, "c", mockService()))
		})
	}
}
