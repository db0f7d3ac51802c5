package providerid_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/providerid"
)

// templatesInUse are the provider ID templates of the repository and its documentation:
// the default of the built-in provider, the REST adapter's default, and the migration
// examples.
var templatesInUse = []string{
	"ccmkit://{id}",
	"restcloud://{id}",
	"aws:///{zone}/{id}",
	"gce://my-project/{zone}/{id}",
	"gce://my-project/{zone}/{name}/{id}",
	"mycloud://{region}/{id}",
}

// FuzzParse parses arbitrary provider IDs with every template in use: no panic, an error
// is ErrMalformed, and whatever parses is printable ASCII without a space, at most
// MaxLength bytes, and formats back to the same ID.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"ccmkit://i-1", "restcloud://7", "aws:///us-east-1a/i-1", "", "ccmkit://", "ccmkit://a/b",
		"gce://my-project/z/n/1", "gce://my-project/z/1", "mycloud://eu/7", "ccmkit:// i-1", "aws:////i-1",
		"ccmkit://i-1\x00", "ccmkit://i\t1", "ccmkit://i-\u00e9", "aws:///z\x7f/i-1"} {
		f.Add(s)
	}
	formats := compileAll(f, templatesInUse)
	f.Fuzz(func(t *testing.T, id string) {
		for _, format := range formats {
			fields, err := format.Parse(id)
			if err != nil {
				require.ErrorIs(t, err, providerid.ErrMalformed)
				continue
			}
			require.NotEmpty(t, fields.ID)
			requirePrintable(t, id)
			again, err := format.Format(fields)
			require.NoError(t, err, "%s: parsed %q", format, id)
			require.Equal(t, id, again, "%s", format)
		}
	})
}

// FuzzFormat formats arbitrary fields with every template in use and with an arbitrary
// template: no panic, and whatever formats parses back to the same fields (those the
// template uses).
func FuzzFormat(f *testing.F) {
	f.Add("x://{id}", "i-1", "eu-1a", "eu-1", "node-a")
	f.Add("x://{region}/{zone}/{name}/{id}/", "i-1", "z", "r", "n")
	f.Add("x://{id}", "a b", "", "", "")
	formats := compileAll(f, templatesInUse)
	f.Fuzz(func(t *testing.T, template, id, zone, region, name string) {
		all := formats
		if extra, err := providerid.Compile(template); err == nil {
			all = append(all[:len(all):len(all)], extra)
		}
		fields := providerid.Fields{ID: id, Zone: zone, Region: region, Name: name}
		for _, format := range all {
			s, err := format.Format(fields)
			if err != nil {
				continue
			}
			requirePrintable(t, s)
			back, err := format.Parse(s)
			require.NoError(t, err, "%s: formatted %+v as %q", format, fields, s)
			want := providerid.Fields{ID: id}
			if format.Uses(providerid.FieldZone) {
				want.Zone = zone
			}
			if format.Uses(providerid.FieldRegion) {
				want.Region = region
			}
			if format.Uses(providerid.FieldName) {
				want.Name = name
			}
			require.Equal(t, want, back, "%s: %q", format, s)
		}
	})
}

// requirePrintable fails unless id is a provider ID of printable ASCII characters other
// than the space, at most MaxLength bytes long.
func requirePrintable(t *testing.T, id string) {
	t.Helper()
	require.LessOrEqual(t, len(id), providerid.MaxLength)
	for i := range len(id) {
		require.True(t, '!' <= id[i] && id[i] <= '~', "%q: byte %d is not printable ASCII", id, i)
	}
}

func compileAll(f *testing.F, templates []string) []providerid.Format {
	var formats []providerid.Format
	for _, tmpl := range templates {
		format, err := providerid.Compile(tmpl)
		if err != nil {
			f.Fatal(err)
		}
		formats = append(formats, format)
	}
	return formats
}
