package provider

import (
	"fmt"
)

const redacted = "[redacted]"

// Secret is a credential. It never prints: every fmt verb, YAML and JSON encoding show
// "[redacted]" (or nothing when empty), so a Config can be logged or wrapped into errors
// without leaking it. Reveal returns the value for the one place that needs it.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns the redacted form for %#v.
func (s Secret) GoString() string { return fmt.Sprintf("provider.Secret(%q)", s.String()) }

// Format prints the redacted form for every verb.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		_, _ = fmt.Fprintf(f, "%q", s.String())
	case 'v':
		if f.Flag('#') {
			_, _ = f.Write([]byte(s.GoString()))
			return
		}
		_, _ = f.Write([]byte(s.String()))
	default:
		_, _ = f.Write([]byte(s.String()))
	}
}

// MarshalYAML encodes the redacted form.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalJSON encodes the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", s.String()), nil }
