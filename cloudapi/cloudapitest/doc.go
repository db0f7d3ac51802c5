// Package cloudapitest is the behavioural contract suite of package cloudapi: the tests
// that every cloudapi.Client must pass, whatever cloud it speaks to.
//
// An adapter proves itself with one test that hands Run a constructor of fresh, isolated
// backends:
//
//	func TestContract(t *testing.T) {
//		cloudapitest.Run(t, func(t testing.TB, f cloudapitest.Fixture) cloudapi.Client {
//			return newTestAccount(t, f.Instances) // a backend holding exactly f.Instances
//		})
//	}
//
// Run builds a new backend for every subtest, so subtests never see each other's load
// balancers or routes. The subtests are grouped by API:
//
//   - instances: GetInstance returns the stored instance field by field and as a copy;
//     an unknown ID is ErrNotFound; ListInstances pages completely, in ID order, without
//     duplicates, for every page size, and filters by tags.
//   - loadbalancers (skipped when Client.LoadBalancers reports false): create, get,
//     update with DiffLoadBalancer changes and delete round-trip the spec; a new load
//     balancer becomes active within WithProvisioningReads reads with an address of every
//     requested family; names and addresses are unique, also under concurrent creates;
//     unknown IDs are ErrNotFound, duplicate names ErrConflict, impossible specs
//     ErrInvalidRequest; owner tags find exactly the owned load balancers; paging holds
//     over a set that changes between pages. The optional settings (session affinity, a
//     TLS listener with two certificates, an HTTP listener, an HTTPS listener, an adapter
//     setting the backend does not know) are either kept exactly through create, get,
//     list and updates that remove and add them, or refused with ErrInvalidRequest by
//     create and update alike: a backend that stores a spec without a part it was given
//     fails. The adapter settings the backend declares (WithSettings) must be kept
//     exactly through a create, updates from one set to the next, to none and back.
//   - routes (skipped when Client.Routes reports false): create, list and delete
//     round-trip, IPv4 and IPv6; duplicate destinations are ErrConflict, malformed CIDRs
//     and unknown targets ErrInvalidRequest, unknown IDs ErrNotFound; tag filters and
//     paging; concurrent creates. A route API whose routes carry no tags
//     (cloudapi.TaglessRouteAPI, found by cloudapi.RoutesCarryNoTags) must answer
//     every route without tags, by the same ID in every list, list routes of any
//     owner without Tags and none with, and delete by its own IDs. A backend whose
//     routes are IPv4 only runs with WithIPv4RoutesOnly.
//   - concurrency: many goroutines reading and writing the same backend, also the same
//     load balancer, leave it consistent. Run the suite with -race.
//   - errors: every not-found answer matches ErrNotFound with errors.Is and no other
//     class, and a canceled context never reads as not found.
//
// A cloud that cannot hold the suite's instances as it makes them (numeric IDs only, no
// host names among the addresses, no terminated state) runs the suite with
// WithInstanceShape: its instances are then seeded, compared and named as that cloud
// holds them.
//
// A REST adapter also runs RunMiddlebox, with a NewRESTBackend that serves its API: a
// middlebox in front of the API answers every write with a redirect (each of
// RedirectStatuses, to a URL that answers GET with 200) or with a 200 longer than the
// adapter's bound, and every write (load balancer and route create, update, delete) must
// fail, a redirect with ErrInvalidRequest naming its Location, leaving the API unchanged.
//
// Every failure message quotes the promise of the cloudapi documentation that the backend
// broke, so an adapter author knows which doc comment to read.
//
// A cloud whose load balancers keep or support less than the spec (no listener names, one
// health check threshold, no UDP, no source ranges) runs the suite with
// WithLoadBalancerShape and the shape its adapter declares: what is not kept is not
// compared, every unsupported part and every exclusive pair must be refused by create and
// update alike, and the suite's health checks and families are within what the shape
// declares. A cloud that takes only its own certificate references names two with
// WithCertificates, and one that lists IDs in another order than byte-wise gives it with
// WithIDOrder.
//
// Without a shape, the suite expects load balancers to support both IP families and TCP and UDP
// listeners, and public (not internal) load balancers; it reads states by counting calls,
// never by waiting, so a backend whose load balancers become active after a time must be
// built to finish provisioning within WithProvisioningReads reads.
package cloudapitest
