package awspeer

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	awsv1 "k8s.io/cloud-provider-aws/pkg/providers/v1"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/config"
	"k8s.io/cloud-provider-aws/pkg/providers/v1/iface"

	"github.com/ccmkit/ccmkit/bench/harness"
)

// TestEveryRequestCounted calls every method of every AWS API the provider is given, with
// an empty request, and checks that each counts exactly one request, as a write unless it
// only reads (Describe, Get), and never panics.
func TestEveryRequestCounted(t *testing.T) {
	c := newCloud()
	apis := []any{ec2API{c}, elbAPI{c}, elbv2API{c}, kmsAPI{c}, metadataAPI{c}}
	ctx := reflect.ValueOf(context.Background())
	methods := 0
	for _, api := range apis {
		v := reflect.ValueOf(api)
		for i := range v.NumMethod() {
			m, name := v.Method(i), v.Type().Method(i).Name
			t.Run(v.Type().Name()+"."+name, func(t *testing.T) {
				require.Equal(t, 3, m.Type().NumIn(), "ctx, request, options")
				before := c.Calls()
				require.NotPanics(t, func() { m.Call([]reflect.Value{ctx, reflect.New(m.Type().In(1).Elem())}) })
				d := c.Calls().Sub(before)
				require.Len(t, d, 1, "one operation")
				for op, n := range d {
					assert.Equal(t, int64(1), n)
					assert.True(t, strings.HasSuffix(op.Name, ":"+name), op.Name)
					assert.Equal(t, !strings.HasPrefix(name, "Describe") && !strings.HasPrefix(name, "Get"), op.Write, op.Name)
				}
			})
			methods++
		}
	}
	want := 0
	for _, typ := range []reflect.Type{reflect.TypeFor[iface.EC2](), reflect.TypeFor[awsv1.ELB](), reflect.TypeFor[awsv1.ELBV2](), reflect.TypeFor[awsv1.KMS](), reflect.TypeFor[config.EC2Metadata]()} {
		want += typ.NumMethod()
	}
	assert.Equal(t, want, methods, "iface.EC2, ELB, ELBV2, KMS and metadata: every method")
}

// TestEnsureLoadBalancerCalls counts the requests of the provider's EnsureLoadBalancer, a
// new load balancer and then a converged one, at the in-memory AWS.
func TestEnsureLoadBalancerCalls(t *testing.T) {
	hc, err := Column().NewCloud(harness.CloudConfig{Nodes: 3})
	require.NoError(t, err)
	c := hc.(*cloud)
	p, err := c.NewProvider(nil)
	require.NoError(t, err)
	lb, ok := p.LoadBalancer()
	require.True(t, ok)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "6f1c2d3e-0000-4000-8000-000000000001"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	var nodes []*corev1.Node
	for i := range 3 {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.NodeName(i)}, Spec: corev1.NodeSpec{ProviderID: c.ProviderID(i)}})
	}
	tests := []struct {
		name string
		want map[string]int64
	}{
		{"new", map[string]int64{
			"ec2:DescribeInstances": 1, "ec2:DescribeSubnets": 1, "ec2:DescribeRouteTables": 1, "ec2:DescribeAvailabilityZones": 1,
			"elb:DescribeLoadBalancers": 2, "elb:CreateLoadBalancer": 1, "elb:DescribeLoadBalancerAttributes": 1,
			"elb:ModifyLoadBalancerAttributes": 1, "elb:ConfigureHealthCheck": 1, "elb:RegisterInstancesWithLoadBalancer": 1,
		}},
		// The instance list is cached; the attributes are written on every call: the
		// provider compares the attributes it wants with a pointer to the ones it read.
		{"converged", map[string]int64{
			"ec2:DescribeSubnets": 1, "ec2:DescribeRouteTables": 1, "elb:DescribeLoadBalancers": 2,
			"elb:DescribeLoadBalancerAttributes": 1, "elb:ModifyLoadBalancerAttributes": 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.Calls()
			st, err := lb.EnsureLoadBalancer(context.Background(), harness.ClusterName, svc, nodes)
			require.NoError(t, err)
			require.Len(t, st.Ingress, 1)
			assert.Equal(t, tt.want, c.Calls().Sub(before).ByName())
			for i := range nodes {
				n, err := c.Reaching(i)
				require.NoError(t, err)
				assert.Equal(t, 1, n, "instance %d is registered", i)
			}
		})
	}
}

// TestColumnSmall runs the whole benchmark with the AWS column at a small size: the
// provider's own code under the upstream controllers, every figure taken, calls counted
// at the in-memory AWS.
func TestColumnSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of wall time: the provider's batcher waits 100 ms per instance lookup")
	}
	figures, aws, logs := harness.RunSmall(t, Column())
	const services = harness.SmallServices
	for _, key := range []string{"P1", "P1_outage", "P4_reads", "P3", "P3_no_latency", "P6", "node_add_writes"} {
		assert.Positive(t, aws(key), key)
	}
	assert.Equal(t, 0.0, aws("P3_node_writes"), "a status pass over converged Nodes writes none")
	assert.Equal(t, 1.0, aws("P2_ensure_writes"), "the attributes, rewritten on every call")
	assert.Equal(t, 0.0, aws("P2_update_writes"), "UpdateLoadBalancer registers only what changed")
	assert.Equal(t, float64(services), aws("P4_writes"), "the attributes of every load balancer, once")
	assert.Equal(t, float64(services), aws("node_add_writes"), "one registration per load balancer")
	assert.Equal(t, float64(services), aws("node_add_lbs"), "every load balancer has the new Node")
	assert.Equal(t, 0.0, aws("node_delete_lbs"), "no load balancer keeps the deleted Node's instance")
	assert.Equal(t, float64(services), aws("node_delete_writes"), "a deregistration per load balancer")
	assert.Nil(t, aws("P2_settings_calls"), "the provider refuses session affinity: n/a")
	assert.Contains(t, figures["P2_settings_calls"]["note"], "aws refuses the Service")
	assert.Contains(t, figures["P1_outage"]["extrapolated"], Name, "the MonitorNodes passes are counted over a subset")
	assert.Contains(t, logs, "ec2:DescribeInstances", "the calls by operation")
}
