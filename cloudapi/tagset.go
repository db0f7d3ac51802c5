package cloudapi

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TagSetRules are the tag syntax of a cloud whose tags are a set of plain strings, with
// no key and value (DigitalOcean's, Linode's): which characters a tag may have and how
// long it may be. EncodeTagSet, DecodeTagSet and EncodeTagSetKeeping carry ccmkit's tags
// (keys and values) in such a set and read them back exactly, with the label codec
// (EncodeLabels): a tag is a label's key, Separator and its value, or the key alone for
// an empty value, so a key or value the rules accept stays readable (k8s, k8s:prod) and
// any other is encoded. Build a value with NewTagSetRules, which checks it.
type TagSetRules struct {
	labels    LabelRules
	chars     string
	separator string
	maxLen    int
}

// DigitalOceanTagRules are DigitalOcean's tag rules: letters, digits, ":", "-" and "_",
// at most 255 characters; a key is at most 64 of them.
var DigitalOceanTagRules = mustTagSetRules(asciiAlnum+":-_", ":", 255, 64)

// asciiAlnum are the ASCII letters and digits.
const asciiAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// NewTagSetRules returns the rules of tags made of chars (each byte of it; ASCII), at
// most maxLen bytes long, whose key part (before the first separator) is at most maxKey
// bytes, so that a value has maxLen - maxKey - 1. separator (one byte of chars) ends a
// key; a value may hold it. The codec needs the characters of its encoding in chars: the
// lower-case letters, the digits 2 to 7, and "-". It fails, saying what is missing, for
// rules it cannot encode in.
func NewTagSetRules(chars, separator string, maxLen, maxKey int) (TagSetRules, error) {
	var errs []error
	for i := range len(chars) {
		if chars[i] >= 0x80 {
			errs = append(errs, fmt.Errorf("chars %q: only ASCII characters", chars))
			break
		}
	}
	if len(separator) != 1 || !strings.Contains(chars, separator) {
		errs = append(errs, fmt.Errorf("separator %q: one character of chars", separator))
	}
	for _, c := range "abcdefghijklmnopqrstuvwxyz234567-" {
		if !strings.ContainsRune(chars, c) {
			errs = append(errs, fmt.Errorf("chars %q lack %q, which the encoding of a tag the rules do not accept needs", chars, c))
		}
	}
	if maxKey < len(encodedMark)+8 || maxLen-maxKey-1 < len(encodedMark)+8 {
		errs = append(errs, fmt.Errorf("a tag of at most %d bytes with a key of at most %d leaves no room for an encoded key or value (%d bytes at least each)", maxLen, maxKey, len(encodedMark)+8))
	}
	if err := errors.Join(errs...); err != nil {
		return TagSetRules{}, fmt.Errorf("tag set rules: %w", err)
	}
	r := TagSetRules{chars: chars, separator: separator, maxLen: maxLen}
	r.labels = LabelRules{
		Key: func(s string) bool {
			return s != "" && len(s) <= maxKey && r.only(s) && !strings.Contains(s, separator)
		},
		Value:    func(s string) bool { return len(s) <= maxLen-maxKey-1 && r.only(s) },
		MaxValue: maxLen - maxKey - 1,
	}
	return r, nil
}

// mustTagSetRules is NewTagSetRules of rules known to be right.
func mustTagSetRules(chars, separator string, maxLen, maxKey int) TagSetRules {
	r, err := NewTagSetRules(chars, separator, maxLen, maxKey)
	if err != nil {
		panic(err)
	}
	return r
}

// only reports whether s has no character but the rules'.
func (r TagSetRules) only(s string) bool {
	return strings.Trim(s, r.chars) == "" // Trim of a cutset: empty when every byte is in it
}

// EncodeTagSet returns the tags of a set (sorted) that carry tags under rules: a key and
// value the rules accept is the tag key+separator+value (key alone for an empty value),
// any other is encoded as EncodeLabels encodes it. It fails, naming the tag, when a tag
// cannot be carried, and with rules not made by NewTagSetRules.
func EncodeTagSet(tags map[string]string, rules TagSetRules) ([]string, error) {
	if rules.labels.Key == nil {
		return nil, errors.New("tag set rules not made by NewTagSetRules")
	}
	labels, err := EncodeLabels(tags, rules.labels)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, rules.join(k, v))
	}
	slices.Sort(out)
	return out, nil
}

// DecodeTagSet returns the tags that a set carries under rules: every tag of ccmkit whose
// set tags EncodeTagSet writes exactly as they are. A key that holds several values in
// the set (a provisioner's k8s beside k8s:prod, or two writers' values) reads as none of
// them: it is left out, like a set tag that is not exactly what EncodeTagSet writes (k8s:
// with an empty value, a broken encoding) or has a character the rules lack, and each is
// named in the error (a tag the label codec leaves out by its key), next to the tags
// read. EncodeTagSetKeeping keeps them all.
func DecodeTagSet(set []string, rules TagSetRules) (map[string]string, error) {
	labels, errs := rules.split(set)
	tags, err := DecodeLabels(labels, rules.labels)
	return tags, errors.Join(append(errs, err)...)
}

// EncodeTagSetKeeping is EncodeTagSet of tags for a resource whose set is current (as the
// cloud has it): the set tags of current that DecodeTagSet does not read are kept as they
// are, unless tags writes their key (a key written holds the one value tags gives it,
// whatever values current held), so that writing never drops a tag that is not ccmkit's.
// The result is sorted, each tag once.
func EncodeTagSetKeeping(tags map[string]string, current []string, rules TagSetRules) ([]string, error) {
	out, err := EncodeTagSet(tags, rules)
	if err != nil {
		return nil, err
	}
	written, _ := rules.split(out)
	decoded, _ := DecodeTagSet(current, rules)
	readable, _ := EncodeTagSet(decoded, rules) // DecodeTagSet reads only what EncodeTagSet writes
	for _, t := range current {
		if slices.Contains(readable, t) {
			continue
		}
		if k, _, _ := strings.Cut(t, rules.separator); !hasKey(written, k) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// join is the set tag of label k=v.
func (r TagSetRules) join(k, v string) string {
	if v == "" {
		return k
	}
	return k + r.separator + v
}

// split returns the labels of a set: each tag that joins back to itself from its key and
// value, and whose key has one value in the set; the others are named in errs.
func (r TagSetRules) split(set []string) (map[string]string, []error) {
	values := map[string][]string{}
	var errs []error
	for _, t := range slices.Compact(slices.Sorted(slices.Values(set))) {
		k, v, _ := strings.Cut(t, r.separator)
		if r.join(k, v) != t || !r.only(t) || len(t) > r.maxLen {
			errs = append(errs, fmt.Errorf("tag %q left out of the tags: not a tag the codec writes", t))
			continue
		}
		values[k] = append(values[k], v)
	}
	labels := make(map[string]string, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if vs := values[k]; len(vs) > 1 {
			errs = append(errs, fmt.Errorf("key %q left out of the tags: it holds %d values %q, which read as none", k, len(vs), vs))
			continue
		}
		labels[k] = values[k][0]
	}
	return labels, errs
}

// hasKey reports whether m has the key k.
func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
