package fake_test

import (
	"fmt"
	"testing"

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
