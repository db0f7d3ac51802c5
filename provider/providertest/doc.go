// Package providertest gives a test, in one call, a ready cloudprovider.Interface over
// ccmkit's in-memory fake cloud, with the fake at hand for assertions: what it holds, what
// it was asked, and faults on demand. It is to ccmkit's provider what net/http/httptest
// is to a handler, and what replaces k8s.io/cloud-provider/fake in a controller's tests
// (docs/migrating-from-cloud-provider-fake.md maps every field of that fake).
//
//	c := providertest.New(t, providertest.WithFake(fake.Config{
//		Instances: []fake.Instance{
//			{ID: "i-1", Name: "node-1", Zone: "eu-1a"},
//			{ID: "i-2", Name: "node-2", Zone: "eu-1b"},
//		},
//	}))
//	ctrl, err := servicecontroller.New(c.Provider, kube, services, nodes, "test", utilfeature.DefaultFeatureGate)
//	// ... run the controller, create a Service of type LoadBalancer ...
//	assert.Len(t, c.Fake.Inventory().LoadBalancers, 1, c.Describe())
//	assert.Equal(t, fake.Calls{cloudapi.OpListLoadBalancers: 2, cloudapi.OpCreateLoadBalancer: 1}, c.Fake.Calls())
//
// The same cloud in YAML, as the `fake:` section of a cloud config file, with the
// provider's settings beside it:
//
//	c := providertest.New(t, providertest.WithYAML(`
//	cluster: {id: test}
//	fake:
//	  instances:
//	    - {id: i-1, name: node-1, zone: eu-1a}
//	`))
//
// # What New builds
//
// A fake.Cloud (Cloud.Fake), optionally behind a faultinject.Client (WithFaults,
// Cloud.Faults), and ccmkit's provider over it (Cloud.Provider) assembled with
// provider.New: never through the global registry of cloud providers, with a metrics
// registry of its own (Cloud.Metrics), so tests run in parallel without colliding. Every
// sub-interface is on: InstancesV2, Instances, Zones, LoadBalancer and Routes (the
// provider alone leaves Routes off; here it is on whenever the cloud has routes).
//
// The provider differs from a production one in three defaults, because its client's
// rate limiter and retry backoff wait in real time and a test must be fast: the cloud API
// rate limit is DefaultQPS and DefaultBurst (1000, where the provider has 10 and 20), and
// a call is tried DefaultMaxAttempts times (once, where the provider tries 4 times). Set
// cloudAPI.qps, cloudAPI.burst or cloudAPI.retry.maxAttempts (WithYAML or WithConfig) to
// test those. The cluster ID is DefaultClusterID unless set.
//
// # Time
//
// The provider's caches and the fake's provisioning read a clock that starts at a fixed
// instant (Cloud.Now) and moves only with Cloud.Advance, so that the calls a test counts do not depend on how fast
// the machine runs. ccmkit answers from its instance, load balancer and route table
// snapshots until they are older than cache.maxAge (one minute): after changing the cloud
// behind the provider's back (Fake.DeleteInstance, Fake.SetInstanceState, a route deleted
// through Fake.Routes), call c.ExpireSnapshots() before the controller pass that should
// see it. Advance lets the backoff of a failed list pass (internal/sharedlist's
// MinBackoff doubling to MaxBackoff), and fake.Provisioning.Duration.
//
// # Cleanup and failures
//
// New starts no goroutine. ccmkit runs its lookups on goroutines of their own, which end
// with the fake's answer, so nothing outlives the test (this package's tests check that
// with go.uber.org/goleak). New registers a cleanup with testing.TB.Cleanup that, when the
// test has failed, logs what the fake cloud held and the calls it received
// (Cloud.Describe), so that a failure says what the cloud saw. The provider's Initialize
// is not called: nothing in ccmkit needs it to answer, and a test that wants its events
// calls c.Provider.Initialize with a client builder and a stop channel of its own.
package providertest
