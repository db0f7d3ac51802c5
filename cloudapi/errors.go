package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The sentinel errors every backend maps its own errors onto. Callers test for them with
// errors.Is; a backend returns them wrapped (fmt.Errorf("...: %w", ErrNotFound)) or as an
// *Error, which matches its Class.
var (
	// ErrNotFound means the cloud is certain the resource does not exist. It must never be
	// returned for a failure to find out (timeouts, throttling, server errors), nor for an
	// answer that is not the API's own typed not-found (a bare HTTP 404 may come from a
	// wrong base path or a proxy): ccmkit deletes Nodes and forgets load balancers on
	// ErrNotFound.
	ErrNotFound = errors.New("not found")

	// ErrConflict means the request clashes with existing state: a resource with the same
	// unique name or destination already exists, or a requested address is in use. The
	// request was not applied.
	ErrConflict = errors.New("conflict")

	// ErrThrottled means the cloud refused the request because of its rate limit. The
	// request was not applied. RetryAfter returns how long the cloud asked callers to wait.
	ErrThrottled = errors.New("throttled")

	// ErrInvalidRequest means the cloud rejected the request as malformed or unsupported.
	// Retrying the same request cannot succeed.
	ErrInvalidRequest = errors.New("invalid request")

	// ErrTransient means the outcome is unknown or the cloud failed temporarily: a timeout,
	// a lost connection, a server error. A read may be retried. A write may have been
	// applied; callers must find out (for example by listing by tags) before repeating a
	// create.
	ErrTransient = errors.New("transient failure")
)

// Error is a classified cloud API error with context. It matches its Class with errors.Is
// and unwraps to Err, the backend's own error, so neither the class nor the cause is lost.
type Error struct {
	// Class is one of the sentinel errors of this package.
	Class error
	// Op is the cloud API operation that failed, for example OpGetInstance.
	Op Operation
	// ID is the resource's ID, when the operation names one.
	ID string
	// RetryAfter is how long the cloud asked the caller to wait before the next request;
	// zero when it did not say. Set for ErrThrottled, and for ErrTransient when the cloud
	// sent a Retry-After.
	RetryAfter time.Duration
	// Err is the backend's underlying error, if any.
	Err error
}

// Error returns a message of the form "op id: class: cause".
func (e *Error) Error() string {
	msg := string(e.Op)
	if e.ID != "" {
		msg += " " + e.ID
	}
	if msg != "" {
		msg += ": "
	}
	class := "unclassified"
	if e.Class != nil {
		class = e.Class.Error()
	}
	msg += class
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is the error's Class.
func (e *Error) Is(target error) bool { return e.Class != nil && target == e.Class }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// NewError returns an *Error of the given class for op and id, wrapping cause (which may
// be nil).
func NewError(class error, op Operation, id string, cause error) *Error {
	return &Error{Class: class, Op: op, ID: id, Err: cause}
}

// Throttled returns an *Error of class ErrThrottled that asks the caller to wait
// retryAfter before the next request.
func Throttled(op Operation, retryAfter time.Duration, cause error) *Error {
	return &Error{Class: ErrThrottled, Op: op, RetryAfter: retryAfter, Err: cause}
}

// RetryAfter returns the wait that err asks for, and whether it asked for one.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

// ClassOf returns the sentinel of this package that err matches, or nil when err is nil
// or matches none. Errors of the context package are ErrTransient: the caller gave up, so
// the outcome is unknown.
func ClassOf(err error) error {
	if err == nil {
		return nil
	}
	for _, class := range []error{ErrNotFound, ErrConflict, ErrThrottled, ErrInvalidRequest, ErrTransient} {
		if errors.Is(err, class) {
			return class
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ErrTransient
	}
	return nil
}

// IsNotFound reports whether err says, with certainty, that the resource does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
