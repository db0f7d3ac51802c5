package providerid

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// ErrMalformed is matched (errors.Is) by every parse error: the provider ID does not have
// the configured format.
var ErrMalformed = errors.New("malformed provider ID")

// MaxLength is the longest provider ID, in bytes, that Parse accepts and Format makes.
// Real ones are far shorter (an Azure scale set's, among the longest, is under 300).
const MaxLength = 512

// The placeholders a template may hold. {id} is required and must occur once; the others
// may occur at most once each.
const (
	// FieldID is the instance's cloud ID.
	FieldID = "id"
	// FieldZone is the instance's zone.
	FieldZone = "zone"
	// FieldRegion is the instance's region.
	FieldRegion = "region"
	// FieldName is the instance's name.
	FieldName = "name"
)

// Fields are the values a provider ID carries. Only ID is needed to find an instance;
// the others are what a template may include.
type Fields struct {
	// ID is the instance's cloud ID.
	ID string
	// Zone is the instance's zone, when the template includes {zone}.
	Zone string
	// Region is the instance's region, when the template includes {region}.
	Region string
	// Name is the instance's name, when the template includes {name}.
	Name string
}

func (f Fields) get(name string) string {
	switch name {
	case FieldZone:
		return f.Zone
	case FieldRegion:
		return f.Region
	case FieldName:
		return f.Name
	}
	return f.ID
}

func (f *Fields) set(name, v string) {
	switch name {
	case FieldZone:
		f.Zone = v
	case FieldRegion:
		f.Region = v
	case FieldName:
		f.Name = v
	default:
		f.ID = v
	}
}

// segment is either literal text or a placeholder.
type segment struct {
	literal string
	field   string
}

// Format is a compiled provider ID template. The zero value is not usable; use Default
// or Compile. A Format is immutable and safe for concurrent use.
type Format struct {
	template string
	segments []segment
}

// Default returns the format "<providerName>://{id}".
func Default(providerName string) (Format, error) {
	return Compile(providerName + "://{" + FieldID + "}")
}

// Compile compiles a template such as "mycloud://{id}" or "aws:///{zone}/{id}". The
// template must start with a scheme ("name://"), contain {id} exactly once, use only the
// placeholders {id}, {zone}, {region} and {name}, each at most once, and have a "/" in the
// text that follows a placeholder (values never contain "/"), so that a provider ID parses
// in exactly one way.
func Compile(template string) (Format, error) {
	if i := strings.IndexFunc(template, func(r rune) bool { return !graphic(r) }); i >= 0 {
		return Format{}, fmt.Errorf("provider ID template %s: holds %q, which is no printable ASCII character other than a space", quote.Value(template), []rune(template[i:])[0])
	}
	scheme, _, ok := strings.Cut(template, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "{}/") {
		return Format{}, fmt.Errorf("provider ID template %q: must start with a scheme such as \"mycloud://\"", template)
	}
	var segs []segment
	seen := map[string]bool{}
	rest := template
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.ContainsRune(rest, '}') {
				return Format{}, fmt.Errorf("provider ID template %q: unmatched \"}\"", template)
			}
			segs = append(segs, segment{literal: rest})
			break
		}
		if open > 0 {
			if strings.ContainsRune(rest[:open], '}') {
				return Format{}, fmt.Errorf("provider ID template %q: unmatched \"}\"", template)
			}
			segs = append(segs, segment{literal: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return Format{}, fmt.Errorf("provider ID template %q: unmatched \"{\"", template)
		}
		name := rest[open+1 : open+end]
		switch name {
		case FieldID, FieldZone, FieldRegion, FieldName:
		default:
			return Format{}, fmt.Errorf("provider ID template %q: unknown placeholder {%s}; allowed are {id}, {zone}, {region}, {name}", template, name)
		}
		if seen[name] {
			return Format{}, fmt.Errorf("provider ID template %q: placeholder {%s} appears twice", template, name)
		}
		seen[name] = true
		if len(segs) > 0 && segs[len(segs)-1].field != "" {
			return Format{}, fmt.Errorf("provider ID template %q: placeholders {%s} and {%s} need a \"/\" between them", template, segs[len(segs)-1].field, name)
		}
		segs = append(segs, segment{field: name})
		rest = rest[open+end+1:]
	}
	for i := 1; i < len(segs); i++ {
		if segs[i-1].field != "" && !strings.ContainsRune(segs[i].literal, '/') {
			return Format{}, fmt.Errorf("provider ID template %q: the text %q after {%s} must contain a \"/\", so that values split in exactly one way", template, segs[i].literal, segs[i-1].field)
		}
	}
	if !seen[FieldID] {
		return Format{}, fmt.Errorf("provider ID template %q: must contain {id}", template)
	}
	return Format{template: template, segments: segs}, nil
}

// String returns the template.
func (f Format) String() string { return f.template }

// Uses reports whether the template includes the placeholder field (for example
// FieldZone).
func (f Format) Uses(field string) bool {
	for _, s := range f.segments {
		if s.field == field {
			return true
		}
	}
	return false
}

// Format returns the provider ID for fields. Every placeholder of the template must have
// a non-empty value of printable ASCII characters other than "/" (the separator of
// provider ID paths) and the space, and the ID must be at most MaxLength bytes: what Parse
// accepts, so that every provider ID Format makes parses.
func (f Format) Format(fields Fields) (string, error) {
	if len(f.segments) == 0 {
		return "", errors.New("provider ID format is not initialized")
	}
	var b strings.Builder
	for _, s := range f.segments {
		if s.field == "" {
			b.WriteString(s.literal)
			continue
		}
		v := fields.get(s.field)
		if !validValue(v) {
			return "", fmt.Errorf("provider ID %q: {%s} value %s must be non-empty and hold only printable ASCII characters other than \"/\" and the space", f.template, s.field, quote.Value(v))
		}
		b.WriteString(v)
	}
	if b.Len() > MaxLength {
		return "", fmt.Errorf("provider ID %q: %s is %d bytes long, more than %d", f.template, quote.Value(b.String()), b.Len(), MaxLength)
	}
	return b.String(), nil
}

// Parse returns the fields of providerID. An ID that does not have the format's shape, or
// is longer than MaxLength, or has a value with a character other than printable ASCII
// (a control character, a space, a non-ASCII letter), is an error matching ErrMalformed
// that quotes the ID (cut to a bound) and the expected template.
func (f Format) Parse(providerID string) (Fields, error) {
	var out Fields
	if len(f.segments) == 0 {
		return out, errors.New("provider ID format is not initialized")
	}
	if len(providerID) > MaxLength {
		return Fields{}, fmt.Errorf("%w: %s is %d bytes long, more than any provider ID (%d) of the configured format %q", ErrMalformed, quote.Value(providerID), len(providerID), MaxLength, f.template)
	}
	rest := providerID
	for i, s := range f.segments {
		if s.field == "" {
			if !strings.HasPrefix(rest, s.literal) {
				return Fields{}, f.malformed(providerID)
			}
			rest = rest[len(s.literal):]
			continue
		}
		var v string
		if i+1 < len(f.segments) {
			next := f.segments[i+1].literal
			j := strings.Index(rest, next)
			if j < 0 {
				return Fields{}, f.malformed(providerID)
			}
			v, rest = rest[:j], rest[j:]
		} else {
			v, rest = rest, ""
		}
		if !validValue(v) {
			return Fields{}, f.malformed(providerID)
		}
		out.set(s.field, v)
	}
	if rest != "" {
		return Fields{}, f.malformed(providerID)
	}
	return out, nil
}

// InstanceID returns the instance ID of providerID; see Parse.
func (f Format) InstanceID(providerID string) (string, error) {
	fields, err := f.Parse(providerID)
	return fields.ID, err
}

// validValue reports whether v may be the value of a placeholder: not empty, printable
// ASCII characters other than "/" and the space only.
func validValue(v string) bool {
	return v != "" && !strings.ContainsFunc(v, func(r rune) bool { return r == '/' || !graphic(r) })
}

// graphic reports whether r is a printable ASCII character other than the space.
func graphic(r rune) bool { return '!' <= r && r <= '~' }

func (f Format) malformed(providerID string) error {
	return fmt.Errorf("%w: %s does not have the configured format %q", ErrMalformed, quote.Value(providerID), f.template)
}
