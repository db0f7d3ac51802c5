package loadbalancer

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// AnnotationError is a malformed annotation value. Its message names the annotation, the
// value and what is allowed; the service controller shows it in a Warning event and logs
// it on every retry, so the message quotes a long value only in part (its first
// quote.MaxRunes runes and its length) and cuts a long reason likewise.
type AnnotationError struct {
	// Key is the whole annotation key.
	Key string
	// Value is the value found, whole.
	Value string
	// Allowed says what values are allowed.
	Allowed string
	// Err is what is wrong with Value.
	Err error
}

func (e *AnnotationError) Error() string {
	reason := "malformed"
	if e.Err != nil {
		reason = quote.Text(e.Err.Error())
	}
	return fmt.Sprintf("annotation %s: %s: %s (allowed: %s)", e.Key, quote.Value(e.Value), reason, e.Allowed)
}

func (e *AnnotationError) Unwrap() error { return e.Err }

// parseAnnotations parses every annotation the LoadBalancer reads: ccmkit's own and the
// adapter's declared settings decls under prefix, each also as its aliases spell it. It is
// the one reading of a Service's annotations. It returns every malformed value and every
// disagreement between two spellings of one annotation at once (each an *AnnotationError
// naming the key the Service has; the annotation is then not read), and the keys under
// prefix or a legacy prefix that nothing reads (probable typos), sorted.
func parseAnnotations(prefix string, decls Settings, aliases Aliases, annotations map[string]string) (parsedAnnotations, []string, []*AnnotationError) {
	var a parsedAnnotations
	var errs []*AnnotationError
	written := func(name string, sps []spelling) {
		if len(sps) > 0 {
			if a.keys == nil {
				a.keys = map[string]spelling{}
			}
			a.keys[name] = sps[0]
		}
	}
	legacy := aliases.inUse(annotations)
	for _, an := range annotationTable() {
		sps := aliases.spellings(prefix, an.Name, annotations)
		written(an.Name, sps)
		if v, ok := aliases.Defaults[an.Name]; ok && legacy && len(sps) == 0 {
			_ = an.apply(v, &a) // Aliases.Validate checked it
		}
		parsed, ok, aerrs := readSpellings(sps, prefix, an.Name, an.Values, func(v string) (parsedAnnotations, error) {
			p := a
			err := an.apply(v, &p)
			return p, err
		}, sameParsed)
		errs = append(errs, aerrs...)
		if ok {
			a = parsed
		}
		if len(aerrs) > 0 && an.Name == AnnotationNodeSelector {
			a.nodeSelectorBad = true // the targets then stay as they are
		}
	}
	for _, d := range decls {
		sps := aliases.spellings(prefix, d.Name, annotations)
		written(d.Name, sps)
		canon, ok, derrs := readSpellings(sps, prefix, d.Name, d.allowed(), d.parse, func(x, y string) bool { return x == y })
		errs = append(errs, derrs...)
		if !ok {
			continue
		}
		if a.adapterValues == nil {
			a.adapterValues = map[string]string{}
		}
		a.adapterValues[d.Name] = canon
	}
	var unknown []string
	for k := range annotations {
		if name, ok := strings.CutPrefix(k, prefix); (ok && !annotationNames()[name] && !decls.declared(name)) || (!ok && aliases.legacy(k) && !aliases.known(k)) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return a, unknown, distinct(errs)
}

// readSpellings reads sps, the spellings of the annotation name under prefix, which allows
// allowed: each value converted (an alias's Convert) and checked by parse. It returns the
// value they agree on (same) and true, or false when none is set, one is malformed or two
// disagree; each malformed or disagreeing spelling is an error naming its key.
func readSpellings[T any](sps []spelling, prefix, name, allowed string, parse func(string) (T, error), same func(x, y T) bool) (T, bool, []*AnnotationError) {
	var got, zero T
	var errs []*AnnotationError
	first := -1
	for i, s := range sps {
		v, err := s.read(allowed)
		if err == nil {
			x, perr := parse(v)
			switch {
			case perr != nil:
				err = s.invalid(v, allowed, perr)
			case first < 0:
				first, got = i, x
			case !same(got, x):
				err = s.conflict(sps[first], prefix, name, allowed)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if first < 0 || len(errs) > 0 {
		return zero, false, errs
	}
	return got, true, nil
}

// sameParsed reports whether x and y, one annotation read from two spellings into the
// same parsedAnnotations, have the same effect: node selectors compare as written
// canonically.
func sameParsed(x, y parsedAnnotations) bool {
	sx, sy := x.nodeSelector, y.nodeSelector
	x.nodeSelector, y.nodeSelector = nil, nil
	return reflect.DeepEqual(x, y) && (sx == nil) == (sy == nil) && (sx == nil || sx.String() == sy.String())
}

// key returns the key the Service spells the annotation name with (an alias, or its key
// under prefix), for messages: the key under prefix when the Service has none.
func (a parsedAnnotations) key(prefix, name string) string {
	if s, ok := a.keys[name]; ok {
		return s.key
	}
	return prefix + name
}

// setTo says, for advice to set the annotation name to value (in the syntax of its key
// under prefix), which key to set to what: the key the Service spells it with.
func (a parsedAnnotations) setTo(prefix, name, value string) string {
	if s, ok := a.keys[name]; ok && s.alias.converts() {
		return fmt.Sprintf("%s to the value that means %s%s %s", s.key, prefix, name, value)
	}
	return fmt.Sprintf("%s to %s", a.key(prefix, name), value)
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

func parseInt(v string, lo, hi int) (int32, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("not a whole number from %d to %d", lo, hi)
	}
	return int32(n), nil
}

// The range of the health check's durations.
const minDuration, maxDuration = time.Second, 5 * time.Minute

func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < minDuration || d > maxDuration {
		return 0, errors.New("not a duration from 1s to 5m")
	}
	return d, nil
}
