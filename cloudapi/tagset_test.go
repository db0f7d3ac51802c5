package cloudapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// TestTagSetRoundTrip: ccmkit's tags, whatever their keys and values, are written as
// tags of DigitalOcean's syntax and read back exactly; a key and value the rules accept
// stay readable.
func TestTagSetRoundTrip(t *testing.T) {
	rules := cloudapi.DigitalOceanTagRules
	tags := map[string]string{
		cloudapi.TagCluster:     "prod",
		cloudapi.TagService:     "4fd3a1c2-0b6e-4e8f-9a2d-1c3b5e7f9a0b",
		cloudapi.TagServiceName: "default/web",
		cloudapi.TagNode:        strings.Repeat("n", 253),
		"k8s":                   "",
		"team":                  "a:b",
		"b32-mfrgg":             "looks-encoded",
	}
	set, err := cloudapi.EncodeTagSet(tags, rules)
	require.NoError(t, err)
	assert.True(t, slices.IsSorted(set))
	assert.Contains(t, set, "k8s", "an empty value is the key alone")
	assert.Contains(t, set, "team:a:b", "a value may hold the separator")
	for _, tag := range set {
		assert.LessOrEqual(t, len(tag), 255, tag)
		assert.Equal(t, "", strings.Trim(tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_"), tag)
	}
	got, err := cloudapi.DecodeTagSet(set, rules)
	require.NoError(t, err)
	assert.Equal(t, tags, got)

	_, err = cloudapi.EncodeTagSet(map[string]string{"a": strings.Repeat("v", 2000)}, rules)
	assert.ErrorContains(t, err, `tag "a"`, "a value too long for nine parts is refused, naming its tag")
}

// TestTagSetSeveralValues: a key that holds several values in the set reads as none of
// them, is named in the error, and the other tags are read; writing keeps them unless
// ccmkit writes the key, which then holds its one value.
func TestTagSetSeveralValues(t *testing.T) {
	rules := cloudapi.DigitalOceanTagRules
	set := []string{"k8s", "k8s:prod", "web", "env:dev", "env:dev"}
	got, err := cloudapi.DecodeTagSet(set, rules)
	assert.Equal(t, map[string]string{"web": "", "env": "dev"}, got, "a repeated tag is one value")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key "k8s" left out of the tags: it holds 2 values ["" "prod"], which read as none`)

	kept, err := cloudapi.EncodeTagSetKeeping(got, set, rules)
	require.NoError(t, err)
	assert.Equal(t, []string{"env:dev", "k8s", "k8s:prod", "web"}, kept, "written back unchanged")

	one, err := cloudapi.EncodeTagSetKeeping(map[string]string{"k8s": "staging", "web": ""}, set, rules)
	require.NoError(t, err)
	assert.Equal(t, []string{"k8s:staging", "web"}, one, "a key written holds one value; env, ccmkit's and dropped, is gone")
}

// TestTagSetForeign: set tags that are not what the codec writes (a character the rules
// lack, a key with an empty value after the separator, a broken encoding, a stray part)
// are never read as a tag, are named, and survive a write of the tags read.
func TestTagSetForeign(t *testing.T) {
	rules := cloudapi.DigitalOceanTagRules
	own, err := cloudapi.EncodeTagSet(map[string]string{cloudapi.TagCluster: "prod"}, rules)
	require.NoError(t, err)
	foreign := []string{"has.dot", "k8s:", "b32-0", "b32-mfrgg--1:x", strings.Repeat("x", 256)}
	set := append(slices.Clone(own), foreign...)
	got, err := cloudapi.DecodeTagSet(set, rules)
	assert.Equal(t, map[string]string{cloudapi.TagCluster: "prod"}, got)
	require.Error(t, err)
	for _, f := range []string{`"has.dot"`, `"k8s:"`, `"b32-0"`, `"b32-mfrgg--1"`} {
		assert.Contains(t, err.Error(), f, "named (a tag of the label codec by its key)")
	}
	kept, err := cloudapi.EncodeTagSetKeeping(got, set, rules)
	require.NoError(t, err)
	assert.Equal(t, slices.Sorted(slices.Values(set)), kept, "a round trip writes the set back unchanged")
}

func TestNewTagSetRules(t *testing.T) {
	_, err := cloudapi.NewTagSetRules("abcdefghijklmnopqrstuvwxyz234567-:", ":", 255, 64)
	require.NoError(t, err)
	_, err = cloudapi.NewTagSetRules("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", ":", 10, 8)
	require.Error(t, err)
	for _, want := range []string{`separator ":"`, `lack 'a'`, `lack '-'`, "leaves no room"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = cloudapi.EncodeTagSet(map[string]string{"a": "b"}, cloudapi.TagSetRules{})
	assert.ErrorContains(t, err, "not made by NewTagSetRules", "the zero rules are refused, not a panic")
}
