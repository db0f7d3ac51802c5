package quote_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/internal/quote"
)

func TestValue(t *testing.T) {
	long := strings.Repeat("x", 10240)
	runes := strings.Repeat("é", quote.MaxRunes+1) // two bytes a rune: cut at a rune, never inside one
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"short, quoted as %q", "a\"b\n", `"a\"b\n"`},
		{"exactly MaxRunes", strings.Repeat("y", quote.MaxRunes), `"` + strings.Repeat("y", quote.MaxRunes) + `"`},
		{"10 KB", long, `"` + strings.Repeat("x", quote.MaxRunes) + `"… (10240 bytes)`},
		{"multi-byte runes", runes, `"` + strings.Repeat("é", quote.MaxRunes) + `"… (258 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, quote.Value(tc.in))
		})
	}
}

func TestText(t *testing.T) {
	assert.Equal(t, "short", quote.Text("short"))
	got := quote.Text(strings.Repeat("z", 10240))
	assert.Equal(t, strings.Repeat("z", quote.MaxTextRunes)+"… (10240 bytes)", got)
}
