package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccmkit/ccmkit/internal/quote"
)

// Aliases are the annotation keys of a cloud's earlier cloud-controller-manager that an
// adapter keeps working, so that the Services its users already have behave the same under
// ccmkit: each legacy key stands for one of ccmkit's annotations or one of the adapter's
// declared settings (Setting), and the keys under the legacy prefixes that no alias
// declares are reported as unknown, as under ccmkit's prefix.
//
// A Service with a legacy key alone behaves exactly as with the annotation it stands for
// and the converted value: the same checks, with errors naming the legacy key. A Service
// may carry several spellings of one annotation (ccmkit's key and aliases) when they
// agree once converted and read; when they disagree, the sync fails as for a malformed
// annotation (an *AnnotationError matching ErrConflictingAnnotations, naming both keys
// and both values) and a Warning event ConflictingAnnotations says so: ccmkit never
// guesses which one is meant.
type Aliases struct {
	// Prefixes are the key prefixes the earlier cloud-controller-manager owned, such as
	// "load-balancer.hetzner.cloud/" or "service.beta.kubernetes.io/do-loadbalancer-": a
	// key under one of them that Keys does not declare is a Warning event
	// UnknownAnnotation. Each is a DNS subdomain, "/" and the start of a name (perhaps
	// empty), and neither contains ccmkit's annotation prefix nor lies within it.
	// Optional: without them, only the declared keys are read.
	Prefixes []string
	// Keys are the legacy keys, in the order of the reference (Reference).
	Keys []Alias
	// Defaults are the earlier cloud-controller-manager's defaults (or its cloud's, where
	// it left a part to the cloud), by the name of ccmkit's annotation or declared setting
	// they stand for, each in that name's syntax: for example the health check interval
	// "15s" where ccmkit's default is 10s. A Service that spells any annotation with a
	// legacy key (one of Keys, or a key under Prefixes) reads them in place of ccmkit's
	// defaults where it sets the annotation with no key, so that a Service that was valid
	// under the earlier cloud-controller-manager is valid under ccmkit and means the same.
	// Optional.
	Defaults map[string]string
	// OwnerTag is the tag (in ccmkit's tag syntax, as the adapter maps it onto the cloud's)
	// the earlier cloud-controller-manager put on each load balancer it made for a
	// Service, with the Service's UID as its value, such as Hetzner's
	// "hcloud-ccm/service-uid". When set, a Service with no load balancer of ccmkit's
	// takes over the one so marked for its UID, found by one list filtered by the tag, as
	// it adopts one named by its load-balancer-id annotation: under the same ownership
	// rule, keeping its addresses and what its earlier owner set (see AnnotationLoadBalancerID).
	// Where a marked load balancer cannot be taken over (another owner's, addresses that
	// would change, several marked), ccmkit creates none: the Service's error matches
	// ErrTakeoverRefused and a Warning event TakeoverRefused says why. Empty: no list,
	// no takeover. It must not be one of ccmkit's tags (under "ccmkit.io/").
	OwnerTag string
}

// Alias is one legacy annotation key and what it stands for. Several keys may stand for
// one annotation (a cloud that renamed its own annotations once); a Service that sets
// more than one of them must set them alike.
type Alias struct {
	// Key is the whole legacy annotation key, for example
	// "load-balancer.hetzner.cloud/uses-proxyprotocol": a valid annotation key, not under
	// ccmkit's annotation prefix, declared once. Required.
	Key string
	// Name is what Key stands for: the name of one of ccmkit's annotations (after the
	// prefix, such as AnnotationProxyProtocol) or of a declared setting. Required.
	Name string
	// Convert, when set, turns a legacy value (trimmed of white space) into a value of
	// Name's syntax, which is then checked as Name's own, or returns what is wrong with
	// it: for example a legacy "tcp" into "TCP", "15" seconds into "15s", or a negated
	// boolean. It must be a pure function: ccmkit calls it on every sync and compares
	// its results. Nil: the legacy value is read as Name's value.
	Convert func(value string) (string, error)
	// Allowed says what values Key takes, for errors and the reference; required with
	// Convert and ConvertParts. Empty without them means Name's.
	Allowed string
	// Parts, in place of Name and Convert, make Key stand for several of ccmkit's parts
	// at once, or for a meaning that differs from that of ccmkit's key of the same name:
	// the names of the annotations and declared settings its value may set, for example
	// AnnotationPortProtocols for a legacy "tls-ports" that meant HTTPS to the load
	// balancer and HTTP to the targets (ccmkit's tls-ports makes an HTTP port HTTPS, but
	// a TCP port TLS). Each is one of ccmkit's annotations or a declared setting, once.
	Parts []string
	// ConvertParts, required with Parts, turns a legacy value (trimmed of white space)
	// into the values of the parts it sets, by name, each in that name's syntax, or
	// returns what is wrong with it: the Service reads each exactly as if it had written
	// it under ccmkit's key, so that the value is checked as that annotation's and
	// disagrees with ccmkit's own key of the same part as two spellings of one annotation
	// do (ErrConflictingAnnotations). A part it leaves out is not set by Key. It must be a
	// pure function, as Convert. The admission policy cannot read such a key: it is
	// checked at sync time only (AdmissionPolicySyncOnlyAnnotation).
	ConvertParts func(value string) (map[string]string, error)
}

// ErrConflictingAnnotations is matched (errors.Is) by the *AnnotationError of a Service
// that spells one annotation twice (its key under the prefix and an alias, or two
// aliases) with values that disagree.
var ErrConflictingAnnotations = errors.New("conflicting annotations")

// Validate reports every problem of the declarations at once, for ccmkit's annotation
// prefix (DefaultAnnotationPrefix when empty) and the adapter's settings: a key that is
// not a valid annotation key, under the prefix, or declared twice; a Name that is neither
// one of ccmkit's annotations nor a declared setting; Convert without Allowed; a legacy
// prefix that is malformed, declared twice, or overlaps the annotation prefix.
func (as Aliases) Validate(prefix string, settings Settings) error {
	if prefix == "" {
		prefix = DefaultAnnotationPrefix
	}
	var errs []error
	seen := map[string]bool{}
	for i, p := range as.Prefixes {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("legacy annotation prefix %d (%q): %s", i, p, fmt.Sprintf(format, args...)))
		}
		dns, _, slash := strings.Cut(p, "/")
		switch {
		case !slash || len(validation.IsDNS1123Subdomain(dns)) > 0 || len(validation.IsQualifiedName(strings.ToLower(p+"x"))) > 0:
			bad("must be a DNS subdomain, \"/\" and the start of a name, like \"load-balancer.example.com/\"")
		case strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p):
			bad("overlaps ccmkit's annotation prefix %q: a key would be read twice", prefix)
		case seen[p]:
			bad("declared twice")
		}
		seen[p] = true
	}
	seen = map[string]bool{}
	for i, a := range as.Keys {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("annotation alias %d (%q): %s", i, a.Key, fmt.Sprintf(format, args...)))
		}
		switch msgs := validation.IsQualifiedName(strings.ToLower(a.Key)); {
		case len(msgs) > 0:
			bad("not a valid annotation key: %s", strings.Join(msgs, "; "))
		case strings.HasPrefix(a.Key, prefix):
			bad("is under ccmkit's annotation prefix %q: it is read as ccmkit's own", prefix)
		case seen[a.Key]:
			bad("declared twice")
		}
		seen[a.Key] = true
		if a.Parts != nil || a.ConvertParts != nil {
			errs = append(errs, a.validateParts(i, settings)...)
			continue
		}
		if _, ok := target(a.Name, settings); !ok {
			bad("%q is neither one of ccmkit's annotations nor a declared setting", a.Name)
		}
		if a.Convert != nil && a.Allowed == "" {
			bad("Convert needs Allowed, which says what the legacy key takes")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(as.Defaults)) {
		if err := checkDefault(name, as.Defaults[name], settings); err != nil {
			errs = append(errs, fmt.Errorf("alias default %q: %w", name, err))
		}
	}
	if strings.HasPrefix(as.OwnerTag, "ccmkit.io/") || strings.TrimSpace(as.OwnerTag) != as.OwnerTag {
		errs = append(errs, fmt.Errorf("owner tag %q: must be the earlier cloud-controller-manager's tag, without white space around it and not one of ccmkit's (under \"ccmkit.io/\")", as.OwnerTag))
	}
	return errors.Join(errs...)
}

// Reference returns the aliases' annotation reference as a Markdown table, the same
// columns as ccmkit's own, each alias naming the annotation it stands for under prefix
// (DefaultAnnotationPrefix when empty), followed by a sentence on the legacy prefixes:
// an adapter's README carries it and a test checks it, as with Settings.Reference.
func (as Aliases) Reference(prefix string, settings Settings) string {
	if prefix == "" {
		prefix = DefaultAnnotationPrefix
	}
	rows := make([][4]string, 0, len(as.Keys))
	for _, a := range as.Keys {
		values := a.Allowed
		if values == "" {
			values, _ = target(a.Name, settings)
		}
		if a.Parts != nil {
			parts := prefix + strings.Join(a.Parts, ", "+prefix)
			rows = append(rows, [4]string{a.Key, values, "those of " + parts,
				"Read as what its value converts into, of " + parts + "; set both only alike."})
			continue
		}
		doc := "Read as " + prefix + a.Name
		if a.Convert != nil {
			doc += ", its value converted"
		}
		doc += "; set both only alike."
		rows = append(rows, [4]string{a.Key, values, "that of " + prefix + a.Name, doc})
	}
	out := referenceTable(rows)
	if len(as.Prefixes) > 0 {
		out += fmt.Sprintf("\nAny other key under %s is reported as unknown (a Warning event UnknownAnnotation).\n",
			"`"+strings.Join(as.Prefixes, "`, `")+"`")
	}
	return out
}

// target returns what values the annotation or setting name allows, and whether it is
// one of ccmkit's annotations or a setting of settings.
func target(name string, settings Settings) (allowed string, ok bool) {
	for _, an := range annotationTable() {
		if an.Name == name {
			return an.Values, true
		}
	}
	for _, s := range settings {
		if s.Name == name {
			return s.allowed(), true
		}
	}
	return "", false
}

// spelling is one key of a Service that sets an annotation: its key under the prefix, or
// an alias of it.
type spelling struct {
	key, value string // as written
	alias      *Alias // nil for the key under the prefix
	// name, part and partErr are those of an alias with Parts: the annotation this
	// spelling sets and its value as converted, or what is wrong with the legacy value.
	name, part string
	partErr    error
}

// spellings returns the keys of annotations that set the annotation or setting name:
// its key under prefix first, then its aliases in declaration order.
func (as Aliases) spellings(prefix, name string, annotations map[string]string) []spelling {
	var out []spelling
	if v, ok := annotations[prefix+name]; ok {
		out = append(out, spelling{key: prefix + name, value: v})
	}
	for i := range as.Keys {
		a := &as.Keys[i]
		v, ok := annotations[a.Key]
		switch {
		case !ok:
		case a.Name == name:
			out = append(out, spelling{key: a.Key, value: v, alias: a})
		case slices.Contains(a.Parts, name):
			if s, sets := a.part(name, v); sets {
				out = append(out, s)
			}
		}
	}
	return out
}

// read returns the value of s in the syntax of the annotation it sets, trimmed: its
// legacy value converted, or what is wrong with it as an *AnnotationError naming s's key
// (allowed: what the annotation allows).
func (s spelling) read(allowed string) (string, *AnnotationError) {
	v := strings.TrimSpace(s.value)
	if s.partErr != nil {
		return "", &AnnotationError{Key: s.key, Value: s.value, Allowed: s.allowed(allowed), Err: s.partErr}
	}
	if s.name != "" {
		return strings.TrimSpace(s.part), nil
	}
	if s.alias == nil || s.alias.Convert == nil {
		return v, nil
	}
	c, err := s.alias.Convert(v)
	if err != nil {
		return "", &AnnotationError{Key: s.key, Value: s.value, Allowed: s.allowed(allowed), Err: err}
	}
	return strings.TrimSpace(c), nil
}

// allowed says what values s's key takes: its alias's Allowed, else the annotation's.
func (s spelling) allowed(annotation string) string {
	if s.alias != nil && s.alias.Allowed != "" {
		return s.alias.Allowed
	}
	return annotation
}

// invalid is the *AnnotationError of s, whose value read as v (its converted value), for
// err, what the annotation's check says of v.
func (s spelling) invalid(v, allowed string, err error) *AnnotationError {
	switch {
	case s.name != "":
		err = fmt.Errorf("read as %s %s: %w", s.name, quote.Value(v), err)
	case s.alias.converts():
		err = fmt.Errorf("read as %s: %w", quote.Value(v), err)
	}
	return &AnnotationError{Key: s.key, Value: s.value, Allowed: s.allowed(allowed), Err: err}
}

// conflict is the *AnnotationError of s, whose value disagrees with first's: both
// spellings of the annotation name under prefix.
func (s spelling) conflict(first spelling, prefix, name, allowed string) *AnnotationError {
	return &AnnotationError{Key: s.key, Value: s.value, Allowed: s.allowed(allowed),
		Err: fmt.Errorf("%w: annotation %s is %s, and both set %s%s; remove one, or set them alike",
			ErrConflictingAnnotations, first.key, quote.Value(first.value), prefix, name)}
}

// known reports whether key is declared as an alias.
func (as Aliases) known(key string) bool {
	for _, a := range as.Keys {
		if a.Key == key {
			return true
		}
	}
	return false
}

// legacy reports whether key is under one of the legacy prefixes.
func (as Aliases) legacy(key string) bool {
	for _, p := range as.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// inUse reports whether annotations spell any annotation with a legacy key: a key of an
// alias or under a legacy prefix. Such a Service reads the aliases' Defaults.
func (as Aliases) inUse(annotations map[string]string) bool {
	for k := range annotations {
		if as.known(k) || as.legacy(k) {
			return true
		}
	}
	return false
}

// checkDefault reports what is wrong with v as the alias default of name: name must be
// one of ccmkit's annotations (a declared setting has its own default, Setting.Default),
// and v a value it takes.
func checkDefault(name, v string, settings Settings) error {
	for _, an := range annotationTable() {
		if an.Name == name {
			var a parsedAnnotations
			if err := an.apply(v, &a); err != nil {
				return fmt.Errorf("%s is not a value of annotation %s (allowed: %s): %w", quote.Value(v), name, an.Values, err)
			}
			return nil
		}
	}
	if _, ok := target(name, settings); ok {
		return fmt.Errorf("%q is a declared setting: give its default in the Setting (Default), not among the aliases' defaults", name)
	}
	return fmt.Errorf("%q is not one of ccmkit's annotations", name)
}
