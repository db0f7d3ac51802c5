// Package instancecache is the one instance snapshot that instances, zones and routes
// share: a paginated list of every instance, refreshed when it is older than a maximum
// age, answering lookups by ID and by name.
//
// Its rules keep the cloud API quiet without ever lying about an instance being gone:
//
//   - A lookup in a fresh snapshot costs no cloud call.
//   - Concurrent lookups that need a refresh share one list (one fetch for all of them).
//   - An ID missing from a fresh snapshot is fetched by ID (one call), not by relisting;
//     after more such misses than a relist costs in pages, the next miss relists instead.
//   - "Not found" is only ever answered from the cloud's own authoritative answer: a
//     GetInstance that returned ErrNotFound, or, for lookups by name (the cloud has no
//     get-by-name), a list that completed after the lookup began.
//   - Errors are never cached.
package instancecache
