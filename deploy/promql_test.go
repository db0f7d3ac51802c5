package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/internal/metricsref"
)

// The PromQL the chart ships (the dashboard's queries, the alerts' expressions) is read by
// a small tokenizer, not by Prometheus's parser, which would make the module depend on
// Prometheus: it finds what an expression names, the metrics and labels, which the tests
// check against the metrics ccmkit registers.

// promqlRefs is what a PromQL expression names.
type promqlRefs struct {
	// selectors are the vector selectors: a metric name and the labels its matchers name.
	selectors []selector
	// grouping are the labels of by, without, on, ignoring, group_left and group_right.
	grouping []string
}

type selector struct {
	metric string
	labels []string
}

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokString
	tokNumber // a number or a duration
	tokPunct  // an operator or a bracket
)

type token struct {
	kind tokenKind
	text string
}

// lexPromQL splits expr into tokens; comments are dropped. A Grafana variable ($x) left
// in expr is an error: substitute it first.
func lexPromQL(expr string) ([]token, error) {
	var toks []token
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isIdent := func(c byte) bool { return isIdentStart(c) || isDigit(c) }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("an unterminated string at offset %d", i)
			}
			toks = append(toks, token{tokString, expr[i+1 : j]})
			i = j + 1
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.' ||
				((expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E') && !strings.ContainsAny(expr[i:j], "smhdwy"))) {
				j++
			}
			toks = append(toks, token{tokNumber, expr[i:j]})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, expr[i:j]})
			i = j
		case c == '$':
			return nil, fmt.Errorf("a variable at offset %d: %.20q", i, expr[i:])
		default:
			if i+1 < len(expr) && slices.Contains([]string{"!=", "=~", "!~", "==", ">=", "<="}, expr[i:i+2]) {
				toks = append(toks, token{tokPunct, expr[i : i+2]})
				i += 2
				continue
			}
			if !strings.ContainsRune("(){}[],=+-*/%^<>@", rune(c)) {
				return nil, fmt.Errorf("unexpected %q at offset %d", c, i)
			}
			toks = append(toks, token{tokPunct, string(c)})
			i++
		}
	}
	return toks, nil
}

// promqlFunctions are PromQL's aggregation operators and functions.
var promqlFunctions = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`sum avg min max count group stddev stdvar topk bottomk quantile
		count_values limitk limit_ratio abs absent absent_over_time avg_over_time ceil changes clamp
		clamp_max clamp_min count_over_time day_of_month day_of_week day_of_year days_in_month delta
		deriv exp floor histogram_avg histogram_count histogram_fraction histogram_quantile
		histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase irate
		label_join label_replace last_over_time ln log10 log2 mad_over_time max_over_time
		min_over_time minute month predict_linear present_over_time quantile_over_time rate resets
		round scalar sgn sort sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time time
		timestamp vector year start end`) {
		promqlFunctions[f] = true
	}
}

// parsePromQL returns the selectors and grouping labels of expr. It fails on what it
// cannot tell a metric from: a selector without a metric name, __name__ matchers, an
// unknown function, a grouping keyword without its label list.
func parsePromQL(expr string) (promqlRefs, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return promqlRefs{}, err
	}
	var refs promqlRefs
	is := func(i int, kind tokenKind, text string) bool {
		return i < len(toks) && toks[i].kind == kind && toks[i].text == text
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tokPunct && t.text == "{":
			return promqlRefs{}, fmt.Errorf("a selector without a metric name")
		case t.kind == tokPunct && t.text == "[": // a range or a subquery: durations only
			for i++; i < len(toks) && !is(i, tokPunct, "]"); i++ {
				if toks[i].kind == tokIdent || toks[i].kind == tokString {
					return promqlRefs{}, fmt.Errorf("%q in a range", toks[i].text)
				}
			}
		case t.kind != tokIdent:
		case slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, strings.ToLower(t.text)):
			if !is(i+1, tokPunct, "(") {
				if strings.HasPrefix(strings.ToLower(t.text), "group_") {
					continue // without a label list
				}
				return promqlRefs{}, fmt.Errorf("%s without a label list", t.text)
			}
			for i += 2; !is(i, tokPunct, ")"); i++ {
				if i >= len(toks) || toks[i].kind != tokIdent {
					return promqlRefs{}, fmt.Errorf("%s: not a label list", t.text)
				}
				refs.grouping = append(refs.grouping, toks[i].text)
				if is(i+1, tokPunct, ",") {
					i++
				}
			}
		case slices.Contains([]string{"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}, strings.ToLower(t.text)):
		case promqlFunctions[t.text] && i+1 < len(toks) && toks[i+1].kind == tokIdent &&
			slices.Contains([]string{"by", "without"}, strings.ToLower(toks[i+1].text)):
			// an aggregation with its grouping first: sum by (l) (...)
		case is(i+1, tokPunct, "("):
			if !promqlFunctions[t.text] {
				return promqlRefs{}, fmt.Errorf("unknown function %s", t.text)
			}
		default:
			sel := selector{metric: t.text}
			if is(i+1, tokPunct, "{") {
				for i += 2; !is(i, tokPunct, "}"); i++ {
					if i+2 >= len(toks) || toks[i].kind != tokIdent || toks[i+1].kind != tokPunct ||
						!slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].text) || toks[i+2].kind != tokString {
						return promqlRefs{}, fmt.Errorf("%s: a label matcher is not label, operator, string", t.text)
					}
					if toks[i].text == "__name__" {
						return promqlRefs{}, fmt.Errorf("%s: a matcher on __name__", t.text)
					}
					sel.labels = append(sel.labels, toks[i].text)
					i += 2
					if is(i+1, tokPunct, ",") {
						i++
					}
				}
			}
			refs.selectors = append(refs.selectors, sel)
		}
	}
	return refs, nil
}

// seriesLabels returns the labels of every series name the metrics expose: a histogram's
// _bucket (with le), _sum and _count.
func seriesLabels(ms []metricsref.Metric) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		if m.Kind != "histogram" {
			out[m.Name] = m.Labels
			continue
		}
		out[m.Name+"_bucket"] = append(slices.Clone(m.Labels), "le")
		out[m.Name+"_sum"] = m.Labels
		out[m.Name+"_count"] = m.Labels
	}
	return out
}

// checkPromQL checks that expr names at least one metric, only metrics of known, only
// labels those metrics have, and groups only by labels every metric it names has.
func checkPromQL(expr string, known map[string][]string) error {
	refs, err := parsePromQL(expr)
	if err != nil {
		return err
	}
	if len(refs.selectors) == 0 {
		return fmt.Errorf("no metric")
	}
	var errs []string
	for _, s := range refs.selectors {
		labels, ok := known[s.metric]
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown metric %s", s.metric))
			continue
		}
		for _, l := range s.labels {
			if !slices.Contains(labels, l) {
				errs = append(errs, fmt.Sprintf("%s has no label %s (it has %v)", s.metric, l, labels))
			}
		}
		for _, l := range refs.grouping {
			if !slices.Contains(labels, l) {
				errs = append(errs, fmt.Sprintf("grouping by %s, which %s does not have (it has %v)", l, s.metric, labels))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func TestParsePromQL(t *testing.T) {
	tests := []struct {
		expr     string
		want     []selector
		grouping []string
		err      string
	}{
		{expr: `m_total`, want: []selector{{metric: "m_total"}}},
		{expr: `sum by (operation) (rate(m_total{class!="not_found", operation=~"a|b"}[5m])) > 0`,
			want: []selector{{"m_total", []string{"class", "operation"}}}, grouping: []string{"operation"}},
		{expr: `sum(rate(m_total[5m])) without (a, b)`, want: []selector{{metric: "m_total"}}, grouping: []string{"a", "b"}},
		{expr: `histogram_quantile(0.99, sum by (le) (rate(h_bucket[1h30m:1m] offset 5m)))`, want: []selector{{metric: "h_bucket"}}, grouping: []string{"le"}},
		{expr: `a / on (x) group_left b * 1e-3 + .5`, want: []selector{{metric: "a"}, {metric: "b"}}, grouping: []string{"x"}},
		{expr: `a{l="{not, a} selector"} # m{x="y"}`, want: []selector{{"a", []string{"l"}}}},
		{expr: `count(a) BY (l)`, want: []selector{{metric: "a"}}, grouping: []string{"l"}},
		{expr: `{job="x"}`, err: "without a metric name"},
		{expr: `a{__name__="b"}`, err: "__name__"},
		{expr: `frobnicate(a)`, err: "unknown function"},
		{expr: `sum by a`, err: "without a label list"},
		{expr: `a{l}`, err: "label matcher"},
		{expr: `rate(a[$__rate_interval])`, err: "variable"},
		{expr: `a{l="x}`, err: "unterminated"},
		{expr: `a[foo]`, err: "in a range"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			refs, err := parsePromQL(tt.expr)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, refs.selectors)
			assert.Equal(t, tt.grouping, refs.grouping)
		})
	}
}

func TestCheckPromQL(t *testing.T) {
	known := seriesLabels([]metricsref.Metric{
		{Name: "c_total", Kind: "counter", Labels: []string{"operation", "class"}},
		{Name: "h_seconds", Kind: "histogram", Labels: []string{"method"}},
	})
	tests := []struct {
		expr string
		err  string // "" when it passes
	}{
		{expr: `sum by (class) (rate(c_total{operation="x"}[5m]))`},
		{expr: `histogram_quantile(0.9, sum by (le, method) (rate(h_seconds_bucket[5m])))`},
		{expr: `sum by (method) (rate(h_seconds_count{method="ensure"}[5m]))`},
		{expr: `sum(rate(c_totl[5m]))`, err: "unknown metric c_totl"},
		{expr: `h_seconds`, err: "unknown metric h_seconds"},
		{expr: `c_total{reason="x"}`, err: "c_total has no label reason"},
		{expr: `sum by (le) (rate(h_seconds_count[5m]))`, err: "grouping by le"},
		{expr: `sum by (class) (rate(c_total[5m])) / sum by (class) (rate(h_seconds_count[5m]))`, err: "grouping by class, which h_seconds_count"},
		{expr: `vector(1)`, err: "no metric"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			err := checkPromQL(tt.expr, known)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}
