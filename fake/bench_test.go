package fake_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

// benchCloud is a cloud of n instances with two addresses and a tag each, the shape of a
// large cluster's nodes.
func benchCloud(b *testing.B, n, pageSize int) *fake.Cloud {
	b.Helper()
	cfg := fake.Config{PageSize: pageSize}
	for i := range n {
		cfg.Instances = append(cfg.Instances, fake.Instance{
			ID:   fmt.Sprintf("i-%06d", i),
			Name: fmt.Sprintf("node-%06d", i),
			Zone: "eu-1a",
			Addresses: []fake.Address{
				{Type: cloudapi.AddressInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)},
				{Type: cloudapi.AddressHostname, Address: fmt.Sprintf("node-%06d", i)},
			},
			Tags: map[string]string{"pool": fmt.Sprint(i % 4)},
		})
	}
	c, err := fake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkGetInstance is the cost of one GetInstance in a cloud of 5,000 instances.
func BenchmarkGetInstance(b *testing.B) {
	api := benchCloud(b, 5000, 500).Instances()
	ctx := b.Context()
	i := 0
	for b.Loop() {
		if _, err := api.GetInstance(ctx, fmt.Sprintf("i-%06d", i%5000)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkListInstancesPage is the cost of one 500-item page of ListInstances in a cloud
// of 5,000 instances.
func BenchmarkListInstancesPage(b *testing.B) {
	api := benchCloud(b, 5000, 500).Instances()
	ctx := b.Context()
	token := ""
	for b.Loop() {
		page, err := api.ListInstances(ctx, cloudapi.ListOptions{PageToken: token})
		if err != nil {
			b.Fatal(err)
		}
		token = page.NextPageToken
	}
}

// BenchmarkListAllInstances is the cost of listing all 5,000 instances, ten pages of 500:
// what one refresh of ccmkit's instance snapshot costs the fake.
func BenchmarkListAllInstances(b *testing.B) {
	api := benchCloud(b, 5000, 500).Instances()
	ctx := b.Context()
	for b.Loop() {
		token, n := "", 0
		for {
			page, err := api.ListInstances(ctx, cloudapi.ListOptions{PageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Items)
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		if n != 5000 {
			b.Fatalf("listed %d instances, want 5000", n)
		}
	}
}

// BenchmarkListInstancesFiltered is the cost of listing the quarter of 5,000 instances
// that carry a tag.
func BenchmarkListInstancesFiltered(b *testing.B) {
	api := benchCloud(b, 5000, 500).Instances()
	ctx := b.Context()
	filter := map[string]string{"pool": "3"}
	for b.Loop() {
		token := ""
		for {
			page, err := api.ListInstances(ctx, cloudapi.ListOptions{PageToken: token, Tags: filter})
			if err != nil {
				b.Fatal(err)
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
	}
}

// BenchmarkLoadBalancerWrite is the cost of one UpdateLoadBalancer in a cloud of 1,000
// load balancers (two listeners, a health check and ten targets each) and 100 instances:
// in memory, and saved to a state file (fsync of the file and its directory included): on
// the file system of the test's temporary directory, and on tmpfs.
func BenchmarkLoadBalancerWrite(b *testing.B) {
	for _, tc := range []struct {
		name     string
		stateDir func(*testing.B) string // nil: no state file
	}{
		{"in memory", nil},
		{"state file", func(b *testing.B) string { return b.TempDir() }},
		{"state file on tmpfs", func(b *testing.B) string { return stateDir(b) }}, // without the disk's sync latency, where /dev/shm exists
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := fake.Config{AddressPools: fake.AddressPools{Public: fake.Pool{IPv4: []string{"10.0.0.0/16"}}}}
			for i := range 100 {
				cfg.Instances = append(cfg.Instances, fake.Instance{ID: fmt.Sprintf("i-%06d", i), Name: fmt.Sprintf("node-%06d", i), Zone: "eu-1a"})
			}
			if tc.stateDir != nil {
				cfg.StateFile = tc.stateDir(b) + "/state.json"
			}
			c, err := fake.Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			api, _ := c.LoadBalancers()
			ctx := b.Context()
			specOf := func(i, shift int) cloudapi.LoadBalancerSpec {
				s := cloudapi.LoadBalancerSpec{
					Name: fmt.Sprintf("lb-%d", i),
					Listeners: []cloudapi.Listener{
						{Name: "http", Protocol: cloudapi.ProtocolTCP, Port: 80, TargetPort: 30080},
						{Name: "https", Protocol: cloudapi.ProtocolTCP, Port: 443, TargetPort: 30443},
					},
					HealthCheck: &cloudapi.HealthCheck{Protocol: cloudapi.HealthCheckHTTP, Port: 10256, Path: "/healthz", Interval: 10 * time.Second},
					Tags:        map[string]string{cloudapi.TagCluster: "bench", cloudapi.TagService: fmt.Sprintf("uid-%d", i)},
				}
				for t := range 10 {
					s.Targets = append(s.Targets, fmt.Sprintf("i-%06d", (i+t+shift)%100))
				}
				return s
			}
			ids := make([]string, 1000)
			for i := range ids {
				lb, err := api.CreateLoadBalancer(ctx, specOf(i, 0))
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = lb.ID
			}
			n := 0
			for b.Loop() {
				i := n % len(ids)
				n++
				if _, err := api.UpdateLoadBalancer(ctx, ids[i], cloudapi.LoadBalancerUpdate{Spec: specOf(i, n)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
