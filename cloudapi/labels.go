package cloudapi

import (
	"encoding/base32"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// LabelRules is the label syntax of a cloud whose labels cannot hold every tag as it is
// (Hetzner Cloud, GCP): which keys and values it accepts. EncodeLabels, DecodeLabels and
// LabelSelector carry any tags in such labels and read them back exactly.
type LabelRules struct {
	// Key reports whether the cloud accepts s as a label key.
	Key func(s string) bool
	// Value reports whether the cloud accepts s as a label value.
	Value func(s string) bool
	// MaxValue is the length in bytes of the longest value Value accepts. A longer
	// encoded value is split over several labels.
	MaxValue int
}

var (
	hetznerName  = regexp.MustCompile(`^[a-zA-Z0-9]([-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$`)
	hetznerValue = regexp.MustCompile(`^([a-zA-Z0-9]([-_.a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)
)

// HetznerLabelRules are Hetzner Cloud's label rules: a key is an optional prefix (a DNS
// subdomain of at most 253 characters) and "/", then a name of at most 63 characters of
// [a-zA-Z0-9._-] that begins and ends with a letter or digit; a value is empty or such a
// name. The API reserves the prefix "hetzner.cloud/", which these rules do not refuse: a
// tag key with it is refused by the API (ErrInvalidRequest).
var HetznerLabelRules = LabelRules{
	Key: func(s string) bool {
		prefix, name, hasPrefix := strings.Cut(s, "/")
		if !hasPrefix {
			return hetznerName.MatchString(s)
		}
		return len(prefix) <= 253 && dnsSubdomain.MatchString(prefix) && hetznerName.MatchString(name)
	},
	Value:    hetznerValue.MatchString,
	MaxValue: 63,
}

// The encoding's marks. A tag key or value the rules accept and that does not look
// encoded is its own label; any other is encodedMark and its bytes in lower-case base32
// without padding. An encoded value longer than MaxValue is split: the first label holds
// encodedMark, the number of labels n (2 to maxParts) and "-", then the first part; the
// labels of key+partMark+"1" to key+partMark+(n-1) hold the other parts.
const (
	encodedMark = "b32-"
	partMark    = "--"
	maxParts    = 9
)

var labelBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// EncodeLabels returns the labels that carry tags under rules: the same for the same tags,
// different for different tags (so a resource's labels select it by its tags with
// LabelSelector), and DecodeLabels reads them back exactly. A key or value the rules accept
// stays as it is (ccmkit.io/cluster=prod under HetznerLabelRules); any other is encoded,
// and a long value split over up to nine labels (about 350 bytes under HetznerLabelRules).
// It fails, naming the tag, when a tag cannot be carried.
func EncodeLabels(tags map[string]string, rules LabelRules) (map[string]string, error) {
	labels := make(map[string]string, len(tags))
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if err := encodeTag(labels, k, tags[k], rules); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return labels, nil
}

// EncodeLabelsKeeping is EncodeLabels of tags for a resource whose labels are current (as
// the cloud has them): the labels of current that DecodeLabels cannot read are kept as
// they are, beside the encoded tags, so that writing a resource's tags never drops a
// label that is not ccmkit's to drop. The tags current carries are replaced by tags.
func EncodeLabelsKeeping(tags, current map[string]string, rules LabelRules) (map[string]string, error) {
	out, err := EncodeLabels(tags, rules)
	if err != nil {
		return nil, err
	}
	decoded, _ := DecodeLabels(current, rules)
	readable, _ := EncodeLabels(decoded, rules) // DecodeLabels reads only what EncodeLabels writes
	for k, v := range current {
		if _, ok := readable[k]; !ok {
			if _, taken := out[k]; !taken {
				out[k] = v
			}
		}
	}
	return out, nil
}

// DecodeLabels returns the tags that labels carry under rules: every tag whose labels
// EncodeLabels would write exactly as they are. A label that is left out (one that looks
// encoded but is not, a split value with a part missing or different, a part no first
// label names) is named in the error, next to the tags read: a resource's foreign or broken
// labels never read as another value, and never cost it its other tags.
func DecodeLabels(labels map[string]string, rules LabelRules) (map[string]string, error) {
	tags := make(map[string]string, len(labels))
	used := make(map[string]bool, len(labels))
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if isPartKey(key) {
			continue // read with its first label
		}
		k, v, err := decodeTag(labels, key, rules)
		if err != nil {
			errs = append(errs, fmt.Errorf("label %q left out of the tags: %w", key, err))
			continue
		}
		own := map[string]string{}
		err = encodeTag(own, k, v, rules)
		if _, first := own[key]; err != nil || !first || !maps.Equal(own, subset(labels, own)) {
			errs = append(errs, fmt.Errorf("label %q left out of the tags: not the labels tag %q=%q is written as", key, k, v))
			continue
		}
		tags[k] = v
		for l := range own {
			used[l] = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if isPartKey(key) && !used[key] {
			errs = append(errs, fmt.Errorf("label %q left out of the tags: a part of a split value that no first label names", key))
		}
	}
	return tags, errors.Join(errs...)
}

// LabelSelector returns the label selector ("k=v,k2=v2", keys sorted; the syntax of
// Hetzner Cloud and Kubernetes) that selects exactly the resources whose labels decode to
// tags that include every one of tags (ListOptions.Tags): DecodeLabels reads a tag only
// from the labels EncodeLabels writes for it. An empty tags is "".
func LabelSelector(tags map[string]string, rules LabelRules) (string, error) {
	labels, err := EncodeLabels(tags, rules)
	if err != nil {
		return "", err
	}
	terms := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		terms = append(terms, k+"="+labels[k])
	}
	return strings.Join(terms, ","), nil
}

// encodeTag adds the labels of one tag to labels.
func encodeTag(labels map[string]string, k, v string, rules LabelRules) error {
	key := k
	if !rules.Key(k) || looksEncoded(k) {
		key = encodedMark + labelBase32.EncodeToString([]byte(k))
		if !rules.Key(key) {
			return fmt.Errorf("tag key %q: its encoded form %q is not a label key", k, key)
		}
	}
	if rules.Value(v) && !strings.HasPrefix(v, encodedMark) {
		labels[key] = v
		return nil
	}
	enc := labelBase32.EncodeToString([]byte(v))
	parts := []string{encodedMark + enc}
	if len(parts[0]) > rules.MaxValue {
		header := encodedMark + "0-" // a single digit: its length is known before the count
		first := rules.MaxValue - len(header)
		if first <= 0 {
			return fmt.Errorf("tag %q: its encoded value does not fit in a label of %d bytes", k, rules.MaxValue)
		}
		n := 1 + (len(enc)-first+rules.MaxValue-1)/rules.MaxValue
		if n > maxParts {
			return fmt.Errorf("tag %q: its value of %d bytes does not fit in %d labels", k, len(v), maxParts)
		}
		parts = []string{encodedMark + strconv.Itoa(n) + "-" + enc[:first]}
		for rest := enc[first:]; rest != ""; rest = rest[min(len(rest), rules.MaxValue):] {
			parts = append(parts, rest[:min(len(rest), rules.MaxValue)])
		}
	}
	for i, p := range parts {
		l := key
		if i > 0 {
			l = key + partMark + strconv.Itoa(i)
		}
		if !rules.Key(l) || !rules.Value(p) {
			return fmt.Errorf("tag %q: its value does not fit the labels' rules (label %q=%q)", k, l, p)
		}
		labels[l] = p
	}
	return nil
}

// decodeTag reads the tag whose first label is key; the caller checks that the tag
// encodes to the labels it was read from.
func decodeTag(labels map[string]string, key string, rules LabelRules) (string, string, error) {
	k := key
	if enc, ok := strings.CutPrefix(key, encodedMark); ok {
		b, err := labelBase32.DecodeString(enc)
		if err != nil {
			return "", "", fmt.Errorf("not an encoded key: %w", err)
		}
		k = string(b)
	}
	value := labels[key]
	enc, ok := strings.CutPrefix(value, encodedMark)
	if !ok {
		return k, value, nil
	}
	if len(enc) >= 2 && enc[1] == '-' && enc[0] >= '2' && enc[0] <= '0'+maxParts {
		n := int(enc[0] - '0')
		var b strings.Builder
		b.WriteString(enc[2:])
		for i := 1; i < n; i++ {
			p, ok := labels[key+partMark+strconv.Itoa(i)]
			if !ok {
				return "", "", fmt.Errorf("a value split over %d labels lacks part %d", n, i)
			}
			b.WriteString(p)
		}
		enc = b.String()
	}
	v, err := labelBase32.DecodeString(enc)
	if err != nil {
		return "", "", fmt.Errorf("not an encoded value: %w", err)
	}
	return k, string(v), nil
}

// looksEncoded reports whether a key the rules accept must still be encoded, to tell it
// from an encoded key or a part of a split value.
func looksEncoded(k string) bool { return strings.HasPrefix(k, encodedMark) || isPartKey(k) }

// isPartKey reports whether key names a part of a split value: partMark and a digit at its end.
func isPartKey(key string) bool {
	i := len(key) - len(partMark) - 1
	return i >= 0 && key[i:i+len(partMark)] == partMark && key[len(key)-1] >= '1' && key[len(key)-1] <= '9'
}

// subset returns the labels of l whose keys are in keys.
func subset(l, keys map[string]string) map[string]string {
	out := make(map[string]string, len(keys))
	for k := range keys {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}
