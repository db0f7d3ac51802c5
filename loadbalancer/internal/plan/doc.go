// Package plan holds the rules that decide what happens to a shared or duplicated load
// balancer, as pure functions of plain values: who a share's listeners belong to, what a
// Service joining a share makes of its load balancer (Join), what one leaving it leaves
// behind and whether it was the last one out (Leave), whose ports a Service waits for
// (Unserved), and which of several load balancers of one owner is kept (Duplicates).
// Nothing here calls the cloud, reads a clock or records an event: package loadbalancer
// reads the cluster and the cloud, asks these functions, writes what they decide and
// reports it, so that every caller decides ownership the same way, once.
package plan
