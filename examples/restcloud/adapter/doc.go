// Package adapter is the ccmkit adapter of restcloud, the JSON-over-HTTP cloud API of
// package server: a cloudapi.Client over net/http, as a cloud team writes one.
// Blank-importing it registers the cloud provider "restcloud"; its cloud config has a
// `restcloud:` section with the API endpoint, and the API token under credentials.
//
// Failures are *cloudapi.Error: a 404 with the API's error body of code "not_found" is
// ErrNotFound, 409 ErrConflict, 429 ErrThrottled with the Retry-After wait, other 4xx (401
// too) ErrInvalidRequest; 5xx, timeouts, canceled contexts, lost connections and
// unreadable answers are ErrTransient. Any other 404 (empty, HTML, plain text, JSON of
// another code) is not the API's answer but a wrong base path in the endpoint or a proxy:
// it is ErrInvalidRequest, never "gone", and its message says to check the endpoint.
// The client follows no redirect (Go's follows a 301, 302 or 303 answer to a write with a
// GET, whose 200 would read as success): a 3xx is ErrInvalidRequest naming its Location.
// A 2xx answer is read whole, at most MaxAnswerBytes (MaxReadBytes for a read): a longer
// one is ErrTransient, never
// decoded in part.
//
// Retry-After (read on 429 and 5xx answers) is whole seconds or an HTTP date, counted
// from the answer's Date header, so that the two clocks need not agree. A wait is at most
// 24 hours: a larger value is cut to that, never overflowing into a negative or wrapped
// duration (ccmkit caps the wait lower still). An absent, zero, negative, signed,
// fractional or garbled value, a date in the past, or a date without a Date header asks
// for no wait; ccmkit then backs off on its own (cloudapi.ParseRetryAfter reads it).
//
// restcloud's load balancers have a size (small, medium, large), declared to ccmkit as
// Settings when the provider registers: ccmkit reads it from the Service's size
// annotation and hands it over in cloudapi.LoadBalancerSpec.SettingValues, which the adapter
// carries as the API's size field. A spec with any other setting is refused with
// ErrInvalidRequest before any request, never sent without it.
//
// The token is sent as a bearer token and appears in no error. The client neither
// retries, caches nor rate-limits: ccmkit does that above it.
package adapter
