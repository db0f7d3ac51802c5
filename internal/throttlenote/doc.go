// Package throttlenote carries in a context a note of whether the cloud throttled a call
// made with it: a call's answer of class cloudapi.ErrThrottled, or a wait for the hold a
// throttled answer (of this call or another) set, even when the call then succeeds.
// internal/cloudclient, which sees both, records them (Record); the caller that wants to
// know (package loadbalancer, for the Service it syncs) takes a note first (With) and
// reads it after its calls (Note.Count). A context without a note records nothing.
package throttlenote
