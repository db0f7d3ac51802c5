package instancecache_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/internal/instancecache"
)

// BenchmarkSnapshotHeap reports the heap that a full snapshot of 5,000 instances retains
// (the fake cloud's own memory excluded), and the cost of one refresh (ten 500-item pages).
func BenchmarkSnapshotHeap(b *testing.B) {
	cfg := fake.Config{PageSize: 500}
	for i := range 5000 {
		cfg.Instances = append(cfg.Instances, fake.Instance{
			ID: fmt.Sprintf("i-%05d", i), Name: fmt.Sprintf("node-%05d", i), Type: "m5.large", Zone: "eu-1a",
			Addresses: []fake.Address{
				{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)},
				{Type: cloudapi.AddressHostname, Address: fmt.Sprintf("node-%05d", i)},
			},
		})
	}
	cloud, err := fake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var retained int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		cache := instancecache.New(cloud.Instances(), instancecache.Options{MaxAge: time.Hour, PageSize: 500})
		if _, err := cache.ByName(b.Context(), "node-04999"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained = int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(cache)
		b.StartTimer()
	}
	b.ReportMetric(float64(retained)/(1<<20), "MiB-retained")
}
