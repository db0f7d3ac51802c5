package cloudapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestDiffTargetGroup(t *testing.T) {
	tests := []struct {
		name          string
		current, want cloudapi.TargetGroupSpec
		add, remove   []string
		tags, empty   bool
	}{
		{name: "equal sets in another order", current: cloudapi.TargetGroupSpec{Targets: []string{"i-2", "i-1"}}, want: cloudapi.TargetGroupSpec{Targets: []string{"i-1", "i-2"}}, empty: true},
		{name: "one added", current: cloudapi.TargetGroupSpec{Targets: []string{"i-1"}}, want: cloudapi.TargetGroupSpec{Targets: []string{"i-1", "i-3"}}, add: []string{"i-3"}},
		{name: "one removed", current: cloudapi.TargetGroupSpec{Targets: []string{"i-1", "i-3"}}, want: cloudapi.TargetGroupSpec{Targets: []string{"i-3"}}, remove: []string{"i-1"}},
		{name: "tags", current: cloudapi.TargetGroupSpec{Tags: map[string]string{"a": "1"}}, want: cloudapi.TargetGroupSpec{Tags: map[string]string{"a": "2"}}, tags: true},
		{name: "the name is not compared", current: cloudapi.TargetGroupSpec{Name: "a"}, want: cloudapi.TargetGroupSpec{Name: "b"}, empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := cloudapi.DiffTargetGroup(tt.current, tt.want)
			assert.Equal(t, tt.add, u.AddTargets)
			assert.Equal(t, tt.remove, u.RemoveTargets)
			assert.Equal(t, tt.tags, u.Tags)
			assert.Equal(t, tt.empty, u.Empty())
			assert.Equal(t, tt.want, u.Spec)
		})
	}
}

func TestDiffLoadBalancerTargetGroup(t *testing.T) {
	c := cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{TargetGroup: "tg-1"}, cloudapi.LoadBalancerSpec{TargetGroup: "tg-2"})
	assert.True(t, c.TargetGroup)
	assert.False(t, c.Empty())
	assert.True(t, cloudapi.DiffLoadBalancer(cloudapi.LoadBalancerSpec{TargetGroup: "tg-1"}, cloudapi.LoadBalancerSpec{TargetGroup: "tg-1"}).Empty())
}

// noGroups is a Client that does not implement TargetGroupClient.
type noGroups struct{ cloudapi.Client }

// offGroups implements TargetGroupClient and says it has none.
type offGroups struct{ cloudapi.Client }

func (offGroups) TargetGroups() (cloudapi.TargetGroupAPI, bool) { return nil, false }

// nilGroups claims a nil API.
type nilGroups struct{ cloudapi.Client }

func (nilGroups) TargetGroups() (cloudapi.TargetGroupAPI, bool) { return nil, true }

func TestTargetGroupsDiscovery(t *testing.T) {
	for name, c := range map[string]cloudapi.Client{"not implemented": noGroups{}, "switched off": offGroups{}, "nil": nilGroups{}} {
		t.Run(name, func(t *testing.T) {
			api, ok := cloudapi.TargetGroups(c)
			assert.False(t, ok)
			assert.Nil(t, api)
		})
	}
}
