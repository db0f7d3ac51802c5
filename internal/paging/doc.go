// Package paging is the one loop through a cloud's paged lists that every list in ccmkit
// uses: the instance snapshot, the load balancer snapshot and lookup, target groups, the
// route table and the sweeper's lists.
//
// No caller sees an item twice: All hands each ID (the ID function the caller gives,
// such as LoadBalancerID) over once per list, however often the cloud's pages repeat it (a
// cloud that pages by offset repeats an item when one is created between two page reads,
// and a caller that counted it twice would delete a load balancer as its own duplicate).
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
