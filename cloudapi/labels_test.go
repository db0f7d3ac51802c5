package cloudapi_test

import (
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// gcpLabelRules are GCP's label rules: keys of 1 to 63 lower-case letters, digits, "_"
// and "-" beginning with a letter; values of up to 63 of those.
var gcpLabelRules = cloudapi.LabelRules{
	Key:      regexp.MustCompile(`^[a-z][-_a-z0-9]{0,62}$`).MatchString,
	Value:    regexp.MustCompile(`^[-_a-z0-9]{0,63}$`).MatchString,
	MaxValue: 63,
}

func TestEncodeLabels(t *testing.T) {
	node253 := strings.Repeat("n", 250) + ".io"
	tests := []struct {
		name  string
		rules cloudapi.LabelRules
		tags  map[string]string
		want  map[string]string // nil: only the round trip is checked
	}{
		{name: "valid tags stay as they are", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagService: "0b7c2d9e-3f41-4f6e-9d1a-2c8e5b7a4f10", "role": "Worker.1", "empty": ""},
			want: map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagService: "0b7c2d9e-3f41-4f6e-9d1a-2c8e5b7a4f10", "role": "Worker.1", "empty": ""}},
		{name: "a namespace/name is encoded", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{cloudapi.TagServiceName: "default/web"},
			want: map[string]string{cloudapi.TagServiceName: "b32-mrswmylvnr2c653fmi"}},
		{name: "a value that looks encoded is encoded", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{"k": "b32-mrswmylvnr2c653fmi"}},
		{name: "a key that looks encoded or like a part is encoded", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{"b32-x": "a", "x--1": "b", cloudapi.TagNode + "--2": "c"}},
		{name: "a Node name of 253 characters is split", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{cloudapi.TagNode: node253}},
		{name: "a key the rules refuse is encoded", rules: cloudapi.HetznerLabelRules,
			tags: map[string]string{"Upper.Prefix/x": "v", "a/b/c": "v", "-x": "v"}},
		{name: "gcp: keys with a slash, upper case", rules: gcpLabelRules,
			tags: map[string]string{cloudapi.TagCluster: "Prod", cloudapi.TagServiceName: "default/web", "team": "a_b", cloudapi.TagNode: node253}},
		{name: "empty", rules: cloudapi.HetznerLabelRules, tags: map[string]string{}, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels, err := cloudapi.EncodeLabels(tt.tags, tt.rules)
			require.NoError(t, err)
			if tt.want != nil {
				assert.Equal(t, tt.want, labels)
			}
			for k, v := range labels {
				assert.True(t, tt.rules.Key(k), "key %q", k)
				assert.True(t, tt.rules.Value(v), "value %q", v)
			}
			again, err := cloudapi.EncodeLabels(tt.tags, tt.rules)
			require.NoError(t, err)
			assert.Equal(t, labels, again, "deterministic")
			tags, err := cloudapi.DecodeLabels(labels, tt.rules)
			require.NoError(t, err)
			assert.Equal(t, tt.tags, tags)
		})
	}
}

func TestEncodeLabelsRefuses(t *testing.T) {
	tests := []struct {
		name string
		tags map[string]string
		want string
	}{
		{name: "an empty key", tags: map[string]string{"": "v"}, want: `tag key ""`},
		{name: "a key too long to encode", tags: map[string]string{strings.Repeat("k", 64): "v"}, want: "is not a label key"},
		{name: "a value too long for nine labels", tags: map[string]string{"k": strings.Repeat("v", 400)}, want: "does not fit in 9 labels"},
		{name: "a long value under a long key", tags: map[string]string{strings.Repeat("k", 62): strings.Repeat("/", 60)}, want: "does not fit the labels' rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cloudapi.EncodeLabels(tt.tags, cloudapi.HetznerLabelRules)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestDecodeLabelsLeavesOut(t *testing.T) {
	long, err := cloudapi.EncodeLabels(map[string]string{cloudapi.TagNode: strings.Repeat("node-", 25)}, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	require.Len(t, long, 4)
	without := func(k string) map[string]string { m := maps.Clone(long); delete(m, k); return m }
	with := func(k, v string) map[string]string { m := maps.Clone(long); m[k] = v; return m }
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{name: "an invalid encoded value", labels: map[string]string{cloudapi.TagCluster: "b32-prod1"}, want: map[string]string{}},
		{name: "an encoded value of a valid value", labels: map[string]string{cloudapi.TagCluster: "b32-obzg6za"}, want: map[string]string{}}, // "prod"
		{name: "an encoded key of a valid key", labels: map[string]string{"b32-obzg6za": "x", "role": "a"}, want: map[string]string{"role": "a"}},
		{name: "an encoded key next to its plain form", labels: map[string]string{"b32-obzg6za": "x", "prod": "y"}, want: map[string]string{"prod": "y"}},
		{name: "a non-canonical encoded value", labels: map[string]string{"k": "b32-mrswmylvnr2c653fmj"}, want: map[string]string{}},
		{name: "a split value lacking a part", labels: without(cloudapi.TagNode + "--2"), want: map[string]string{}},
		{name: "a split value with a part changed", labels: with(cloudapi.TagNode+"--3", "aaaa"), want: map[string]string{}},
		{name: "a split value with an extra part", labels: with(cloudapi.TagNode+"--4", "aaaa"), want: map[string]string{cloudapi.TagNode: strings.Repeat("node-", 25)}},
		{name: "a part without its first label", labels: without(cloudapi.TagNode), want: map[string]string{}},
		{name: "a split value with the wrong count", labels: with(cloudapi.TagNode, strings.Replace(long[cloudapi.TagNode], "b32-4-", "b32-3-", 1)), want: map[string]string{}},
		{name: "a user's label that looks like a part", labels: map[string]string{"disk--1": "ssd", "role": "a"}, want: map[string]string{"role": "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags, err := cloudapi.DecodeLabels(tt.labels, cloudapi.HetznerLabelRules)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "left out of the tags")
			assert.Equal(t, tt.want, tags)
		})
	}
}

func TestLabelSelector(t *testing.T) {
	sel, err := cloudapi.LabelSelector(map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagServiceName: "default/web"}, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	assert.Equal(t, "ccmkit.io/cluster=prod,ccmkit.io/service=b32-mrswmylvnr2c653fmi", sel)
	sel, err = cloudapi.LabelSelector(nil, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	assert.Empty(t, sel)
	_, err = cloudapi.LabelSelector(map[string]string{"": "x"}, cloudapi.HetznerLabelRules)
	assert.Error(t, err)
}

// FuzzLabels checks the codec under Hetzner's rules: tags encode to valid labels that
// decode to the same tags, and any labels decode, without panic, to tags whose own labels
// are exactly among them.
func FuzzLabels(f *testing.F) {
	f.Add("ccmkit.io/service", "default/web", "b32-mrswmylvnr2c653fmi", "x--1")
	f.Add("ccmkit.io/node", strings.Repeat("n.", 120), "b32-2-mrswmylvnr2c653fmi", "b32-a")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		rules := cloudapi.HetznerLabelRules
		tags := map[string]string{k1: v1, k2: v2}
		if labels, err := cloudapi.EncodeLabels(tags, rules); err == nil {
			for k, v := range labels {
				require.True(t, rules.Key(k) && rules.Value(v), "invalid label %q=%q", k, v)
			}
			got, err := cloudapi.DecodeLabels(labels, rules)
			require.NoError(t, err)
			require.Equal(t, tags, got)
		}
		for _, labels := range []map[string]string{{k1: v1, k2: v2}, {k1: v1, v1: k2, k2: v2, v2: k1}} {
			got, _ := cloudapi.DecodeLabels(labels, rules)
			for k, v := range got {
				own, err := cloudapi.EncodeLabels(map[string]string{k: v}, rules)
				require.NoError(t, err)
				for l, lv := range own {
					require.Equal(t, lv, labels[l], "tag %q=%q read from labels it is not written as", k, v)
				}
			}
		}
	})
}

// TestEncodeLabelsKeeping: writing a resource's tags keeps the labels the codec cannot
// read (not ccmkit's to drop) and replaces the tags it can.
func TestEncodeLabelsKeeping(t *testing.T) {
	current := map[string]string{
		cloudapi.TagCluster: "prod", "role": "web", // readable tags
		"b32-prod1": "x", "disk--1": "ssd", // labels the codec leaves out
	}
	got, err := cloudapi.EncodeLabelsKeeping(map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagServiceName: "default/web"}, current, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	want, err := cloudapi.EncodeLabels(map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagServiceName: "default/web"}, cloudapi.HetznerLabelRules)
	require.NoError(t, err)
	want["b32-prod1"], want["disk--1"] = "x", "ssd"
	assert.Equal(t, want, got, "the readable tag role is replaced (dropped), the unreadable labels kept")
	tags, _ := cloudapi.DecodeLabels(got, cloudapi.HetznerLabelRules)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "prod", cloudapi.TagServiceName: "default/web"}, tags)

	_, err = cloudapi.EncodeLabelsKeeping(map[string]string{"": "x"}, nil, cloudapi.HetznerLabelRules)
	require.Error(t, err)
}
