package nodelabels

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Problem is one thing wrong with a Node label configuration.
type Problem struct {
	// FromTags is true for a problem of the labels from tags, false for one of the
	// additional labels.
	FromTags bool
	// Msg says what is wrong, naming the key, tag or value.
	Msg string
}

// reserved are the label key namespaces Kubernetes keeps for itself, with their
// subdomains.
var reserved = []string{"kubernetes.io", "k8s.io"}

// KeyProblems returns what is wrong with key as a label key ccmkit asks to set on Nodes,
// one sentence each, or nil when nothing is.
func KeyProblems(key string) []string {
	msgs := validation.IsQualifiedName(key)
	prefix, _, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		return msgs
	}
	for _, ns := range reserved {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			msgs = append(msgs, "it is under "+ns+", which Kubernetes reserves: use a prefix of your own")
		}
	}
	return msgs
}

// Check returns every problem of a Node label configuration, in a stable order: the
// additional labels (label key → value) and the labels from tags (instance tag key →
// label key). A tag key must not be empty, no two tags may map to one label, and no label
// may be both an additional label and one from a tag.
func Check(additional, fromTags map[string]string) []Problem {
	var problems []Problem
	add := func(fromTags bool, format string, args ...any) {
		problems = append(problems, Problem{FromTags: fromTags, Msg: fmt.Sprintf(format, args...)})
	}
	for _, key := range slices.Sorted(maps.Keys(additional)) {
		for _, msg := range KeyProblems(key) {
			add(false, "key %q: %s", key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(additional[key]) {
			add(false, "value of %q: %s", key, msg)
		}
	}
	tagOf := make(map[string]string, len(fromTags)) // label key → the first tag mapping to it
	for _, tag := range slices.Sorted(maps.Keys(fromTags)) {
		label := fromTags[tag]
		if tag == "" {
			add(true, "an empty tag key (mapped to label %q): name the instance tag", label)
		}
		for _, msg := range KeyProblems(label) {
			add(true, "label key %q of tag %q: %s", label, tag, msg)
		}
		if other, dup := tagOf[label]; dup {
			add(true, "tags %q and %q both map to label %q: map each label from one tag", other, tag, label)
		} else {
			tagOf[label] = tag
		}
		if _, both := additional[label]; both {
			add(true, "label %q of tag %q is an additional label too: set it in one place", label, tag)
		}
	}
	return problems
}
