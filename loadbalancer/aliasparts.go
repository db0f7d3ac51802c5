package loadbalancer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// The aliases that stand for several of ccmkit's parts at once (Alias.Parts): their
// declaration and their reading, part by part.

// converts reports whether a, an alias or nil (ccmkit's own key), reads a legacy value
// other than as written: with Convert or ConvertParts.
func (a *Alias) converts() bool {
	return a != nil && (a.Convert != nil || a.ConvertParts != nil)
}

// validateParts returns what is wrong with a, the i-th alias, declared with Parts or
// ConvertParts: each part one of ccmkit's annotations or a declared setting, once, with
// ConvertParts and Allowed, and neither Name nor Convert.
func (a *Alias) validateParts(i int, settings Settings) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("annotation alias %d (%q): %s", i, a.Key, fmt.Sprintf(format, args...)))
	}
	switch {
	case len(a.Parts) == 0:
		bad("ConvertParts needs Parts, the names of the annotations or settings it sets")
	case a.ConvertParts == nil:
		bad("Parts need ConvertParts, which turns the legacy value into theirs")
	}
	if a.Name != "" || a.Convert != nil {
		bad("Name and Convert are for a key that stands for one annotation; with Parts, leave them empty")
	}
	if a.Allowed == "" {
		bad("ConvertParts needs Allowed, which says what the legacy key takes")
	}
	for j, name := range a.Parts {
		switch _, ok := target(name, settings); {
		case !ok:
			bad("part %q is neither one of ccmkit's annotations nor a declared setting", name)
		case slices.Contains(a.Parts[:j], name):
			bad("part %q is named twice", name)
		}
	}
	return errs
}

// part returns the spelling of the annotation name (one of a.Parts) by a's key, whose
// value is v, and whether a's key sets name: it does when its converted value has name,
// and it sets each of its parts when its value cannot be converted (then the spelling
// says why, and no part of it is read).
func (a *Alias) part(name, v string) (spelling, bool) {
	s := spelling{key: a.Key, value: v, alias: a, name: name}
	parts, err := a.ConvertParts(strings.TrimSpace(v))
	if err != nil {
		s.partErr = err
		return s, true
	}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		if !slices.Contains(a.Parts, p) {
			s.partErr = fmt.Errorf("converts into %s, which is not one of its parts (%s)", quote.Value(p), strings.Join(a.Parts, ", "))
			return s, true
		}
	}
	part, ok := parts[name]
	s.part = part
	return s, ok
}

// distinct returns errs without repeats: an alias with Parts whose value cannot be
// converted is one error, not one per part.
func distinct(errs []*AnnotationError) []*AnnotationError {
	out := errs[:0:0]
	for _, e := range errs {
		if !slices.ContainsFunc(out, func(o *AnnotationError) bool { return o.Key == e.Key && o.Error() == e.Error() }) {
			out = append(out, e)
		}
	}
	return out
}
