package cloudclient_test

import (
	"context"
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/cloudclient"
)

// benchCloud is a fake cloud with the instance i-1.
func benchCloud(b *testing.B) *fake.Cloud {
	b.Helper()
	c, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1"}}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkGetInstance measures what the decorator adds to a call that succeeds at once:
// the rate limit (high enough never to wait), the attempt context, metrics and logging
// checks.
func BenchmarkGetInstance(b *testing.B) {
	for _, bc := range []struct {
		name string
		qps  float64
	}{
		{"unlimited", 0},
		{"limited", 1e9},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := cloudclient.New(benchCloud(b), cloudclient.Options{ProviderName: "bench", QPS: bc.qps, Burst: cloudclient.MaxBurst, Registry: metrics.NewKubeRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			api := c.Instances()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := api.GetInstance(ctx, "i-1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetInstanceParallel measures the same from many goroutines, which share the
// Client's lock and metrics.
func BenchmarkGetInstanceParallel(b *testing.B) {
	c, err := cloudclient.New(benchCloud(b), cloudclient.Options{ProviderName: "bench", QPS: 1e9, Burst: cloudclient.MaxBurst, Registry: metrics.NewKubeRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	api := c.Instances()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := api.GetInstance(ctx, "i-1"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
