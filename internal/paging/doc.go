// Package paging is the one loop through a cloud's paged lists that every list in ccmkit
// uses: the instance snapshot, the load balancer snapshot and lookup, target groups, the
// route table and the sweeper's lists. They call the typed lists, Instances,
// LoadBalancers, Routes and TargetGroups, which hold what every list needs once: the page
// call with the caller's tag filter and page size, a page the cloud did not answer (no
// page and no error) read as NoPage (cloudapi.ErrTransient, never an empty list), and the
// tag filter checked again on every item, so that a backend that ignored it never makes
// ccmkit touch another owner's resource. All is the loop under them.
//
// No caller sees an item twice, nor one without an ID: All hands each ID over once per
// list, however often the cloud's pages repeat it (a cloud that pages by offset repeats an
// item when one is created between two page reads, and a caller that counted it twice
// would delete a load balancer as its own duplicate), and leaves out an item without an
// ID (which could be such a repeat, and which nothing can update or delete). The typed
// lists check the tag filter before All counts an ID, so that a stale copy that lacks the
// tags does not hide the current one.
//
// A cloud's page tokens are trusted no further than they must be. The loop ends with an
// error matching ErrBadPaging, never spinning, when the cloud answers a token it answered
// before in the same list (a→b→a cycles as well as a token repeated at once), or when the
// list takes more than MaxPages pages; and it ends with the context's error when the
// context ends between two pages. So every list ends, with a result or an error, after at
// most MaxPages calls. The tokens answered are kept as a 64-bit hash each, never the
// tokens themselves: a list holds at most MaxPages * 8 bytes of them, however long the
// cloud's tokens are.
package paging
