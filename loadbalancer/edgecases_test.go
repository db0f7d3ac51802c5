package loadbalancer_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2/ktesting"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// TestUpdateLoadBalancerMovesTargetsDespiteMalformedAnnotation: the node sync must keep the
// targets in line with the nodes even when an unrelated annotation of the Service is
// malformed; otherwise removed nodes stay targets and new nodes never get traffic until
// the user fixes the annotation.
func TestUpdateLoadBalancerMovesTargetsDespiteMalformedAnnotation(t *testing.T) {
	e := newEnv(t, fake.Config{})
	e.ensure(t, newService("web"), e.nodes)
	require.Len(t, e.only(t).Spec.Targets, len(e.nodes))

	typo := newService("web", withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "ten seconds"))
	err := e.lb.UpdateLoadBalancer(t.Context(), "c", typo, e.nodes[:2])
	t.Logf("UpdateLoadBalancer: %v", err)
	assert.Equal(t, []string{"i-0", "i-1"}, e.only(t).Spec.Targets, "the node set is applied to the targets")
}

// TestErrorStatusIsNotAFixedRetry: a load balancer the cloud failed to build is not "still
// provisioning"; api.RetryError makes the service controller poll it every
// ProvisioningRetryDelay forever instead of backing off.
func TestErrorStatusIsNotAFixedRetry(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lb, m := newMockLoadBalancer(t)
	broken := mockConverged()
	broken.Status = cloudapi.LoadBalancerError
	gomock.InOrder(
		m.EXPECT().ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", broken), nil),
		m.EXPECT().ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", broken), nil), // not trusted: read afresh
	)
	_, err := lb.EnsureLoadBalancer(ctx, "c", mockService(), mockNodes())
	require.Error(t, err)
	var retry *api.RetryError
	assert.NotErrorAs(t, err, &retry, "a load balancer in error is a plain error (exponential back-off), not a fixed-delay retry")
}

// TestDuplicateKeepsThePublishedAddress: when a backend made two load balancers for one
// Service, the one whose address the Service's status already publishes must stay; IDs
// need not grow with age, so "lowest ID" is not "oldest".
func TestDuplicateKeepsThePublishedAddress(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lb, m := newMockLoadBalancer(t)
	low := mockConverged()
	low.ID, low.Addresses = "lb-0a", []string{"203.0.113.99"}
	published := mockConverged()
	published.ID = "lb-ff"
	svc := mockService()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: mockAddress}}

	// The delete follows a fresh read; an unexpected delete of lb-ff fails the test.
	gomock.InOrder(
		m.EXPECT().ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", low, published), nil),
		m.EXPECT().ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage("", low, published), nil),
		m.EXPECT().DeleteLoadBalancer(gomock.Any(), "lb-0a").Return(nil),
	)
	st, err := lb.EnsureLoadBalancer(ctx, "c", svc, mockNodes())
	mockRequireActive(t, st, err)
}

// TestLoadBalancerIPIsCanonical: spec.loadBalancerIP is accepted by the API server in
// non-canonical form (upper case, leading zeros in IPv6 groups). A cloud that stores the
// canonical form then differs from the desired spec on every sync, and every
// EnsureLoadBalancer and node sync writes.
func TestLoadBalancerIPIsCanonical(t *testing.T) {
	stored := mockConverged()
	stored.Addresses = []string{"2001:db8::a"}
	stored.Spec.IPFamilies = []cloudapi.IPFamily{cloudapi.IPv6}
	stored.Spec.RequestedIPs = []string{"2001:db8::a"}
	tests := []struct {
		name        string
		annotations map[string]string
	}{
		{name: "spec.loadBalancerIP alone: no write on a converged load balancer"},
		{
			name:        "the same address in the annotation, spelled differently: no contradiction",
			annotations: map[string]string{loadbalancer.DefaultAnnotationPrefix + loadbalancer.AnnotationIPAddresses: "2001:db8::a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lb, m := newMockLoadBalancer(t)
			svc := mockService()
			svc.Annotations = tt.annotations
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			svc.Spec.LoadBalancerIP = "2001:DB8:0::A"
			m.EXPECT().ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage("", stored), nil)
			// No UpdateLoadBalancer is expected: the mock fails the test on one.
			_, err := lb.EnsureLoadBalancer(ctx, "c", svc, mockNodes())
			require.NoError(t, err)
		})
	}
}

// TestDefaultNameIsADNSLabel: the default name must be a valid name for every accepted
// cluster ID; a cluster ID without letters or digits gives a name starting with '-'.
func TestDefaultNameIsADNSLabel(t *testing.T) {
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	label := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	for _, cluster := range []string{"c1", "Prod_EU.1", "_"} {
		t.Run(cluster, func(t *testing.T) {
			m := cloudapimock.NewMockLoadBalancerAPI(gomock.NewController(t))
			lb, err := loadbalancer.New(m, loadbalancer.Options{ClusterID: cluster, ProviderID: format})
			if err != nil {
				return // refusing the cluster ID is a fine answer too
			}
			name := lb.GetLoadBalancerName(t.Context(), "c", mockService())
			assert.Regexp(t, label, name)
		})
	}
}

// TestShortIntervalAloneIsAccepted: an interval within its documented range (1s to 5m),
// with no timeout annotation, must not be refused because the default timeout (5s) is
// longer; the default timeout should shrink to the interval.
func TestShortIntervalAloneIsAccepted(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web", withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "3s"))
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
	require.NoError(t, err)
	hc := e.only(t).Spec.HealthCheck
	require.NotNil(t, hc)
	assert.LessOrEqual(t, hc.Timeout, hc.Interval)
}

// A value a user typed is quoted into the error (which the service controller logs and
// records as an event on every retry), the events and the log lines only in part: a 10 KB
// annotation value must not make 10 KB lines.
func TestLongValuesAreCutInErrorsEventsAndLogs(t *testing.T) {
	long := strings.Repeat("x", 10240)
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withSettings(nil, rec))
	lbIP := func(s *corev1.Service) { s.Spec.LoadBalancerIP = long } //nolint:staticcheck // the deprecated field is still honoured
	for _, tc := range []struct {
		name, key, value string
		tweak            func(*corev1.Service)
	}{
		{"ip-addresses", loadbalancer.AnnotationIPAddresses, long, nil},
		{"tls-ports", loadbalancer.AnnotationTLSPorts, long + "!", nil},
		{"tls-certificates", loadbalancer.AnnotationTLSCertificates, "a,a" + long + ",a" + long, nil},
		{"node-selector (the parser's error quotes it too)", loadbalancer.AnnotationNodeSelector, "a=" + long, nil},
		{"hostname", loadbalancer.AnnotationHostname, long, nil},
		{"health-check-path", loadbalancer.AnnotationHealthCheckPath, "/a b" + long, nil},
		{"an adapter's setting", "size", long, nil},
		{"spec.loadBalancerIP", "size", "small", lbIP},
		{"an unknown annotation (an event, no error)", long, "x", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			svc := newService("web", withAnnotation(tc.key, tc.value))
			if tc.tweak != nil {
				tc.tweak(svc)
			}
			_, err := e.lb.EnsureLoadBalancer(ctx, "c", svc, e.nodes)
			if len(tc.key) < len(long) {
				require.Error(t, err)
				assert.Less(t, len(err.Error()), 1024, "bounded")
				assert.Contains(t, err.Error(), `"… (10`, "says it was cut, and how long the value was")
			}
			for _, ev := range events(rec) {
				assert.Less(t, len(ev), 1024, "event bounded")
				assert.Contains(t, ev, "… (10", "says it was cut")
			}
			for _, line := range strings.Split(buf.String(), "\n") {
				assert.Less(t, len(line), 2048, "log line bounded")
			}
		})
	}
}
