package provider

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics"
)

func TestLoadBalancersUseTheCloudsTargetGroups(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		grouped      bool
	}{
		{"a cloud with target groups", "cluster: {id: c1}\nfake: {capabilities: {targetGroups: true}}\n", true},
		{"turned off in the config", "cluster: {id: c1}\nfake: {capabilities: {targetGroups: true}}\nloadBalancer: {targetGroups: false}\n", false},
		{"a cloud without them", "cluster: {id: c1}\nloadBalancer: {targetGroups: true}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, err := Factory(fakeBackend(), Options{ProviderName: "mycloud", Metrics: metrics.NewKubeRegistry()})(strings.NewReader(tc.config))
			require.NoError(t, err)
			lb := ensureOne(t, cloud, nil)
			assert.Equal(t, tc.grouped, lb.Spec.TargetGroup != "", "the load balancer names a group: %+v", lb.Spec)
		})
	}
}
