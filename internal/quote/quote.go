// Package quote quotes a value that comes from outside ccmkit (a cloud's answer, a Node's
// provider ID) in an error or event message, cut to a bound, so that a hostile or broken
// value cannot make a message of any size.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxBytes is how many bytes of a value Bounded quotes.
const MaxBytes = 128

// Bounded returns s quoted as strconv.Quote does (control characters escaped), cut after
// its first MaxBytes bytes (on a rune boundary) with the number of bytes left out.
func Bounded(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", strconv.Quote(s[:cut]), len(s)-cut)
}
