// Package hcloudpeer is the Hetzner-shaped column of `make bench`: ccmkit with the
// Hetzner Cloud adapter of examples/hcloud (its own code, through the hcloud-go SDK) over
// that example's stateful mock of the Hetzner Cloud API (hcloudmock, on the SDK's own wire
// types), with every request counted at the mock by its route ("GET /servers",
// "POST /load_balancers/{id}/actions/add_target").
//
// The mock holds the benchmark's world as a Hetzner project would: a server per instance
// (running, type cx22, instance i's zone as a location: fsn1, nbg1, hel1, all in network
// zone eu-central; the adapter reports the location as the region), in a private network ("bench", 10.0.0.0/8) at the
// world's private address moved on by one (the network's first address is its gateway),
// and the two certificates the benchmark's Service with every setting names. The adapter is configured as its README gives a cluster with a private
// network: the network (its routes carry the pod network) and a default location (fsn1).
// ccmkit's cloudAPI section is the ccmkit column's (the same page size asked for, which the
// adapter caps at the API's 50; the same client-side limit), so the two columns differ
// only in the cloud.
//
// The requests go through the SDK's HTTP client to the mock's handler in the same process
// (no socket): every request is encoded and decoded as on the wire. What the mock does not
// model, and how that favours the column:
//
//   - Actions are done in the answer that starts them: a write costs one request. The
//     real API answers most with a running action, which the adapter polls (a read or
//     more per write), so the column's reads, total requests and times are a floor; its
//     writes are what they would be.
//   - A deleted server stays a target of its load balancers until they are written
//     without it, which counts against the column: node_delete's remove_target per load
//     balancer is a ceiling (the real API may drop a deleted server's targets itself).
//   - The project's rate limit (3,600 requests an hour, one more each second) is off: the
//     figures count requests, and the report sets P1 against the budget instead.
//   - Hetzner's limits on sizes: a load balancer holds at most 150 targets (lb31), a
//     network 100 routes. The world gives every load balancer every Node and every Node a
//     route, as on the other clouds, so above 150 Nodes no Hetzner project could hold it;
//     the requests are the ones the adapter would make. At 5,000 Nodes a page of 50 such
//     load balancers (about 28 MB) is past ccmkit's bound on an answer
//     (cloudapi.MaxAnswerBytes), so every list of them fails and ccmkit reads each
//     Service's load balancer by ID instead (P4, P2 and node_add show it).
package hcloudpeer
