// Package sharedlist runs the list behind a snapshot of the cloud, the way each of
// ccmkit's snapshots (internal/instancecache's instances, loadbalancer's load balancers,
// routes' route table) needs it:
//
//   - One list at a time: callers that need the snapshot refreshed while a list is under
//     way wait for that list and share its result, success or error, instead of starting
//     their own.
//   - After a failed list, no new list starts until a backoff allows it: the wait doubles
//     with each failure in a row, from MinBackoff up to MaxBackoff, and a success resets
//     it (internal/pace's Backoff). Meanwhile callers get at once an error that says so
//     and wraps the failure, so an outage costs one list per backoff, not one per lookup.
//   - Every caller stops waiting when its own context ends, the one that started the
//     list too. The list runs on a goroutine of its own, with the first caller's context
//     values but without its cancellation, so one caller giving up fails no other, and
//     the list's result still serves the callers after it.
//
// The caller's snapshot stays the caller's: a Lister is guarded by the caller's own lock,
// which also guards what the caller's done condition reads and what a list's install
// writes, so that "is the snapshot recent enough" and "start a list" are one step.
package sharedlist
