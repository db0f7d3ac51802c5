package loadbalancer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// mockFree is a load balancer an operator made by hand: no ownership tags, a listener of
// its own, an address, another team's tag.
func mockFree() *cloudapi.LoadBalancer {
	return &cloudapi.LoadBalancer{
		ID: "lb-7",
		Spec: cloudapi.LoadBalancerSpec{
			Name:      "operators",
			Listeners: []cloudapi.Listener{{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 31443}},
			Tags:      map[string]string{"billing": "team-a"},
		},
		Addresses: []string{mockAddress},
		Status:    cloudapi.LoadBalancerActive,
	}
}

// mockAdopting is mockService naming mockFree by ID.
func mockAdopting() *corev1.Service {
	svc := mockService()
	svc.Annotations = map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationLoadBalancerID: "lb-7"}
	return svc
}

// mockAdoptedSpec is what mockAdopting makes of mockFree: mockSpec, with the other team's
// tag kept and marked adopted (mockFree has no health check: it gets ccmkit's).
func mockAdoptedSpec() cloudapi.LoadBalancerSpec {
	spec := mockSpec()
	spec.Tags["billing"] = "team-a"
	spec.Tags[cloudapi.TagAdopted] = "true"
	return spec
}

// mockReleasedSpec is mockSpec released: no ownership tags, no targets.
func mockReleasedSpec() cloudapi.LoadBalancerSpec {
	spec := mockSpec()
	spec.Tags = map[string]string{}
	spec.Targets = nil
	return spec
}

// TestAdoptCallSequences pins the exact cloud calls of an adoption: the snapshot's list,
// the fresh read by owner tags, one GetLoadBalancer of the named ID, and one update whose
// Changes are computed from that read; or nothing after the read when it is refused.
func TestAdoptCallSequences(t *testing.T) {
	notFound := cloudapi.NewError(cloudapi.ErrNotFound, cloudapi.OpGetLoadBalancer, "lb-7", nil)
	transient := cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpGetLoadBalancer, "lb-7", context.DeadlineExceeded)
	otherService := mockFree()
	otherService.Spec.Tags = map[string]string{cloudapi.TagCluster: "c1", cloudapi.TagService: "another-uid", "billing": "team-a"}
	deleting := mockFree()
	deleting.Status = cloudapi.LoadBalancerDeleting

	begin := func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) []any {
		return []any{
			m.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
			m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
		}
	}
	tests := []struct {
		name   string
		expect func(m *cloudapimock.MockLoadBalancerAPIMockRecorder)
		check  func(t *testing.T, st *corev1.LoadBalancerStatus, err error)
	}{
		{
			name: "free: one read of the ID, one update to the Service's spec, the address kept",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m),
					m.GetLoadBalancer(gomock.Any(), "lb-7").Return(mockFree(), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-7", cloudapi.LoadBalancerUpdate{
						Spec: mockAdoptedSpec(),
						Changes: cloudapi.LoadBalancerChanges{
							Name:            true,
							AddListeners:    mockSpec().Listeners,
							RemoveListeners: []cloudapi.ListenerKey{{Protocol: cloudapi.ProtocolTCP, Port: 443}},
							AddTargets:      []string{"i-a", "i-b", "i-c"},
							HealthCheck:     true,
							Tags:            true,
						},
						Current: mockFree(),
					}).Return(&cloudapi.LoadBalancer{ID: "lb-7", Spec: mockAdoptedSpec(), Addresses: []string{mockAddress}, Status: cloudapi.LoadBalancerActive}, nil),
				)...)
			},
			check: mockRequireActive,
		},
		{
			name: "already the Service's (the list missed it): no adoption, only what differs",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				own := mockConverged()
				own.ID = "lb-7"
				gomock.InOrder(append(begin(m),
					m.GetLoadBalancer(gomock.Any(), "lb-7").Return(own, nil),
				)...)
			},
			check: mockRequireActive,
		},
		{
			name: "another Service's: refused after the read",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(otherService, nil))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, loadbalancer.ErrOwnedElsewhere)
			},
		},
		{
			name: "being deleted: refused after the read",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(deleting, nil))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorContains(t, err, "which the cloud is deleting")
			},
		},
		{
			name: "an address that is no IP address: refused after the read, nothing written",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				odd := mockFree()
				odd.Addresses = []string{"lb-7.example.com"}
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(odd, nil))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorContains(t, err, `has the address "lb-7.example.com", which is not an IP address`)
			},
		},
		{
			name: "not found: an error, and no create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(nil, notFound))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, cloudapi.ErrNotFound)
				assert.ErrorContains(t, err, "which does not exist")
			},
		},
		{
			name: "the read fails: an error that says nothing about existence, and no create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(nil, transient))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, cloudapi.ErrTransient)
				assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
				assert.NotContains(t, err.Error(), "does not exist")
			},
		},
		{
			name: "neither a load balancer nor an error: transient, and no create",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m), m.GetLoadBalancer(gomock.Any(), "lb-7").Return(nil, nil))...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, cloudapi.ErrTransient)
			},
		},
		{
			name: "the adoption's answer is lost: an error; the next sync's read by owner tags decides",
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(append(begin(m),
					m.GetLoadBalancer(gomock.Any(), "lb-7").Return(mockFree(), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-7", gomock.Any()).Return(nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpUpdateLoadBalancer, "lb-7", nil)),
				)...)
			},
			check: func(t *testing.T, _ *corev1.LoadBalancerStatus, err error) {
				require.ErrorIs(t, err, cloudapi.ErrTransient)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			tt.expect(m.EXPECT())
			st, err := lb.EnsureLoadBalancer(ctx, "c", mockAdopting(), mockNodes())
			tt.check(t, st, err)
		})
	}
}

// TestKeepOnDeleteCallSequences pins the exact cloud calls of EnsureLoadBalancerDeleted
// with keep-on-delete: one list by owner tags, then one update that removes the ownership
// tags and the targets, based on that list; never a delete of the kept load balancer.
func TestKeepOnDeleteCallSequences(t *testing.T) {
	released := cloudapi.LoadBalancerUpdate{
		Spec:    mockReleasedSpec(),
		Changes: cloudapi.LoadBalancerChanges{RemoveTargets: []string{"i-a", "i-b", "i-c"}, Tags: true},
		Current: mockConverged(),
	}
	low := mockConverged()
	low.ID, low.Addresses = "lb-0a", []string{"203.0.113.99"}
	tests := []struct {
		name   string
		calls  int // calls of EnsureLoadBalancerDeleted
		expect func(m *cloudapimock.MockLoadBalancerAPIMockRecorder)
		check  func(t *testing.T, errs []error)
	}{
		{
			name:  "one update, no delete",
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", released).Return(&cloudapi.LoadBalancer{ID: "lb-1", Spec: mockReleasedSpec(), Addresses: []string{mockAddress}}, nil),
					clusterList(m), // the shares the Service may have listeners on
				)
			},
			check: func(t *testing.T, errs []error) { require.NoError(t, errs[0]) },
		},
		{
			name:  "the release's answer is lost: the retry finds nothing of the Service's and is done",
			calls: 2,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", released).Return(nil, cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpUpdateLoadBalancer, "lb-1", nil)),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
					clusterList(m),
				)
			},
			check: func(t *testing.T, errs []error) {
				require.ErrorIs(t, errs[0], cloudapi.ErrTransient)
				require.NoError(t, errs[1])
			},
		},
		{
			name:  "the release failed: the retry releases from a fresh read",
			calls: 2,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", released).Return(nil, cloudapi.Throttled(cloudapi.OpUpdateLoadBalancer, 0, nil)),
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", mockConverged()), nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", released).Return(&cloudapi.LoadBalancer{ID: "lb-1", Spec: mockReleasedSpec(), Addresses: []string{mockAddress}}, nil),
					clusterList(m), // the shares the Service may have listeners on
				)
			},
			check: func(t *testing.T, errs []error) {
				require.ErrorIs(t, errs[0], cloudapi.ErrThrottled)
				require.NoError(t, errs[1])
			},
		},
		{
			name:  "duplicates: the unpublished one is deleted, the published one kept",
			calls: 1,
			expect: func(m *cloudapimock.MockLoadBalancerAPIMockRecorder) {
				gomock.InOrder(
					m.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", low, mockConverged()), nil),
					m.DeleteLoadBalancer(gomock.Any(), "lb-0a").Return(nil),
					m.UpdateLoadBalancer(gomock.Any(), "lb-1", released).Return(&cloudapi.LoadBalancer{ID: "lb-1", Spec: mockReleasedSpec(), Addresses: []string{mockAddress}}, nil),
					clusterList(m), // the shares the Service may have listeners on
				)
			},
			check: func(t *testing.T, errs []error) { require.NoError(t, errs[0]) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			tt.expect(m.EXPECT())
			svc := mockService()
			svc.Annotations = map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationKeepOnDelete: "true"}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: mockAddress}}
			var errs []error
			for range tt.calls {
				errs = append(errs, lb.EnsureLoadBalancerDeleted(ctx, "c", svc))
			}
			tt.check(t, errs)
		})
	}
}
