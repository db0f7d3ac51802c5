package quote

import (
	"fmt"
	"strconv"
)

// MaxRunes is how many runes of a value Value quotes: enough for a certificate ARN or a
// long hostname's labels, not for a pasted file.
const MaxRunes = 128

// MaxTextRunes is how many runes of a message Text keeps: room for a few values quoted by
// Value and the words around them.
const MaxTextRunes = 4 * MaxRunes

// Value returns v quoted as %q quotes it; when v is longer than MaxRunes runes, only its
// first MaxRunes are quoted, followed by "… (N bytes)", N being v's length, so that the
// reader sees it was cut.
func Value(v string) string {
	head, cut := prefix(v, MaxRunes)
	if !cut {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%q… (%d bytes)", head, len(v))
}

// Text returns s, a message that may hold a value someone typed, or such a value for a
// log line (whose logger quotes it); when s is longer than
// MaxTextRunes runes, its first MaxTextRunes followed by "… (N bytes)", N being s's length.
func Text(s string) string {
	head, cut := prefix(s, MaxTextRunes)
	if !cut {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", head, len(s))
}

// prefix returns the first n runes of s, and whether s has more.
func prefix(s string, n int) (string, bool) {
	runes := 0
	for i := range s {
		if runes == n {
			return s[:i], true
		}
		runes++
	}
	return s, false
}
