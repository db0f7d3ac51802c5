package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestServes: the Services whose load balancer ccmkit serves, and so the only ones that
// count as members of a share, follow loadBalancer.class and serveUnclassed as the
// service controllers do.
func TestServes(t *testing.T) {
	classed := func(class string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{LoadBalancerClass: ptr.To(class)}}
	}
	unclassed := &corev1.Service{}
	for _, tc := range []struct {
		name           string
		class          string
		serveUnclassed *bool
		svc            *corev1.Service
		want           bool
	}{
		{"no class configured, a Service without one", "", nil, unclassed, true},
		{"no class configured, a Service of a class", "", nil, classed("other.example/lb"), false},
		{"the configured class", "example.com/lb", nil, classed("example.com/lb"), true},
		{"another class", "example.com/lb", nil, classed("other.example/lb"), false},
		{"without a class, served", "example.com/lb", ptr.To(true), unclassed, true},
		{"without a class, not served", "example.com/lb", ptr.To(false), unclassed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{LoadBalancer: LoadBalancerConfig{Class: tc.class, ServeUnclassed: tc.serveUnclassed}}
			assert.Equal(t, tc.want, c.serves(tc.svc))
		})
	}
}
