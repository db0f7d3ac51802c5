package loadbalancer

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/internal/quote"
)

// Setting is a load balancer setting that an adapter declares for its cloud, such as a
// size or an algorithm: ccmkit reads it from the Service annotation Name under the
// annotation prefix, checks it like its own annotations, and hands the adapter its
// canonical value in cloudapi.LoadBalancerSpec.SettingValues[Name]. The adapter never sees the
// Service.
type Setting struct {
	// Name is the setting's name: the key in cloudapi.LoadBalancerSpec.SettingValues and the
	// annotation's key after the prefix, for example "size". A DNS label (lower-case
	// letters, digits and '-'), not one of ccmkit's own annotations. Required.
	Name string
	// Values are the allowed values, each in its canonical spelling; an annotation value
	// matches one ignoring case and surrounding white space, and the spec carries the
	// canonical one. Values are compared as text ("01" is not "1"): for numbers, use Parse
	// and return the number's canonical spelling. Set Values or Parse.
	Values []string
	// Parse, instead of Values, checks a value (trimmed of white space) and returns its
	// canonical form, or an error saying what is wrong with it. It must be a pure
	// function: ccmkit calls it on every sync and compares its results.
	Parse func(value string) (string, error)
	// Allowed says what Parse allows, for errors and the reference; required with Parse.
	// With Values it is generated ("small, medium, large").
	Allowed string
	// Default is the value a Service without the annotation gets, unless the cloud config's
	// loadBalancer.settings sets another. Empty means none: the spec then carries no value
	// and the cloud uses its own default. A non-empty Default must be allowed.
	Default string
	// Doc says what the setting does, for the reference.
	Doc string
	// Replace is true when the cloud cannot change the setting of an existing load
	// balancer: a changed value then replaces the load balancer (a new one, with a new
	// address), as the internal annotation does, and is refused where ccmkit replaces none
	// (keep-on-delete, load-balancer-id). Only a value the Service's annotation asks for
	// replaces: without the annotation a load balancer keeps the value it has, whatever
	// the default, and a value the cloud does not report or Parse cannot read never
	// causes a replacement. False: a change is one in-place update.
	Replace bool
	// ServiceOnly, when not empty, keeps the setting to a Service's annotation: the cloud
	// config's loadBalancer.settings may not set it, and the text says what to do
	// instead, for the error. For a setting that excludes another (a location and a
	// network zone): a default merged into every Service would stop a Service from
	// asking for the other. It takes no Default.
	ServiceOnly string
}

// Settings are the load balancer settings an adapter declares.
type Settings []Setting

var settingNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate reports every problem of the declarations at once: a name that is empty, no DNS
// label, declared twice or one of ccmkit's own annotations; neither or both of Values and
// Parse; Parse without Allowed; duplicate or empty values; a default that is not allowed,
// or set beside ServiceOnly.
func (ss Settings) Validate() error {
	own := map[string]bool{}
	for _, a := range annotationTable() {
		own[a.Name] = true
	}
	var errs []error
	seen := map[string]bool{}
	for i, s := range ss {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("load balancer setting %d (%q): %s", i, s.Name, fmt.Sprintf(format, args...)))
		}
		switch {
		case !settingNameRE.MatchString(s.Name):
			bad("the name must be a DNS label: 1-63 lower-case letters, digits and '-'")
		case own[s.Name]:
			bad("the name is one of ccmkit's own annotations; choose another")
		case seen[s.Name]:
			bad("declared twice")
		}
		seen[s.Name] = true
		switch {
		case len(s.Values) == 0 && s.Parse == nil:
			bad("set Values or Parse")
		case len(s.Values) > 0 && s.Parse != nil:
			bad("set Values or Parse, not both")
		case s.Parse != nil && s.Allowed == "":
			bad("Parse needs Allowed, which says what it allows")
		}
		lower := map[string]bool{}
		for _, v := range s.Values {
			if v == "" || v != strings.TrimSpace(v) || lower[strings.ToLower(v)] {
				bad("value %q is empty, has surrounding white space, or is listed twice (ignoring case)", v)
			}
			lower[strings.ToLower(v)] = true
		}
		if s.Default != "" && s.ServiceOnly != "" {
			bad("a ServiceOnly setting takes no Default")
		}
		if s.Default != "" && (len(s.Values) > 0) != (s.Parse != nil) {
			if canon, err := s.parse(s.Default); err != nil {
				bad("the default %q is not allowed: %v", s.Default, err)
			} else if canon != s.Default {
				bad("the default %q is not canonical: write %q", s.Default, canon)
			}
		}
	}
	return errors.Join(errs...)
}

// allowed says what values s allows.
func (s Setting) allowed() string {
	if s.Parse != nil {
		return s.Allowed
	}
	return strings.Join(s.Values, ", ")
}

// parse returns the canonical form of v (trimmed), or what is wrong with it.
func (s Setting) parse(v string) (string, error) {
	v = strings.TrimSpace(v)
	if s.Parse != nil {
		return s.Parse(v)
	}
	for _, allowed := range s.Values {
		if strings.EqualFold(v, allowed) {
			return allowed, nil
		}
	}
	return "", errors.New("not an allowed value")
}

// Defaults checks values (setting name to value, such as the cloud config's
// loadBalancer.settings) against the declarations and returns the defaults every Service
// starts from: each setting's Default, overridden by values, canonical. It reports every
// problem at once: those of Check, and a setting that is ServiceOnly.
func (ss Settings) Defaults(values map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range ss {
		if s.Default != "" {
			out[s.Name] = s.Default
		}
	}
	canon, err := ss.checked(values, true)
	maps.Copy(out, canon)
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// Check checks the settings of a load balancer spec (setting name to value, as a
// backend gets them) against the declarations, reporting every problem at once: a name
// no setting has, a value a setting does not allow. A backend checks a spec with it
// before it writes.
func (ss Settings) Check(values map[string]string) error {
	_, err := ss.checked(values, false)
	return err
}

// checked returns values in their canonical form, leaving out and reporting, all at
// once, a name no setting has, a value a setting does not allow and, when asDefaults, a
// setting that is ServiceOnly.
func (ss Settings) checked(values map[string]string, asDefaults bool) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		i := slices.IndexFunc(ss, func(s Setting) bool { return s.Name == name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: no such setting (the adapter declares: %s)", quote.Text(name), strings.Join(ss.names(), ", ")))
			continue
		}
		s := ss[i]
		if asDefaults && s.ServiceOnly != "" {
			errs = append(errs, fmt.Errorf("%s: only a Service's annotation may set it: %s", name, s.ServiceOnly))
			continue
		}
		canon, err := s.parse(values[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w (allowed: %s)", name, quote.Value(values[name]), err, s.allowed()))
			continue
		}
		out[name] = canon
	}
	return out, errors.Join(errs...)
}

// declared reports whether ss declares the setting name.
func (ss Settings) declared(name string) bool {
	return slices.ContainsFunc(ss, func(d Setting) bool { return d.Name == name })
}

// replaced returns the name of a setting declared Replace whose value differs between
// current and want, or "" when none does. Only a value the cloud reports, in any spelling
// the declaration accepts, differing from one the Service asks for counts: a value the
// cloud does not report, or one the declaration cannot read, is no reason to replace a
// load balancer and change its address (an in-place update carries the wanted value
// instead, and the cloud refuses it if it must).
func (ss Settings) replaced(current, want cloudapi.LoadBalancerSpec) string {
	for _, d := range ss {
		if !d.Replace {
			continue
		}
		cur, known := d.canonical(current.SettingValues)
		w, wanted := want.SettingValues[d.Name]
		if known && wanted && cur != w {
			return d.Name
		}
	}
	return ""
}

// canonical returns the canonical form of the value of s in values (a cloud's answer),
// and whether there is one that s accepts.
func (s Setting) canonical(values map[string]string) (string, bool) {
	v, ok := values[s.Name]
	if !ok {
		return "", false
	}
	c, err := s.parse(v)
	if err != nil {
		return "", false
	}
	return c, true
}

// comparable returns current as DiffLoadBalancer compares it with a desired spec: the
// declared settings in their canonical spelling (a cloud that answers "Large" for "large"
// holds the wanted value, and costs no write), a value no declaration accepts kept as the
// cloud spells it (so a wanted value replaces it), and the names ss does not declare as
// they are (translate carries them over unchanged: no difference).
func (ss Settings) comparable(current cloudapi.LoadBalancerSpec) cloudapi.LoadBalancerSpec {
	if len(current.SettingValues) == 0 {
		return current
	}
	values := maps.Clone(current.SettingValues)
	for _, d := range ss {
		if c, ok := d.canonical(values); ok {
			values[d.Name] = c
		}
	}
	current.SettingValues = values
	return current
}

// keepReplaced sets want's settings declared Replace to current's: what UpdateLoadBalancer
// and a load balancer that is never replaced get.
func (ss Settings) keepReplaced(current cloudapi.LoadBalancerSpec, want *cloudapi.LoadBalancerSpec) {
	if ss.replaced(current, *want) == "" {
		return
	}
	want.SettingValues = maps.Clone(want.SettingValues)
	if want.SettingValues == nil {
		want.SettingValues = map[string]string{}
	}
	for _, d := range ss {
		if !d.Replace {
			continue
		}
		if v, ok := current.SettingValues[d.Name]; ok {
			if c, err := d.parse(v); err == nil {
				v = c // as comparable has it, so the diff sees no change
			}
			want.SettingValues[d.Name] = v
		} else {
			delete(want.SettingValues, d.Name)
		}
	}
	if len(want.SettingValues) == 0 {
		want.SettingValues = nil
	}
}

// names returns the declared names, or "none".
func (ss Settings) names() []string {
	if len(ss) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// Reference returns the annotation reference of the settings as a Markdown table, the
// same columns as ccmkit's own, with each key under prefix (DefaultAnnotationPrefix when
// empty): an adapter's README carries it and a test checks it, as ccmkit's annotation
// reference (docs/reference/annotations.md) is generated from Annotations. A '|' or a line break in a declaration's text is
// escaped, so that it stays in its cell.
func (ss Settings) Reference(prefix string) string {
	if prefix == "" {
		prefix = DefaultAnnotationPrefix
	}
	rows := make([][4]string, 0, len(ss))
	for _, s := range ss {
		def := s.Default
		if def == "" {
			def = "none: the cloud's own"
		}
		doc := s.Doc
		if s.Replace {
			doc = strings.TrimSpace(doc + " Changing it replaces the load balancer (new address).")
		} else {
			doc = strings.TrimSpace(doc + " Changed in place.")
		}
		if s.ServiceOnly != "" {
			doc += " Only a Service's annotation sets it, not the cloud config's loadBalancer.settings: " + s.ServiceOnly + "."
		}
		rows = append(rows, [4]string{prefix + s.Name, s.allowed(), def, doc})
	}
	return referenceTable(rows)
}

// referenceTable returns an annotation reference as a Markdown table: one row per
// annotation (key, values, default, what it does), the key as code, every cell escaped
// by markdownCell. It writes ccmkit's reference (annotationReference) and the adapter's
// (Settings.Reference).
func referenceTable(rows [][4]string) string {
	var b strings.Builder
	b.WriteString("| annotation | values | default | what it does |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", markdownCell(r[0]), markdownCell(r[1]), markdownCell(r[2]), markdownCell(r[3]))
	}
	return b.String()
}

// cellEscaper escapes what would end a Markdown table cell or row.
var cellEscaper = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// markdownCell returns text fit for one cell of a Markdown table: a '|' (which would end
// the cell, in a code span too) escaped, a line break (which would end the row) written
// as <br>.
func markdownCell(text string) string {
	return cellEscaper.Replace(text)
}
