// Package paging is the one loop through a cloud's paged lists that every list in ccmkit
// uses: the instance snapshot, the load balancer snapshot and lookup, and the route table.
//
// A cloud's page tokens are trusted no further than they must be. The loop ends with an
// error matching ErrBadPaging, never spinning, when the cloud answers a token it answered
// before in the same list (a→b→a cycles as well as a token repeated at once), or when the
// list takes more than MaxPages pages; and it ends with the context's error when the
// context ends between two pages. So every list ends, with a result or an error, after at
// most MaxPages calls.
package paging
