package providerid_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/providerid"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct{ template, want string }{
		{"{id}", `must start with a scheme`},
		{"://{id}", `must start with a scheme`},
		{"my/cloud://{id}", `must start with a scheme`},
		{"mycloud://", `must contain {id}`},
		{"mycloud://{zone}", `must contain {id}`},
		{"mycloud://{id}/{id}", `placeholder {id} appears twice`},
		{"mycloud://{ip}", `unknown placeholder {ip}`},
		{"mycloud://{zone}{id}", `placeholders {zone} and {id} need a "/" between them`},
		{"mycloud://{zone}-{id}", `the text "-" after {zone} must contain a "/"`},
		{"mycloud://{id}.vm", `the text ".vm" after {id} must contain a "/"`},
		{"mycloud://{id", `unmatched "{"`},
		{"mycloud://id}", `unmatched "}"`},
		{"mycloud://x}{id}", `unmatched "}"`},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			_, err := providerid.Compile(tt.template)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), tt.template, "the error quotes the template")
		})
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		template string
		fields   providerid.Fields
		want     string
	}{
		{"ccmkit://{id}", providerid.Fields{ID: "i-0abc"}, "ccmkit://i-0abc"},
		{"aws:///{zone}/{id}", providerid.Fields{ID: "i-0abc", Zone: "us-east-1a"}, "aws:///us-east-1a/i-0abc"},
		{"gce://my-project/{zone}/{name}/{id}", providerid.Fields{ID: "42", Zone: "europe-west1-b", Name: "node-a"}, "gce://my-project/europe-west1-b/node-a/42"},
		{"mycloud://{region}/{id}", providerid.Fields{ID: "7", Region: "eu"}, "mycloud://eu/7"},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			f, err := providerid.Compile(tt.template)
			require.NoError(t, err)
			got, err := f.Format(tt.fields)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			back, err := f.Parse(got)
			require.NoError(t, err)
			assert.Equal(t, tt.fields, back)
		})
	}
}

func TestParseRejects(t *testing.T) {
	f, err := providerid.Default("ccmkit")
	require.NoError(t, err)
	zoned, err := providerid.Compile("aws:///{zone}/{id}")
	require.NoError(t, err)
	tests := []struct {
		name   string
		format providerid.Format
		id     string
	}{
		{"empty", f, ""},
		{"foreign prefix", f, "aws:///us-east-1a/i-1"},
		{"no id", f, "ccmkit://"},
		{"extra path", f, "ccmkit://i-1/extra"},
		{"prefix only partly", f, "ccmkit:/i-1"},
		{"surrounding space", f, "ccmkit:// i-1"},
		{"zoned missing zone", zoned, "aws:////i-1"},
		{"zoned missing separator", zoned, "aws:///i-1"},
		{"zoned extra segment", zoned, "aws:///a/b/i-1"},
		{"a NUL in the id", f, "ccmkit://i-1\x00"},
		{"a control character in the id", f, "ccmkit://i-\x1b[2J1"},
		{"a DEL in the id", f, "ccmkit://i-1\x7f"},
		{"a space inside the id", f, "ccmkit://i 1"},
		{"a tab around the id", f, "ccmkit://i-1\t"},
		{"a non-ASCII letter", f, "ccmkit://i-é1"},
		{"a non-ASCII space", f, "ccmkit://i-1 "},
		{"invalid UTF-8", f, "ccmkit://i-\xff"},
		{"a control character in the zone", zoned, "aws:///us-east-1a\x00/i-1"},
		{"longer than MaxLength", f, "ccmkit://" + strings.Repeat("i", providerid.MaxLength)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.format.Parse(tt.id)
			require.ErrorIs(t, err, providerid.ErrMalformed)
			assert.Contains(t, err.Error(), tt.format.String(), "the error names the expected format")
			assert.Less(t, len(err.Error()), 400, "the error quotes the ID cut to a bound")
			assert.NotContains(t, err.Error(), "\x00", "control characters are escaped")
		})
	}
}

func TestFormatRejectsBadValues(t *testing.T) {
	f, err := providerid.Compile("aws:///{zone}/{id}")
	require.NoError(t, err)
	_, err = f.Format(providerid.Fields{ID: "i-1"})
	assert.ErrorContains(t, err, "{zone}")
	_, err = f.Format(providerid.Fields{ID: "a/b", Zone: "z"})
	assert.ErrorContains(t, err, "{id}")
	_, err = f.Format(providerid.Fields{ID: "i-1", Zone: " z"})
	assert.ErrorContains(t, err, `{zone} value " z" must be non-empty and hold only printable ASCII characters other than "/" and the space`, "Parse would refuse it")
	_, err = f.Format(providerid.Fields{ID: "i-\x001", Zone: "z"})
	assert.ErrorContains(t, err, `{id} value "i-\x001"`, "Parse would refuse it")
	_, err = f.Format(providerid.Fields{ID: strings.Repeat("i", providerid.MaxLength), Zone: "z"})
	assert.ErrorContains(t, err, "more than 512", "Parse would refuse it")
	assert.True(t, f.Uses(providerid.FieldZone))
	assert.False(t, f.Uses(providerid.FieldName))

	var zero providerid.Format
	_, err = zero.Parse("ccmkit://i-1")
	assert.Error(t, err, "the zero Format refuses to parse instead of accepting anything")

	_, err = providerid.Compile("my cloud://{id}")
	assert.ErrorContains(t, err, "no printable ASCII character", "a template makes only IDs Parse accepts")
	_, err = providerid.Compile("mycloud://{id}\x00")
	assert.ErrorContains(t, err, `holds '\x00'`)
}
