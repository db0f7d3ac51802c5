package provider

import (
	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// MetricsRegistry is where the cloud API metrics are registered.
type MetricsRegistry = metrics.KubeRegistry

func instrument(client cloudapi.Client, _ Config, _ Options) (cloudapi.Client, error) {
	return client, nil
}
