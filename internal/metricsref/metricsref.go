// Package metricsref reads the metrics a provider registers from their descriptors, for
// the code that must agree with them: the metrics reference docs/reference/metrics.md
// (provider's test, `make docs`) and the Helm chart's dashboard and alerts (deploy's
// test). Only tests import this package.
package metricsref

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

// Metric is one metric a provider registers.
type Metric struct {
	// Name is the full name, cloudprovider_<p>_...
	Name string
	// Kind is counter, gauge or histogram.
	Kind string
	// Labels are its variable labels in their declared order (a histogram's le not
	// among them).
	Labels []string
	// Help is its help text without the stability level.
	Help string
}

// Provider returns every metric that a provider named providerName with every part on
// (instances, load balancers with target groups, routes and the sweeper) registers,
// sorted by name.
func Provider(providerName string) ([]Metric, error) {
	reg := &recordingRegistry{KubeRegistry: metrics.NewKubeRegistry()}
	on := true
	cloud, err := fake.New(fake.Config{Capabilities: fake.Capabilities{TargetGroups: &on}})
	if err != nil {
		return nil, err
	}
	cfg := provider.Config{
		Cluster: provider.ClusterConfig{ID: "c"},
		Enable:  provider.EnableConfig{Routes: &on},
		Sweeper: provider.SweeperConfig{Enabled: true},
	}
	if _, err := provider.New(cfg, cloud, provider.Options{ProviderName: providerName, Metrics: reg}); err != nil {
		return nil, err
	}
	var out []Metric
	for _, m := range reg.registered {
		var kind string
		switch m.(type) {
		case *metrics.Counter, *metrics.CounterVec:
			kind = "counter"
		case *metrics.Histogram, *metrics.HistogramVec:
			kind = "histogram"
		case *metrics.Gauge, *metrics.GaugeVec:
			kind = "gauge"
		default:
			return nil, fmt.Errorf("metric %s: a %T, which the reference does not know", m.FQName(), m)
		}
		descs := make(chan *prometheus.Desc, 8)
		m.Describe(descs)
		close(descs)
		for d := range descs {
			name, help, labels, err := parseDesc(d.String())
			if err != nil {
				return nil, err
			}
			out = append(out, Metric{Name: name, Kind: kind, Labels: labels, Help: strings.TrimPrefix(help, "[ALPHA] ")})
		}
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// descPattern reads prometheus.Desc's String form, the one public view of a descriptor's
// help and variable labels; fields between help and variableLabels (client_golang added
// unit in the versions Kubernetes 1.37 uses) are skipped.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), (?:[a-zA-Z]+: (?:"(?:[^"\\]|\\.)*"|\{[^}]*\}), )*variableLabels: \{([^}]*)\}\}$`)

// parseDesc returns the name, help and variable labels of a descriptor's String form.
func parseDesc(s string) (name, help string, labels []string, err error) {
	match := descPattern.FindStringSubmatch(s)
	if match == nil {
		return "", "", nil, fmt.Errorf("a descriptor's String form changed: %s", s)
	}
	if name, err = strconv.Unquote(match[1]); err != nil {
		return "", "", nil, fmt.Errorf("%s: %w", s, err)
	}
	if help, err = strconv.Unquote(match[2]); err != nil {
		return "", "", nil, fmt.Errorf("%s: %w", s, err)
	}
	for _, l := range strings.Split(match[3], ",") {
		if l != "" {
			labels = append(labels, l)
		}
	}
	return name, help, labels, nil
}

// recordingRegistry is a metrics registry that remembers what was registered with it.
type recordingRegistry struct {
	metrics.KubeRegistry
	registered []metrics.Registerable
}

func (r *recordingRegistry) Register(m metrics.Registerable) error {
	if err := r.KubeRegistry.Register(m); err != nil {
		return err
	}
	r.registered = append(r.registered, m)
	return nil
}

func (r *recordingRegistry) MustRegister(ms ...metrics.Registerable) {
	r.KubeRegistry.MustRegister(ms...)
	r.registered = append(r.registered, ms...)
}
