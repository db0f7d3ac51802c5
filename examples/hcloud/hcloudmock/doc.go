// Package hcloudmock is a stateful mock of the Hetzner Cloud API for tests of code built
// on the official SDK (github.com/hetznercloud/hcloud-go/v2): an http.Handler that
// speaks the API's wire format through the SDK's own schema types, so an
// hcloud.NewClient(hcloud.WithEndpoint(url), ...) cannot tell it from the API for what it
// models.
//
//	m, err := hcloudmock.New(hcloudmock.Config{Servers: ..., ActionPolls: 2})
//	srv := httptest.NewServer(m)
//	client := hcloud.NewClient(hcloud.WithEndpoint(srv.URL), hcloud.WithToken("t"),
//		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}))
//
// The SDK retries conflict, rate_limit_exceeded, bad_gateway and timeout answers by
// itself; a test that counts calls turns that off as above.
//
// What it models:
//   - servers (seeded, or added and deleted from Go with AddServer and DeleteServer; list with label_selector, name, status, sort, page, per_page; get),
//     certificates (seeded; list, get) and networks (seeded; list, get, add_route and
//     delete_route, a route being its destination: a second route to one is
//     uniqueness_error, deleting a route that is not there invalid_input);
//   - load balancers: seeded (Config.LoadBalancers, each the API's create request, made
//     as a create makes it, with no action), list, get, create (services, targets,
//     labels, algorithm, type, location or network_zone, network, public_interface),
//     update (name, labels), delete, and the actions add_service, update_service, delete_service, add_target,
//     remove_target, change_algorithm, change_type, attach_to_network,
//     detach_from_network, enable_public_interface, disable_public_interface; public
//     addresses from pools, in order, never twice; private ones from the network;
//   - actions (GET /actions?id=..., /actions/{id}, /load_balancers/actions/{id},
//     /networks/actions/{id}): running for Config.ActionPolls reads and
//     Config.ActionDuration on Config.Clock, then success; while one runs, any write to
//     its resource answers locked (423). An action that ends by reads alone
//     (ActionPolls without ActionDuration) ends only if someone reads it: a client that
//     gives up polling (throttled, its context ended) leaves its resource locked for good,
//     which the real API's actions, ending by time, never do; a long-running test sets
//     ActionDuration;
//   - errors in the API's body {"error": {"code", "message", "details"}} with its status
//     codes (invalid_input with per-field details); a request without Authorization is
//     unauthorized;
//   - the project's rate limit: a token bucket (internal/pace) over all requests,
//     RateLimit-Limit, -Remaining and -Reset on every answer, 429 rate_limit_exceeded
//     when empty;
//   - Calls per route pattern (Calls.Sub for what came since, Calls.Writes for the
//     requests that are not GETs), Inventory, and scripted faults (Inject): the next N
//     calls to an endpoint answer an error, or start an action that fails and changes
//     nothing.
//
// What it does not model: other resources (volumes, floating and primary IPs,
// firewalls, placement groups, server actions, creating servers, networks or
// certificates); a server's datacenter (v2.52.0's wire type has only its location) and
// its load_balancers field, a network's servers and load_balancers fields beyond the
// seed, subnets; label selector targets resolved to servers, health statuses, metrics,
// protection, the limits of a load balancer type, per-resource action lists
// (/load_balancers/{id}/actions); the exact status of the API's resource-specific error
// codes (target_already_defined, ... answer 422 unless listed in errors.go; the SDK reads
// the code); JSON null in meta.pagination (0 instead, which the SDK reads the same). It
// checks no token: any Authorization header passes.
package hcloudmock
