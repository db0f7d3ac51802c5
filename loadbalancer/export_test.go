package loadbalancer

// AnnotationReference is annotationReference, for the reference's test.
var AnnotationReference = annotationReference

// LockUsers is how many calls hold or wait for the lock of owner (a Service's UID, or
// "share:" and a share's key).
func (l *LoadBalancer) LockUsers(owner string) int { return l.services.Users(owner) }
