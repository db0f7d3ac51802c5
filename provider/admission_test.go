package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/loadbalancer"
)

// TestAdmissionPolicy checks that the policy is the one of the provider's configuration:
// its annotation prefix, the adapter's settings and aliases, and the class it serves.
func TestAdmissionPolicy(t *testing.T) {
	no := false
	size := loadbalancer.Settings{{Name: "size", Values: []string{"small", "large"}}}
	tests := []struct {
		name  string
		cfg   Config
		opts  Options
		wants []string
	}{
		{name: "defaults", wants: []string{`k.startsWith("loadbalancer.ccmkit.io/")`, `'!has(object.spec.loadBalancerClass)'`}},
		{name: "the config's prefix and class", cfg: Config{LoadBalancer: LoadBalancerConfig{AnnotationPrefix: "lb.example.com/", Class: "example.com/lb", ServeUnclassed: &no}},
			wants: []string{`k.startsWith("lb.example.com/")`, `has(object.spec.loadBalancerClass) && object.spec.loadBalancerClass == "example.com/lb"`}},
		{name: "the adapter's prefix and settings", opts: Options{AnnotationPrefix: "lb.cloud.example/", LoadBalancerSettings: size},
			wants: []string{`k.startsWith("lb.cloud.example/")`, `"lb.cloud.example/size" in variables.a`, `(?i)^(?:small|large)$`}},
		{name: "the adapter's aliases", opts: Options{LoadBalancerSettings: size, LoadBalancerAliases: loadbalancer.Aliases{
			Prefixes: []string{"old.example.com/"},
			Keys:     []loadbalancer.Alias{{Key: "old.example.com/size", Name: "size"}, {Key: "old.example.com/private", Name: loadbalancer.AnnotationInternal}},
		}}, wants: []string{`k.startsWith("old.example.com/")`, `"old.example.com/size" in variables.a`, `annotation old.example.com/private: malformed value`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Cluster.ID = "c1"
			opts := tt.opts
			opts.Metrics = testOptions().Metrics
			cloud, err := New(tt.cfg, withLoadBalancers(), opts)
			require.NoError(t, err)
			out, err := cloud.AdmissionPolicy()
			require.NoError(t, err)
			for _, want := range tt.wants {
				assert.Contains(t, string(out), want)
			}
		})
	}
	t.Run("load balancers off", func(t *testing.T) {
		cloud, err := New(Config{Cluster: ClusterConfig{ID: "c1"}, Enable: EnableConfig{LoadBalancers: &no}}, withLoadBalancers(), testOptions())
		require.NoError(t, err)
		_, err = cloud.AdmissionPolicy()
		assert.ErrorContains(t, err, "load balancers are off")
	})
}
