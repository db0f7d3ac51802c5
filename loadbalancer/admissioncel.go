package loadbalancer

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The CEL of the policies. Each check is a function of the CEL expression of the value
// (trimmed of white space, as parseAnnotations trims it; the policy binds it to v) and
// returns a CEL expression that is true for exactly the values the annotation's apply
// accepts, or for more where CEL cannot say (noted at the check).

// celBool: parseBool. strings.ToLower maps no other rune onto the letters of true and false.
func celBool(v string) string { return v + `.lowerAscii() in ['true', 'false']` }

// celSameBool: two values celBool accepts that parseBool reads alike.
func celSameBool(x, y string) string { return x + ".lowerAscii() == " + y + ".lowerAscii()" }

// celUpper returns the CEL of strings.ToUpper(v) for the values that it turns into upper
// case ASCII: 'ı' and 'ſ' are the runes other than ASCII that it maps onto ASCII.
func celUpper(v string) string { return v + ".replace('ı', 'i').replace('ſ', 's').upperAscii()" }

// celEnum returns a check of a value that strings.ToUpper turns into one of values
// (upper case ASCII).
func celEnum(values ...string) func(string) string {
	return func(v string) string { return fmt.Sprintf(`%s in [%s]`, celUpper(v), celList(values)) }
}

// celSameEnum: two values a celEnum check accepts that are one value of the enum.
func celSameEnum(x, y string) string { return celUpper(x) + " == " + celUpper(y) }

// celInt returns a check of parseInt(v, lo, hi): strconv.Atoi's syntax (a sign, leading
// zeros), at most as many digits as hi, so that int() cannot overflow.
func celInt(lo, hi int) func(string) string {
	return func(v string) string {
		return fmt.Sprintf(`%s.matches('^[-+]?0*[0-9]{1,%d}$') && int(%s) >= %d && int(%s) <= %d`, v, len(strconv.Itoa(hi)), v, lo, v, hi)
	}
}

// celSameInt: two values a celInt check accepts that are one number.
func celSameInt(x, y string) string { return fmt.Sprintf("int(%s) == int(%s)", x, y) }

// durationRE is time.ParseDuration's syntax for the durations up to maxDuration (5m): a
// component whose whole part has more digits than this allows is longer than 5m alone
// (components add up), so that CEL's duration(), which is time.ParseDuration, cannot
// overflow on a value it matches.
const durationRE = `^[-+]?(0|((0*[0-9]{1,12}(\.[0-9]*)?|\.[0-9]+)ns|(0*[0-9]{1,9}(\.[0-9]*)?|\.[0-9]+)(us|µs|μs)|(0*[0-9]{1,6}(\.[0-9]*)?|\.[0-9]+)ms|` +
	`(0*[0-9]{1,3}(\.[0-9]*)?|\.[0-9]+)s|(0*[0-9](\.[0-9]*)?|\.[0-9]+)[mh])+)$`

// celDuration: parseDuration.
func celDuration(v string) string {
	return fmt.Sprintf(`%s.matches(%s) && duration(%s) >= duration('%s') && duration(%s) <= duration('%s')`, v, celString(durationRE), v, minDuration, v, maxDuration)
}

// celName: the name annotation.
func celName(v string) string {
	return fmt.Sprintf(`size(%s) <= %d && %s.matches('^[a-z0-9]([a-z0-9-]*[a-z0-9])?$')`, v, maxNameLength, v)
}

// celPath: a path without white space (unicode.IsSpace: Z and \t-\r, U+0085) or control
// characters (Cc, which holds \t-\r and U+0085).
func celPath(v string) string {
	return fmt.Sprintf(`%s.startsWith('/') && !%s.matches('[\\p{Cc}\\p{Z}]')`, v, v)
}

// celHostname: checkHostname. The DNS subdomain's syntax holds no ':', so isIP only finds
// IPv4 addresses, which it parses as net.ParseIP does.
func celHostname(v string) string {
	label := fmt.Sprintf(`[a-z0-9]([-a-z0-9]{0,%d}[a-z0-9])?`, validation.DNS1123LabelMaxLength-2)
	return fmt.Sprintf(`size(%s) <= %d && %s.matches('^%s([.]%s)*$') && !isIP(%s)`, v, validation.DNS1123SubdomainMaxLength, v, label, label, v)
}

// celIPs: the ip-addresses annotation. isIP is netip.ParseAddr without zones, as
// parseAnnotations, but refuses IPv4-mapped IPv6 addresses, which parseAnnotations
// accepts as IPv4: an entry that may be one is accepted here and not counted in its family.
func celIPs(v string) string {
	mapped := `f.trim().matches('(?i)^[0:]*:ffff:[0-9a-f.:]+$')`
	return fmt.Sprintf(`%[1]s.split(',').all(f, isIP(f.trim()) || %[2]s) && `+
		`%[1]s.split(',').filter(f, isIP(f.trim()) && ip(f.trim()).family() == 4).size() <= 1 && `+
		`%[1]s.split(',').filter(f, isIP(f.trim()) && ip(f.trim()).family() == 6).size() <= 1`, v, mapped)
}

// celTLSPorts: each entry a port number from 1 to 65535 (strconv.Atoi's syntax), or a
// port name (validation.IsValidPortName).
func celTLSPorts(v string) string {
	return fmt.Sprintf(`%s.split(',').all(f, f.trim().matches('^[-+]?0*[0-9]{1,5}$') ? int(f.trim()) >= 1 && int(f.trim()) <= 65535 : `+
		`size(f.trim()) <= 15 && f.trim().matches('^[a-z0-9]+(-[a-z0-9]+)*$') && f.trim().matches('[a-z]'))`, v)
}

// celCertificates: entries without white space (unicode.IsSpace), none empty, none twice;
// two the same are found among at most celMaxEntries entries (a comparison of each with
// each, which CEL cannot do in less).
func celCertificates(v string) string {
	return fmt.Sprintf(`%[1]s.split(',').all(f, f.trim() != '' && !f.trim().matches('[\\t-\\r\\x{85}\\p{Z}]')) && `+
		`[%[1]s.split(',').map(f, f.trim())].all(l, l.size() > %[2]d || l.all(f, l.exists_one(g, g == f)))`, v, celMaxEntries)
}

// celLoadBalancerID: 1 to maxIDLength bytes, each rune printable (unicode.IsPrint: L, M,
// N, P, S and ' ') and no white space.
func celLoadBalancerID(v string) string {
	return fmt.Sprintf(`size(bytes(%s)) <= %d && %s.matches('^[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}]+$')`, v, maxIDLength, v)
}

// celSetting returns the check of a setting declared with Values (strings.EqualFold is
// the case folding of (?i)) and the check that two values it accepts are one canonical
// value, or nils for one declared with Parse, which CEL cannot run.
func celSetting(s Setting) (check func(v string) string, same func(x, y string) string) {
	if s.Parse != nil {
		return nil, nil
	}
	quoted := make([]string, len(s.Values))
	each := make([]string, len(s.Values))
	for i, v := range s.Values {
		quoted[i] = regexp.QuoteMeta(v)
		each[i] = `(?i)^(?:` + quoted[i] + `)$`
	}
	re := celString(`(?i)^(?:` + strings.Join(quoted, "|") + `)$`)
	check = func(v string) string { return v + ".matches(" + re + ")" }
	same = func(x, y string) string {
		return fmt.Sprintf("[%s].exists(r, %s.matches(r) && %s.matches(r))", celList(each), x, y)
	}
	return check, same
}

// celString returns s as a CEL string literal: Go's quoting of a valid UTF-8 string uses
// only escapes CEL reads alike.
func celString(s string) string { return strconv.Quote(s) }

// celList returns the CEL list elements of values, quoted.
func celList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = celString(v)
	}
	return strings.Join(quoted, ", ")
}

// celCut returns the CEL of the value v for a message, cut after 64 runes.
func celCut(v string) string {
	return fmt.Sprintf(`(size(%[1]s) > 64 ? %[1]s.substring(0, 64) + '...' : %[1]s)`, v)
}

// annotationCheck is the check of one annotation: its key after the prefix, what is
// allowed, the CEL check of a value (a function of the value's CEL), and the CEL
// comparison of two values it accepts (nil when CEL cannot compare them simply).
type annotationCheck struct {
	name, allowed string
	check         func(v string) string
	same          func(x, y string) string
}

// checks returns the checks of ccmkit's annotations and the adapter's settings, and the
// names of those that have none.
func checks(settings Settings) ([]annotationCheck, []string) {
	var out []annotationCheck
	var syncOnly []string
	for _, a := range annotationTable() {
		if a.check == nil {
			syncOnly = append(syncOnly, a.Name)
			continue
		}
		out = append(out, annotationCheck{name: a.Name, allowed: a.Values, check: a.check, same: a.same})
	}
	for _, s := range settings {
		check, same := celSetting(s)
		if check == nil {
			syncOnly = append(syncOnly, s.Name)
			continue
		}
		out = append(out, annotationCheck{name: s.Name, allowed: s.allowed(), check: check, same: same})
	}
	return out, syncOnly
}

// policyKeys returns the keys a Service may spell the annotation name with, for the
// policy: its key under prefix first, then its aliases in declaration order; those whose
// value CEL reads as name's (plain) apart from those of aliases with Convert or with name
// among their Parts (converted), whose values only the sync reads.
func (as Aliases) policyKeys(prefix, name string) (plain []spelling, converted []string) {
	plain = []spelling{{key: prefix + name}}
	for i := range as.Keys {
		a := &as.Keys[i]
		switch {
		case slices.Contains(a.Parts, name):
			converted = append(converted, a.Key)
		case a.Name != name:
		case a.Convert != nil:
			converted = append(converted, a.Key)
		default:
			plain = append(plain, spelling{key: a.Key, alias: a})
		}
	}
	return plain, converted
}

// celRead returns the CEL that is true when the annotation key k is one the LoadBalancer
// reads or reports: under prefix or a legacy prefix, or a legacy key.
func (as Aliases) celRead(k, prefix string) string {
	read := fmt.Sprintf("%s.startsWith(%s)", k, celString(prefix))
	if legacy := as.celLegacy(k); legacy != "false" {
		read += " || " + legacy
	}
	return read
}

// celLegacy returns the CEL that is true when the annotation key k is a legacy one: under
// a legacy prefix, or an alias's key (Aliases.inUse). It is false without either.
func (as Aliases) celLegacy(k string) string {
	var terms []string
	for _, lp := range as.Prefixes {
		terms = append(terms, fmt.Sprintf("%s.startsWith(%s)", k, celString(lp)))
	}
	var keys []string
	for _, a := range as.Keys {
		if !as.legacy(a.Key) {
			keys = append(keys, a.Key)
		}
	}
	if len(keys) > 0 {
		terms = append(terms, fmt.Sprintf("%s in [%s]", k, celList(keys)))
	}
	if len(terms) == 0 {
		return "false"
	}
	return strings.Join(terms, " || ")
}

// binding returns the binding of the policy name with actions, in every namespace.
func binding(name string, action admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{action},
		},
	}
}

// manifest returns obj as YAML without the fields a manifest leaves to the API server
// (creationTimestamp, status), each expression on one line.
func manifest(obj runtime.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	if meta, ok := u["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(u); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
