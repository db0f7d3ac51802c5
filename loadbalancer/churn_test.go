package loadbalancer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestChurnLeavesNothingRemembered: 10,000 Services come and go, each throttled by the
// cloud once (a CloudThrottled note), with an unknown annotation (a report), a node
// selector (tracked for node-label syncs), half of them in shares, some deleted before
// their load balancer was made (10,000 of them; 1,000 more with a Services client). Once they are gone, the LoadBalancer remembers nothing of
// them: what it keeps per Service must not grow with churn, with or without a Services
// client.
func TestChurnLeavesNothingRemembered(t *testing.T) {
	for _, tc := range []struct {
		withServices bool
		n            int // Services churned; with a client, what grows more is what it writes on them
	}{{withServices: false, n: 10_000}, {withServices: true, n: 1_000}} {
		withServices, n := tc.withServices, tc.n
		if testing.Short() {
			n = min(n, 1_000)
		}
		t.Run(fmt.Sprintf("services client %v", withServices), func(t *testing.T) {
			s := &script{holdOnList: true}
			e := newEnvWith(t, fake.Config{}, func(o *loadbalancer.Options) {
				if withServices {
					o.Services = k8sfake.NewClientset().CoreV1() // the Services are not there: writes on them find none
				}
			}, func(c cloudapi.Client) cloudapi.Client { return scriptedClient{c, s} })
			nodes := e.labelled("web", "web", "", "", "")
			for i := range n {
				name := fmt.Sprintf("svc-%d", i)
				svc := newService(name, withNodeSelector("pool=web"), withAnnotation("no-such-key", "x"),
					func(s *corev1.Service) { s.UID = types.UID(fmt.Sprintf("uid-%d", i)) })
				if i%2 == 0 {
					svc.Annotations[prefix+loadbalancer.AnnotationShare] = fmt.Sprintf("share-%d", i%10)
					svc.Spec.Ports[0].Port = int32(1000 + i%997) // ports of a share rarely collide
				}
				if i%7 == 0 {
					svc.Annotations[prefix+loadbalancer.AnnotationProxyProtocol] = "maybe" // refused: no load balancer made
				}
				_, _ = e.lb.EnsureLoadBalancer(t.Context(), "c", svc, nodes)
				svc.Spec.Type = corev1.ServiceTypeClusterIP
				deleteAsUpstream(t, e, svc)
			}
			require.Empty(t, e.cloud.Inventory().LoadBalancers)
			e.expire()
			probe := newService("probe")
			e.ensure(t, probe, nodes) // a list: the snapshot as the cloud is
			probe.DeletionTimestamp = &metav1.Time{}
			deleteAsUpstream(t, e, probe)
			for name, size := range e.lb.Remembered() {
				assert.LessOrEqual(t, size, 1, "%s remembers %d entries after %d Services came and went", name, size, n)
			}
		})
	}
}
