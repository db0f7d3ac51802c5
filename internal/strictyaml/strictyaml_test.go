package strictyaml_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/strictyaml"
)

type inner struct {
	Port    int           `yaml:"port"`
	Timeout time.Duration `yaml:"timeout"`
	Rate    float64       `yaml:"rate"`
	Small   float32       `yaml:"small"`
}

type embedded struct {
	Shared string `yaml:"shared"`
}

type doc struct {
	embedded `yaml:",inline"`
	Name     string            `yaml:"name"`
	Items    []inner           `yaml:"items"`
	ByName   map[string]inner  `yaml:"byName"`
	Ptr      *inner            `yaml:"ptr"`
	Labels   map[string]string `yaml:"labels"`
	Default  bool
	Skipped  string `yaml:"-"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr []string
	}{
		{name: "all known", yaml: "name: a\nshared: s\nitems:\n- port: 1\n  timeout: 2s\nbyName:\n  x: {port: 2}\nptr: {port: 3, rate: -0.0e-999}\nlabels: {anything: goes}\ndefault: true\n"},
		{name: "unknown top", yaml: "name: a\nnmae: b\n", wantErr: []string{`line 2: unknown key "nmae" in the top level (known keys: byName, default, items, labels, name, ptr, shared)`}},
		{name: "unknown in list item", yaml: "items:\n- port: 1\n- prot: 2\n", wantErr: []string{`line 3: unknown key "prot" in items[1]`}},
		{name: "unknown in map value", yaml: "byName:\n  x:\n    timeout: 1s\n    tiemout: 2s\n", wantErr: []string{`line 4: unknown key "tiemout" in byName.x`}},
		{name: "unknown in pointer", yaml: "ptr:\n  porrt: 1\n", wantErr: []string{`line 2: unknown key "porrt" in ptr`}},
		{name: "skipped field is unknown", yaml: "skipped: x\n", wantErr: []string{`unknown key "skipped"`}},
		{name: "every problem at once", yaml: "a: 1\nb: 2\n", wantErr: []string{`line 1: unknown key "a"`, `line 2: unknown key "b"`}},
		{name: "type error has a line", yaml: "items:\n- port: many\n", wantErr: []string{"line 2", "many"}},
		{name: "a float too small to tell from 0", yaml: "ptr:\n  rate: 1e-400\n", wantErr: []string{"line 2: ptr.rate: 1e-400 is too small to tell from 0"}},
		{name: "too small for a float32", yaml: "ptr:\n  small: 1e-50\n", wantErr: []string{"line 2: ptr.small: 1e-50 is too small to tell from 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := strictyaml.Parse([]byte(tt.yaml))
			require.NoError(t, err)
			var got doc
			err = strictyaml.Decode(node, "", &got)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				assert.Equal(t, "a", got.Name)
				assert.Equal(t, "s", got.Shared)
				assert.Equal(t, 2*time.Second, got.Items[0].Timeout)
				assert.Equal(t, 3, got.Ptr.Port)
				assert.True(t, got.Default)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestDecodeSectionPath(t *testing.T) {
	node, err := strictyaml.Parse([]byte("top: 1\nsection:\n  port: 1\n  extra: 2\n"))
	require.NoError(t, err)
	section := node.Content[3]
	var got inner
	err = strictyaml.Decode(section, "section", &got)
	require.ErrorIs(t, err, strictyaml.ErrUnknownKey)
	assert.Contains(t, err.Error(), `line 4: unknown key "extra" in section`, "lines point into the whole file")
}

func TestParse(t *testing.T) {
	node, err := strictyaml.Parse(nil)
	require.NoError(t, err)
	assert.Nil(t, node)
	_, err = strictyaml.Parse([]byte("a: [\n"))
	assert.ErrorContains(t, err, "not valid YAML")
	var x inner
	assert.Error(t, strictyaml.Decode(nil, "", x), "a non-pointer target is refused")
}

func TestParseRefusesUnknownTags(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // one per refused node; none: accepted
	}{
		{name: "standard tags", yaml: "a: !!str 0123\nb: !!int 1\nc: !<tag:yaml.org,2002:str> x\nd: !!binary aGk=\ne: !!map {x: !!null ~}\n"},
		{name: "non-specific tag", yaml: "a: ! x\n"},
		{name: "local tag", yaml: "a: b\nc: !Tag hunter2\n", want: []string{"line 2 column 4: unknown YAML tag: only the standard tags"}},
		{name: "unknown in the !! namespace", yaml: "a: !!python/object x\n", want: []string{"line 1 column 4: unknown YAML tag"}},
		{name: "global tag", yaml: "a: !<tag:example.com,2000:x> y\n", want: []string{"line 1 column 4: unknown YAML tag"}},
		{name: "on a mapping, a key and a list item", yaml: "!mtag {!ktag a: [!itag 1]}\n", want: []string{"line 1 column 1", "line 1 column 8", "line 1 column 18"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := strictyaml.Parse([]byte(tt.yaml))
			if len(tt.want) == 0 {
				require.NoError(t, err)
				require.NotNil(t, node)
				return
			}
			require.ErrorIs(t, err, strictyaml.ErrUnknownTag)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), "one error per tag: %s", err)
			for i, want := range tt.want {
				assert.Contains(t, lines[i], want)
			}
			for _, quoted := range []string{"Tag", "hunter2", "python", "example.com", "mtag", "ktag", "itag"} {
				assert.NotContains(t, err.Error(), quoted, "no tag or value is quoted")
			}
		})
	}
}

func TestParseQuotesNoAnchorName(t *testing.T) {
	_, err := strictyaml.Parse([]byte("token: *hunter2\n"))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), `not valid YAML: yaml: an alias ("*name") names no anchor ("&name") before it; quote a value that starts with "*"`)
}
