// Package server is a small JSON-over-HTTP cloud API, served by an http.Handler over an
// in-memory *fake.Cloud. It stands in for a real cloud's REST API, so that the restcloud
// adapter can be built and tested the way a cloud team builds theirs: against HTTP, not
// against Go interfaces.
//
// # Authentication
//
// Every request carries the header "Authorization: Bearer <token>". A missing or wrong
// token is answered 401 Unauthorized; the answer never repeats the token.
//
// # Paths
//
//	GET    /v1/instances?tag=k=v&tag=k2=v2&pageSize=N&pageToken=T   one page of instances
//	GET    /v1/instances/{id}                                      one instance
//	GET    /v1/loadbalancers?tag=k=v&pageSize=N&pageToken=T        one page of load balancers
//	POST   /v1/loadbalancers                                       create a load balancer
//	GET    /v1/loadbalancers/{id}                                  one load balancer
//	PUT    /v1/loadbalancers/{id}                                  replace a load balancer's spec
//	DELETE /v1/loadbalancers/{id}                                  delete a load balancer
//	GET    /v1/routes?tag=k=v&pageSize=N&pageToken=T               one page of routes
//	POST   /v1/routes                                              create a route
//	DELETE /v1/routes/{id}                                         delete a route
//
// Each tag parameter is a key and a value separated by the first '='; a list holds only
// resources carrying every given tag. Lists are ordered by ID. pageSize is the most items
// wanted (absent or 0: the server's default; the server may answer fewer); pageToken is
// the nextPageToken of the page before. An empty nextPageToken marks the last page.
//
// # Bodies
//
// Requests and answers are JSON (Content-Type: application/json). Unknown fields in a
// request body are refused with 400.
//
//	Instance      {"id", "name", "type", "zone", "region", "state",
//	               "addresses": [{"type", "address"}], "tags": {"k": "v"}}
//	LoadBalancer  {"id", "status", "addresses": ["203.0.113.1"], "hostname": "lb-1.example.com"
//	               (absent when the cloud gives none), and the spec's fields}
//	LB spec       {"name", "internal", "listeners": [{"name", "protocol", "port", "targetPort",
//	               "appProtocol": "", "TLS", "HTTP" or "HTTPS", "certificates": ["cert-1"]}],
//	               "targets": ["i-1"], "healthCheck": {"protocol", "port", "path",
//	               "intervalMillis", "timeoutMillis", "healthyThreshold", "unhealthyThreshold"},
//	               "sourceRanges", "proxyProtocol", "ipFamilies", "requestedIPs", "tags",
//	               "sessionAffinity": "" or "ClientIP", "sessionAffinityTimeoutMillis",
//	               "size": "small", "medium" or "large" (absent: built small)}
//	Route         {"id", "blackhole", and the spec's fields}
//	Route spec    {"name", "destinationCIDR", "targetInstanceID", "targetAddress", "tags"}
//	Page          {"items": [...], "nextPageToken": "T"}
//	Error         {"code": "not_found", "message": "..."}
//
// POST and PUT of a load balancer take its spec; PUT replaces the whole spec. POST of a
// route takes its spec. Health check and session affinity durations are whole milliseconds.
// A load balancer's size can be changed in place by a PUT; an unknown size is 400.
//
// # Status codes
//
//	200 OK                   a read or a PUT; the body is the resource or page
//	201 Created              a POST; the body is the resource as stored
//	204 No Content           a DELETE
//	400 Bad Request          a malformed or unsupported request (code "invalid")
//	401 Unauthorized         a missing or wrong bearer token (code "unauthorized")
//	404 Not Found            the resource does not exist (code "not_found"); see below
//	409 Conflict             a name, destination or address is taken (code "conflict")
//	429 Too Many Requests    over the rate limit; Retry-After says how many seconds to wait
//	503 Service Unavailable  a temporary failure; the outcome of a write is unknown
//
// A request refused with 401 or 429 never reaches the cloud.
//
// Every answer about a resource that does not exist is 404 with the error body of code
// "not_found", and only that answer says so. A path that is not in the list above (a
// wrong base path or API version) is answered by Go's http.ServeMux: 404 with a plain
// text body, which says nothing about any resource, just like the 404 page of a proxy in
// front of the API. Clients must not read it as "not found".
//
// # Rate limit
//
// Options.RateLimit turns on a token bucket over all requests: it holds Burst tokens,
// refills QPS tokens per second, and every request takes one. A request that finds the
// bucket empty is answered 429 with Retry-After set to the whole seconds until the next
// token.
package server
