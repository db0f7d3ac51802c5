package quote

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "ab\x00c", `"ab\x00c"`},
		{"at the bound", strings.Repeat("a", MaxBytes), `"` + strings.Repeat("a", MaxBytes) + `"`},
		{"past the bound", strings.Repeat("a", MaxBytes+5), `"` + strings.Repeat("a", MaxBytes) + `"… (5 more bytes)`},
		{"cut on a rune boundary", strings.Repeat("a", MaxBytes-1) + "é", `"` + strings.Repeat("a", MaxBytes-1) + `"… (2 more bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Bounded(tc.in))
		})
	}
}
