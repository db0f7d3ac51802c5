package loadbalancer_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/throttlenote"
	"github.com/ccmkit/ccmkit/loadbalancer"
	"github.com/ccmkit/ccmkit/providerid"
)

// kubeEnv is an env whose LoadBalancer writes on Services through a fake clientset, over
// a cloud whose load balancer calls answer the errors of script.
type kubeEnv struct {
	*env
	kube     *kubefake.Clientset
	recorder *record.FakeRecorder
	script   *script
}

// script makes the cloud's load balancer calls fail or note a throttle hold.
type script struct {
	list, create error // the next ListLoadBalancers, CreateLoadBalancer answer this
	holdOnList   bool  // ListLoadBalancers records a throttle hold, as internal/cloudclient does
}

type scriptedClient struct {
	cloudapi.Client
	s *script
}

func (c scriptedClient) LoadBalancers() (cloudapi.LoadBalancerAPI, bool) {
	api, ok := c.Client.LoadBalancers()
	return scriptedLBs{api, c.s}, ok
}

type scriptedLBs struct {
	cloudapi.LoadBalancerAPI
	s *script
}

func (a scriptedLBs) ListLoadBalancers(ctx context.Context, opts cloudapi.ListOptions) (*cloudapi.LoadBalancerPage, error) {
	if a.s.list != nil {
		return nil, a.s.list
	}
	if a.s.holdOnList {
		throttlenote.Record(ctx)
	}
	return a.LoadBalancerAPI.ListLoadBalancers(ctx, opts)
}

func (a scriptedLBs) CreateLoadBalancer(ctx context.Context, spec cloudapi.LoadBalancerSpec) (*cloudapi.LoadBalancer, error) {
	if a.s.create != nil {
		return nil, a.s.create
	}
	return a.LoadBalancerAPI.CreateLoadBalancer(ctx, spec)
}

func newKubeEnv(t *testing.T, cfg fake.Config, services ...*corev1.Service) *kubeEnv {
	t.Helper()
	return newKubeEnvWith(t, cfg, nil, services...)
}

// newKubeEnvWith is newKubeEnv with the LoadBalancer's options changed by tweak (nil:
// none) after the clientset's and the recorder's are set.
func newKubeEnvWith(t *testing.T, cfg fake.Config, tweak func(*loadbalancer.Options), services ...*corev1.Service) *kubeEnv {
	t.Helper()
	objs := make([]runtime.Object, 0, len(services))
	for _, s := range services {
		s.ResourceVersion = "0"
		objs = append(objs, s)
	}
	k := &kubeEnv{kube: kubefake.NewClientset(objs...), recorder: record.NewFakeRecorder(100), script: &script{}}
	versioned(k.kube)
	k.env = newEnvWith(t, cfg, func(o *loadbalancer.Options) {
		o.Services = k.kube.CoreV1()
		o.Recorder = k.recorder
		if tweak != nil {
			tweak(o)
		}
	}, func(c cloudapi.Client) cloudapi.Client { return scriptedClient{c, k.script} })
	return k
}

// versioned makes the clientset give every Service written a new resourceVersion, as the
// API server does (its tracker gives none).
func versioned(kube *kubefake.Clientset) {
	var version int
	react := k8stesting.ObjectReaction(kube.Tracker())
	kube.PrependReactor("*", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create", "update", "patch":
		default:
			return false, nil, nil
		}
		handled, obj, err := react(a)
		if err != nil || !handled {
			return handled, obj, err
		}
		svc := obj.(*corev1.Service).DeepCopy()
		version++
		svc.ResourceVersion = strconv.Itoa(version)
		return true, svc, kube.Tracker().Update(a.GetResource(), svc, svc.Namespace)
	})
}

// get returns the Service as the API server has it.
func (k *kubeEnv) get(t *testing.T, name string) *corev1.Service {
	t.Helper()
	svc, err := k.kube.CoreV1().Services("default").Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return svc
}

// writes returns the Kubernetes API writes since the last call, as "verb resource[/sub]".
func (k *kubeEnv) writes() []string {
	var out []string
	for _, a := range k.kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		w := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		out = append(out, w)
	}
	k.kube.ClearActions()
	return out
}

// readiness returns the Service's condition ConditionLoadBalancerReady.
func readiness(t *testing.T, svc *corev1.Service) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady)
	require.NotNil(t, c, "the Service has no condition %s", loadbalancer.ConditionLoadBalancerReady)
	return *c
}

const (
	patchService = "patch services"
	patchStatus  = "patch services/status"
)

// TestTheServiceSaysWhatHappened follows one Service through its life and counts the
// Kubernetes API writes of each sync: only a change is written.
func TestTheServiceSaysWhatHappened(t *testing.T) {
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Someone", LastTransitionTime: metav1.NewTime(t0.Local())} // as decoded
	k := newKubeEnv(t, fake.Config{}, newService("web", func(s *corev1.Service) {
		s.Generation = 3
		s.Status.Conditions = []metav1.Condition{other}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	}))
	first := k.get(t, "web")
	k.writes()

	k.ensure(t, first, k.nodes)
	assert.Equal(t, []string{patchService, patchStatus}, k.writes(), "the first sync writes the annotation and the condition")
	svc := k.get(t, "web")
	id := k.only(t).ID
	assert.Equal(t, id, svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID])
	ready := readiness(t, svc)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, loadbalancer.ReasonProvisioned, ready.Reason)
	assert.Equal(t, "Load balancer "+id+" is ready", ready.Message)
	assert.Equal(t, int64(3), ready.ObservedGeneration)
	assert.True(t, ready.LastTransitionTime.Time.Equal(t0), "%s", ready.LastTransitionTime)
	assert.Contains(t, svc.Status.Conditions, other, "another condition is kept")
	assert.Equal(t, "192.0.2.1", svc.Status.LoadBalancer.Ingress[0].IP, "status.loadBalancer is the service controller's")

	k.clock.Step(time.Minute)
	k.ensure(t, svc, k.nodes)
	assert.Empty(t, k.writes(), "converged")
	k.ensure(t, first, k.nodes)
	assert.Empty(t, k.writes(), "converged, though the Service handed in is from before the writes")
	require.NoError(t, k.lb.UpdateLoadBalancer(t.Context(), "c", svc, k.nodes))
	assert.Empty(t, k.writes(), "a node sync of a converged Service")

	// Someone sets ccmkit's annotation: corrected, never read.
	svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID] = "lb-not-this-one"
	svc, err := k.kube.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	k.writes()
	k.ensure(t, svc, k.nodes)
	assert.Equal(t, []string{patchService}, k.writes())
	svc = k.get(t, "web")
	assert.Equal(t, id, svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID])
	assert.Equal(t, id, k.only(t).ID)

	// An error: the condition changes once, its lastTransitionTime with it.
	svc.Annotations[prefix+loadbalancer.AnnotationInternal] = "maybe"
	svc, err = k.kube.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	k.writes()
	changed := t0.Add(time.Minute)
	for range 2 {
		_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", svc, k.nodes)
		var annotationErr *loadbalancer.AnnotationError
		require.ErrorAs(t, err, &annotationErr)
	}
	assert.Equal(t, []string{patchStatus}, k.writes(), "the same error twice is written once")
	svc = k.get(t, "web")
	ready = readiness(t, svc)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, loadbalancer.ReasonAnnotationError, ready.Reason)
	assert.Contains(t, ready.Message, `"maybe"`)
	assert.True(t, ready.LastTransitionTime.Time.Equal(changed), "%s", ready.LastTransitionTime)
	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", svc, k.nodes)
	require.Error(t, err)
	assert.Empty(t, k.writes())

	// Another reason, the same status: lastTransitionTime stays.
	k.clock.Step(time.Minute)
	delete(svc.Annotations, prefix+loadbalancer.AnnotationInternal)
	svc, err = k.kube.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	k.expire()
	k.script.list = cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListLoadBalancers, "", nil)
	k.writes()
	_, err = k.lb.EnsureLoadBalancer(t.Context(), "c", svc, k.nodes)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Equal(t, []string{patchStatus}, k.writes(), "the annotation stays: a cloud error says nothing about the load balancer")
	svc = k.get(t, "web")
	ready = readiness(t, svc)
	assert.Equal(t, loadbalancer.ReasonSyncFailed, ready.Reason)
	assert.True(t, ready.LastTransitionTime.Time.Equal(changed), "%s", ready.LastTransitionTime)
	assert.Equal(t, id, svc.Annotations[loadbalancer.StatusAnnotationLoadBalancerID])

	// Fixed: ready again.
	k.script.list = nil
	k.ensure(t, svc, k.nodes)
	assert.Equal(t, []string{patchStatus}, k.writes())
	svc = k.get(t, "web")
	assert.Equal(t, metav1.ConditionTrue, readiness(t, svc).Status)

	// The Service is no load balancer any more: both are removed, once.
	require.NoError(t, k.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	assert.Equal(t, []string{patchService, patchStatus}, k.writes())
	svc = k.get(t, "web")
	assert.NotContains(t, svc.Annotations, loadbalancer.StatusAnnotationLoadBalancerID)
	assert.Nil(t, meta.FindStatusCondition(svc.Status.Conditions, loadbalancer.ConditionLoadBalancerReady))
	assert.Equal(t, []metav1.Condition{other}, svc.Status.Conditions)
	require.NoError(t, k.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
	assert.Empty(t, k.writes())
}

// TestConditionReasons checks the reason of the condition for each kind of failure.
func TestConditionReasons(t *testing.T) {
	tests := []struct {
		name   string
		cfg    fake.Config
		svc    []func(*corev1.Service)
		script script
		reason string
	}{
		{name: "a refused annotation", svc: []func(*corev1.Service){withAnnotation(loadbalancer.AnnotationInternal, "maybe")}, reason: loadbalancer.ReasonAnnotationError},
		{name: "the cloud's quota", script: script{create: cloudapi.NewError(cloudapi.ErrInvalidRequest, cloudapi.OpCreateLoadBalancer, "", nil)}, reason: loadbalancer.ReasonCloudRefused},
		{name: "throttled", script: script{list: cloudapi.Throttled(cloudapi.OpListLoadBalancers, time.Second, nil)}, reason: loadbalancer.ReasonThrottled},
		{name: "provisioning", cfg: fake.Config{Provisioning: fake.Provisioning{Reads: 10}}, reason: loadbalancer.ReasonProvisioning},
		{name: "another error", script: script{list: cloudapi.NewError(cloudapi.ErrTransient, cloudapi.OpListLoadBalancers, "", nil)}, reason: loadbalancer.ReasonSyncFailed},
		{name: "owned elsewhere", reason: loadbalancer.ReasonOwnedElsewhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKubeEnv(t, tt.cfg, newService("web", tt.svc...))
			*k.script = tt.script
			if tt.reason == loadbalancer.ReasonOwnedElsewhere {
				lb := k.unowned(t, "theirs", func(s *cloudapi.LoadBalancerSpec) { s.Tags = map[string]string{cloudapi.TagCluster: "prod-eu"} })
				svc := k.get(t, "web")
				svc.Annotations = map[string]string{prefix + loadbalancer.AnnotationLoadBalancerID: lb.ID}
				_, err := k.kube.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{})
				require.NoError(t, err)
			}
			_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "web"), k.nodes)
			require.Error(t, err)
			ready := readiness(t, k.get(t, "web"))
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Equal(t, tt.reason, ready.Reason)
			assert.NotEmpty(t, ready.Message)
		})
	}
}

// TestThrottlingIsOneEventAMinute checks that a throttled sync, failed or held, records at
// most one CloudThrottled event per Service per minute, and that a failed one says so in
// the condition.
func TestThrottlingIsOneEventAMinute(t *testing.T) {
	k := newKubeEnv(t, fake.Config{}, newService("web"), newService("api"))
	throttled := func() []string {
		var out []string
		for _, e := range events(k.recorder) {
			if strings.Contains(e, loadbalancer.EventCloudThrottled) {
				out = append(out, e)
			}
		}
		return out
	}
	throttle := func(name string, retryAfter time.Duration) {
		t.Helper()
		k.script.list = cloudapi.Throttled(cloudapi.OpListLoadBalancers, retryAfter, nil)
		_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, name), k.nodes)
		require.ErrorIs(t, err, cloudapi.ErrThrottled)
	}
	for i := range 5 {
		throttle("web", time.Duration(i+1)*time.Second) // each message another
		k.clock.Step(10 * time.Second)
	}
	require.Len(t, throttled(), 1, "five throttled syncs in 50s")
	assert.Equal(t, []string{patchStatus}, k.writes(), "the condition, then messages that differ only in the Retry-After are not written within the minute")
	assert.Equal(t, loadbalancer.ReasonThrottled, readiness(t, k.get(t, "web")).Reason)
	k.clock.Step(20 * time.Second)
	throttle("web", 9*time.Second)
	assert.Len(t, throttled(), 1, "a minute after the last event")
	assert.Equal(t, []string{patchStatus}, k.writes(), "a minute after the last write")
	assert.Contains(t, readiness(t, k.get(t, "web")).Message, "9s")

	throttle("api", time.Second)
	assert.Len(t, throttled(), 1, "another Service has its own minute")

	// Succeeded after a throttle hold: an event, a minute after the last one, and a ready
	// condition.
	k.script.list, k.script.holdOnList = nil, true
	k.ensure(t, k.get(t, "web"), k.nodes)
	assert.Empty(t, throttled(), "within the minute")
	k.clock.Step(10 * time.Second)
	k.expire()
	require.NoError(t, k.lb.UpdateLoadBalancer(t.Context(), "c", k.get(t, "web"), k.nodes))
	got := throttled()
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "Warning CloudThrottled The cloud throttled the calls for this Service's load balancer; ccmkit waited")
	assert.Equal(t, metav1.ConditionTrue, readiness(t, k.get(t, "web")).Status)
}

// TestNoServicesWritesNothing checks that a LoadBalancer without Options.Services, or
// whose Services answers nil, works without writing.
func TestNoServicesWritesNothing(t *testing.T) {
	e := newEnv(t, fake.Config{})
	svc := newService("web")
	e.ensure(t, svc, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))

	e = newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) { o.Services = noServices{} })
	e.ensure(t, svc, e.nodes)
	require.NoError(t, e.lb.EnsureLoadBalancerDeleted(t.Context(), "c", svc))
}

// noServices is a client not set up yet.
type noServices struct{}

func (noServices) Services(string) typedcorev1.ServiceInterface { return nil }

// TestAPrefixHoldingTheStatusAnnotationIsRefused checks that the annotation ccmkit writes,
// and the one by which the operator acknowledges a new load balancer, can never be read as
// a user's annotation.
func TestAPrefixHoldingTheStatusAnnotationIsRefused(t *testing.T) {
	e := newEnv(t, fake.Config{})
	api, _ := e.cloud.LoadBalancers()
	format, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	for p, want := range map[string]string{"status.ccmkit.io/": "which ccmkit writes", "status.ccmkit.io/load-": "which ccmkit writes", "ccmkit.io/": "which the operator sets"} {
		_, err = loadbalancer.New(api, loadbalancer.Options{ClusterID: "c1", ProviderID: format, AnnotationPrefix: p})
		require.ErrorContains(t, err, want, p)
	}
}

// TestAServiceThatWantsNoLoadBalancerSaysNothing checks that GetLoadBalancer, which the
// service controller asks before EnsureLoadBalancerDeleted (and then does not call it when
// there is nothing to delete), removes the condition of a Service that never got a load
// balancer and no longer wants one, and writes nothing for one that still wants one.
func TestAServiceThatWantsNoLoadBalancerSaysNothing(t *testing.T) {
	k := newKubeEnv(t, fake.Config{}, newService("web", withAnnotation(loadbalancer.AnnotationInternal, "maybe")))
	_, err := k.lb.EnsureLoadBalancer(t.Context(), "c", k.get(t, "web"), k.nodes)
	require.Error(t, err)
	assert.Equal(t, []string{patchStatus}, k.writes())

	_, exists, err := k.lb.GetLoadBalancer(t.Context(), "c", k.get(t, "web"))
	require.NoError(t, err)
	require.False(t, exists)
	assert.Empty(t, k.writes(), "still of type LoadBalancer: the condition says why it has none")

	svc := k.get(t, "web")
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc, err = k.kube.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	k.writes()
	_, exists, err = k.lb.GetLoadBalancer(t.Context(), "c", svc)
	require.NoError(t, err)
	require.False(t, exists)
	assert.Equal(t, []string{patchStatus}, k.writes())
	assert.Empty(t, k.get(t, "web").Status.Conditions)
	_, _, err = k.lb.GetLoadBalancer(t.Context(), "c", k.get(t, "web"))
	require.NoError(t, err)
	assert.Empty(t, k.writes())
}

// TestARefusedWriteIsTriedAgainAMinuteLater checks that a write the API server refuses (a
// missing grant) does not fail the sync and costs one refused write a minute, not one per
// sync.
func TestARefusedWriteIsTriedAgainAMinuteLater(t *testing.T) {
	k := newKubeEnv(t, fake.Config{}, newService("web"))
	refuse := true
	k.kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !refuse {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(corev1.Resource("services"), a.(k8stesting.PatchAction).GetName(), errors.New("no grant"))
	})
	for range 3 {
		k.ensure(t, k.get(t, "web"), k.nodes)
		require.NoError(t, k.lb.UpdateLoadBalancer(t.Context(), "c", k.get(t, "web"), k.nodes))
		k.clock.Step(10 * time.Second)
	}
	assert.Equal(t, []string{patchService}, k.writes(), "one refused write, then none within the minute")

	k.clock.Step(30 * time.Second)
	refuse = false
	k.ensure(t, k.get(t, "web"), k.nodes)
	assert.Equal(t, []string{patchService, patchStatus}, k.writes())
	assert.Equal(t, metav1.ConditionTrue, readiness(t, k.get(t, "web")).Status)
}
