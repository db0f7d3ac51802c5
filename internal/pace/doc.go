// Package pace paces cloud API calls: a token bucket in its GCRA form, shared by the
// client-side rate limit of internal/cloudclient and the server-side rate limit of
// cloudapi/faultinject, and a sleep that ends with its context.
package pace
