package loadbalancer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/cloudapimock"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// earlierTag is the mark of the earlier cloud-controller-manager in these tests.
const earlierTag = "old-ccm/service-uid"

// withTakeover declares earlierTag as the earlier cloud-controller-manager's mark, and a
// recorder.
func withTakeover(rec *record.FakeRecorder) func(*loadbalancer.Options) {
	return func(o *loadbalancer.Options) {
		o.Aliases.OwnerTag = earlierTag
		if rec != nil {
			o.Recorder = rec
		}
	}
}

// earlierHealthCheck is the health check the earlier cloud-controller-manager set: TCP on
// the node port.
var earlierHealthCheck = &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckTCP, Port: 31443, Interval: 15 * time.Second, Timeout: 10 * time.Second, UnhealthyThreshold: 3}

// marked makes a load balancer the earlier cloud-controller-manager's way for the Service
// with UID uid: its mark, its own health check.
func (e *env) marked(t *testing.T, uid string, tweak func(*cloudapi.LoadBalancerSpec)) cloudapi.LoadBalancer {
	t.Helper()
	return e.unowned(t, "a"+uid, func(s *cloudapi.LoadBalancerSpec) {
		s.Tags[earlierTag] = uid
		hc := *earlierHealthCheck
		s.HealthCheck = &hc
		if tweak != nil {
			tweak(s)
		}
	})
}

// TestTakeoverAdoptsTheMarkedLoadBalancer: a Service without annotations takes over the
// load balancer its mark names, with its address and health check, and creates none; the
// next sync writes nothing.
func TestTakeoverAdoptsTheMarkedLoadBalancer(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := newEnvWith(t, fake.Config{}, withTakeover(rec))
	old := e.marked(t, "uid-web", nil)
	svc := newService("web")
	before := e.cloud.Calls()
	st := e.ensure(t, svc, e.nodes)
	calls := e.cloud.Calls().Sub(before)
	assert.Zero(t, calls[cloudapi.OpCreateLoadBalancer], "no second load balancer")
	assert.EqualValues(t, 1, calls[cloudapi.OpUpdateLoadBalancer])
	lb := e.only(t)
	assert.Equal(t, old.ID, lb.ID)
	assert.Equal(t, old.Addresses, lb.Addresses)
	require.Len(t, st.Ingress, 1)
	assert.Equal(t, old.Addresses[0], st.Ingress[0].IP)
	assert.Equal(t, earlierHealthCheck, lb.Spec.HealthCheck, "the earlier owner's health check is kept")
	assert.Equal(t, "uid-web", lb.Spec.Tags[earlierTag], "the mark stays")
	assert.Equal(t, "true", lb.Spec.Tags[cloudapi.TagAdopted])
	assert.Equal(t, "uid-web", lb.Spec.Tags[cloudapi.TagService])
	assert.Equal(t, []string{"Normal AdoptedLoadBalancer Adopted load balancer " + old.ID + " (addresses [" + old.Addresses[0] + "]), marked " + earlierTag + "=uid-web by the earlier cloud-controller-manager"}, events(rec))

	e.clock.Step(time.Hour) // past the snapshot's age: the next sync reads again
	before = e.cloud.Calls()
	e.ensure(t, svc, e.nodes)
	calls = e.cloud.Calls().Sub(before)
	assert.Zero(t, calls[cloudapi.OpUpdateLoadBalancer]+calls[cloudapi.OpCreateLoadBalancer], "the second sync writes nothing")
	assert.Equal(t, earlierHealthCheck, e.only(t).Spec.HealthCheck)
}

// TestTakeoverRefusedCreatesNone: a marked load balancer that cannot be taken over
// (another cluster's, another Service's, addresses that would change, several marked)
// makes no create, and the error and a Warning event say why.
func TestTakeoverRefusedCreatesNone(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, e *env)
		svc     func() []func(*corev1.Service)
		owned   bool
		message string
	}{
		{name: "another cluster's", owned: true, message: "belongs to another cluster",
			make: func(t *testing.T, e *env) {
				e.marked(t, "uid-web", func(s *cloudapi.LoadBalancerSpec) { s.Tags[cloudapi.TagCluster] = "other" })
			}},
		{name: "another Service's", owned: true, message: "belongs to another Service or share",
			make: func(t *testing.T, e *env) {
				e.marked(t, "uid-web", func(s *cloudapi.LoadBalancerSpec) {
					s.Tags[cloudapi.TagCluster], s.Tags[cloudapi.TagService] = "c1", "uid-other"
				})
			}},
		{name: "two marked", message: "all carry the earlier cloud-controller-manager's mark",
			make: func(t *testing.T, e *env) {
				e.marked(t, "uid-web", nil)
				e.unowned(t, "second", func(s *cloudapi.LoadBalancerSpec) { s.Tags[earlierTag] = "uid-web" })
			}},
		{name: "another address asked", message: "adopting keeps its addresses",
			make: func(t *testing.T, e *env) { e.marked(t, "uid-web", nil) },
			svc: func() []func(*corev1.Service) {
				return []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationIPAddresses, "203.0.113.200")}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			e := newEnvWith(t, fake.Config{}, withTakeover(rec))
			tt.make(t, e)
			var tweaks []func(*corev1.Service)
			if tt.svc != nil {
				tweaks = tt.svc()
			}
			svc := newService("web", tweaks...)
			before := e.cloud.Calls()
			_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
			require.Error(t, err)
			assert.ErrorIs(t, err, loadbalancer.ErrTakeoverRefused)
			assert.Equal(t, tt.owned, errors.Is(err, loadbalancer.ErrOwnedElsewhere))
			assert.Contains(t, err.Error(), tt.message)
			calls := e.cloud.Calls().Sub(before)
			assert.Zero(t, calls[cloudapi.OpCreateLoadBalancer]+calls[cloudapi.OpUpdateLoadBalancer], "nothing written, no second load balancer")
			evs := events(rec)
			require.Len(t, evs, 1)
			assert.Contains(t, evs[0], "Warning "+loadbalancer.ReasonTakeoverRefused+" ")
			assert.Contains(t, evs[0], tt.message)

			// The same refusal again: the error again, no second event.
			_, err = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, e.nodes)
			assert.ErrorIs(t, err, loadbalancer.ErrTakeoverRefused)
			assert.Empty(t, events(rec))
		})
	}
}

// TestTakeoverWithoutMarkCreates: with a mark declared and none found, one list more
// than without, then the create.
func TestTakeoverWithoutMarkCreates(t *testing.T) {
	calls := map[bool]fake.Calls{}
	for _, declared := range []bool{false, true} {
		tweak := func(o *loadbalancer.Options) {}
		if declared {
			tweak = withTakeover(nil)
		}
		e := newEnvWith(t, fake.Config{}, tweak)
		e.unowned(t, "unrelated", func(s *cloudapi.LoadBalancerSpec) { s.Tags[earlierTag] = "uid-other" })
		before := e.cloud.Calls()
		e.ensure(t, newService("web"), e.nodes)
		calls[declared] = e.cloud.Calls().Sub(before)
		assert.EqualValues(t, 1, calls[declared][cloudapi.OpCreateLoadBalancer])
	}
	assert.Equal(t, calls[false][cloudapi.OpListLoadBalancers]+1, calls[true][cloudapi.OpListLoadBalancers], "one list more")
	calls[true][cloudapi.OpListLoadBalancers]--
	assert.Equal(t, calls[false], calls[true], "nothing else")
}

// TestTakeoverCallSequences pins the calls of a create: without a declared mark, the
// snapshot's list, the fresh read by owner tags and the create, as before takeovers
// existed; with one, a single list by the mark more before the create.
func TestTakeoverCallSequences(t *testing.T) {
	for _, declared := range []bool{false, true} {
		t.Run(map[bool]string{false: "no mark declared", true: "mark declared"}[declared], func(t *testing.T) {
			m := cloudapimock.NewMockLoadBalancerAPI(gomock.NewController(t))
			format, err := providerid.Default("ccmkit")
			require.NoError(t, err)
			opts := loadbalancer.Options{ClusterID: "c1", ProviderID: format}
			if declared {
				opts.Aliases.OwnerTag = earlierTag
			}
			lb, err := loadbalancer.New(m, opts)
			require.NoError(t, err)
			r := m.EXPECT()
			calls := []any{
				r.ListLoadBalancers(gomock.Any(), mockClusterListOptions("")).Return(mockPage(""), nil),
				r.ListLoadBalancers(gomock.Any(), mockListOptions("")).Return(mockPage(""), nil),
			}
			if declared {
				byMark := cloudapi.ListOptions{Tags: map[string]string{earlierTag: string(mockService().UID)}}
				calls = append(calls, r.ListLoadBalancers(gomock.Any(), byMark).Return(mockPage(""), nil))
			}
			calls = append(calls, r.CreateLoadBalancer(gomock.Any(), mockSpec()).Return(mockConverged(), nil))
			gomock.InOrder(calls...)
			st, err := lb.EnsureLoadBalancer(t.Context(), "c", mockService(), mockNodes())
			mockRequireActive(t, st, err)
		})
	}
}

// TestAdoptedHealthCheckKeptUnlessAsked: an adopted load balancer (by ID or by mark) keeps
// its health check while the Service sets no health-check annotation; the parts it sets
// change, the others stay.
func TestAdoptedHealthCheckKeptUnlessAsked(t *testing.T) {
	tests := []struct {
		name  string
		svc   []func(*corev1.Service)
		want  func(hc cloudapi.HealthCheck) cloudapi.HealthCheck
		byID  bool
		later []func(*corev1.Service) // the Service's annotations on its next sync
	}{
		{name: "by ID, none asked", byID: true, want: func(hc cloudapi.HealthCheck) cloudapi.HealthCheck { return hc }},
		{name: "by mark, the interval asked", svc: []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckInterval, "20s")},
			want: func(hc cloudapi.HealthCheck) cloudapi.HealthCheck { hc.Interval = 20 * time.Second; return hc }},
		{name: "by mark, HTTP asked", svc: []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationHealthCheckProtocol, "HTTP")},
			want: func(hc cloudapi.HealthCheck) cloudapi.HealthCheck {
				hc.Protocol, hc.Path = cloudapi.HealthCheckHTTP, "/healthz"
				return hc
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, fake.Config{}, withTakeover(nil))
			old := e.marked(t, "uid-web", nil)
			tweaks := tt.svc
			if tt.byID { // the ID names it before any mark is looked for
				tweaks = append(tweaks, withAnnotation(loadbalancer.AnnotationLoadBalancerID, old.ID))
			}
			svc := newService("web", tweaks...)
			e.ensure(t, svc, e.nodes)
			lb := e.only(t)
			require.NotNil(t, lb.Spec.HealthCheck)
			assert.Equal(t, tt.want(*earlierHealthCheck), *lb.Spec.HealthCheck)

			// Asking for a whole health check later gets it, on the load balancer kept.
			svc.Annotations[prefix+loadbalancer.AnnotationHealthCheckPort] = "10256"
			svc.Annotations[prefix+loadbalancer.AnnotationHealthCheckProtocol] = "HTTP"
			err := e.lb.UpdateLoadBalancer(t.Context(), "c", svc, e.nodes)
			require.NoError(t, err)
			lb = e.only(t)
			assert.Equal(t, old.ID, lb.ID)
			assert.Equal(t, cloudapi.HealthCheckHTTP, lb.Spec.HealthCheck.Protocol)
			assert.EqualValues(t, 10256, lb.Spec.HealthCheck.Port)
		})
	}
}

// TestAliasDefaults: a Service that spells its health check the earlier
// cloud-controller-manager's way reads that one's defaults (Aliases.Defaults), so that a
// timeout alone over ccmkit's default interval is valid; the same under ccmkit's key is
// refused, as before.
func TestAliasDefaults(t *testing.T) {
	legacy := "lb.legacy.example/"
	e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) {
		o.Aliases = loadbalancer.Aliases{Prefixes: []string{legacy},
			Keys:     []loadbalancer.Alias{{Key: legacy + "health-check-timeout", Name: loadbalancer.AnnotationHealthCheckTimeout}},
			Defaults: map[string]string{loadbalancer.AnnotationHealthCheckInterval: "15s"}}
	})
	svc := newService("web")
	svc.Annotations[legacy+"health-check-timeout"] = "15s"
	e.ensure(t, svc, e.nodes)
	hc := e.only(t).Spec.HealthCheck
	assert.Equal(t, 15*time.Second, hc.Interval, "the earlier default")
	assert.Equal(t, 15*time.Second, hc.Timeout)

	own := newService("api", withAnnotation(loadbalancer.AnnotationHealthCheckTimeout, "15s"))
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "c", own, e.nodes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than its interval 10s")

	bad := loadbalancer.Aliases{Defaults: map[string]string{loadbalancer.AnnotationHealthCheckInterval: "soon", "nothing": "x"}, OwnerTag: cloudapi.TagService}
	err = bad.Validate("", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `alias default "health-check-interval"`)
	assert.Contains(t, err.Error(), `"nothing" is not one of ccmkit's annotations`)
	assert.Contains(t, err.Error(), "owner tag")
}

// TestTakeoverRefusedCondition: a refused takeover is the Service's condition
// LoadBalancerReady, reason TakeoverRefused, with the error's message.
func TestTakeoverRefusedCondition(t *testing.T) {
	k := newKubeEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Aliases.OwnerTag = earlierTag }, newService("web"))
	k.marked(t, "uid-web", func(s *cloudapi.LoadBalancerSpec) { s.Tags[cloudapi.TagCluster] = "other" })
	_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "web"), k.nodes)
	require.ErrorIs(t, err, loadbalancer.ErrTakeoverRefused)
	ready := readiness(t, k.get(t, "web"))
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, loadbalancer.ReasonTakeoverRefused, ready.Reason)
	assert.Contains(t, ready.Message, "belongs to another cluster")
	assert.Len(t, k.cloud.Inventory().LoadBalancers, 1, "none created")
}
