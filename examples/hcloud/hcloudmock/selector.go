package hcloudmock

import (
	"fmt"
	"slices"
	"strings"
)

// selector is a parsed label selector in the API's syntax: requirements joined by
// commas, all of which must hold. A requirement is "k=v" (or "k==v"), "k!=v", "k"
// (present), "!k" (absent), "k in (a,b)" or "k notin (a,b)".
type selector []requirement

type requirement struct {
	key, op string // op: "=", "!=", "exists", "!", "in", "notin"
	values  []string
}

func parseSelector(s string) (selector, error) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	depth, start := 0, 0
	var terms []string
	for i, c := range s + "," {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			terms = append(terms, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	for _, t := range terms {
		r, err := parseRequirement(t)
		if err != nil {
			return nil, fmt.Errorf("label selector %q: %w", s, err)
		}
		sel = append(sel, r)
	}
	return sel, nil
}

func parseRequirement(t string) (requirement, error) {
	for _, op := range []string{" notin ", " in "} {
		if k, set, ok := strings.Cut(t, op); ok {
			set = strings.TrimSpace(set)
			if !strings.HasPrefix(set, "(") || !strings.HasSuffix(set, ")") {
				return requirement{}, fmt.Errorf("%q: the values of %q go in parentheses", t, strings.TrimSpace(op))
			}
			var vals []string
			for v := range strings.SplitSeq(set[1:len(set)-1], ",") {
				vals = append(vals, strings.TrimSpace(v))
			}
			return checked(requirement{key: strings.TrimSpace(k), op: strings.TrimSpace(op), values: vals}, t)
		}
	}
	for _, op := range []string{"!=", "==", "="} {
		if k, v, ok := strings.Cut(t, op); ok {
			return checked(requirement{key: strings.TrimSpace(k), op: strings.TrimPrefix(op, "="), values: []string{strings.TrimSpace(v)}}, t)
		}
	}
	if k, ok := strings.CutPrefix(t, "!"); ok {
		return checked(requirement{key: strings.TrimSpace(k), op: "!"}, t)
	}
	return checked(requirement{key: t, op: "exists"}, t)
}

func checked(r requirement, t string) (requirement, error) {
	if r.key == "" || strings.ContainsAny(r.key, " !=(),") {
		return r, fmt.Errorf("%q: not a requirement", t)
	}
	if r.op == "" {
		r.op = "=" // "==" cut as "=" above
	}
	return r, nil
}

func (sel selector) matches(labels map[string]string) bool {
	for _, r := range sel {
		v, has := labels[r.key]
		var ok bool
		switch r.op {
		case "=":
			ok = has && v == r.values[0]
		case "!=":
			ok = !has || v != r.values[0]
		case "exists":
			ok = has
		case "!":
			ok = !has
		case "in":
			ok = has && slices.Contains(r.values, v)
		case "notin":
			ok = !has || !slices.Contains(r.values, v)
		}
		if !ok {
			return false
		}
	}
	return true
}
