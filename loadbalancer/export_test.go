package loadbalancer

// AnnotationReference is annotationReference, for the reference's test.
var AnnotationReference = annotationReference

// LockUsers is how many calls hold or wait for the lock of owner (a Service's UID, or
// "share:" and a share's key).
func (l *LoadBalancer) LockUsers(owner string) int { return l.services.Users(owner) }

// Remembered returns how many entries each of the LoadBalancer's per-Service memories
// holds, by name, and the snapshot's entries.
func (l *LoadBalancer) Remembered() map[string]int {
	out := map[string]int{"selecting": l.tracked.size(), "members": l.shares.shares()}
	l.report.mu.Lock()
	out["reported"], out["told"], out["throttledAt"] = len(l.report.reported), len(l.report.told), len(l.report.throttledAt)
	l.report.mu.Unlock()
	l.snap.mu.Lock()
	out["snapshot"] = len(l.snap.services)
	l.snap.mu.Unlock()
	return out
}
