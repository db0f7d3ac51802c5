package faultinject_test

import (
	"context"
	"testing"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/cloudapi/faultinject"
)

func BenchmarkGetInstance(b *testing.B) {
	rules := []faultinject.Rule{
		{Ops: []cloudapi.Operation{cloudapi.OpCreateRoute}, Probability: 0.1, Kind: faultinject.Ambiguous},
		{Probability: 0.01, Kind: faultinject.Transient},
		{Probability: 0.01, Kind: faultinject.Throttle},
	}
	benchmarks := []struct {
		name string
		cfg  faultinject.Config
	}{
		{name: "zero config"},
		{name: "three rules", cfg: faultinject.Config{Rules: rules}},
		{name: "rules, latency and rate limit", cfg: faultinject.Config{
			Rules:     rules,
			Latency:   faultinject.Exponential(0, 0),
			RateLimit: &faultinject.RateLimit{QPS: 1e12, Burst: 1 << 30},
		}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			c := faultinject.Wrap(&stubCloud{}, bm.cfg)
			in := c.Instances()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = in.GetInstance(ctx, "i-1")
			}
		})
	}
}
