package cloudapi

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// ErrorCodes classify the errors of an API that answers a failed request with a typed
// error code (Hetzner's "rate_limit_exceeded", DigitalOcean's "too_many_requests"): the
// codes of each class, C being the SDK's type of a code. Any other code is
// ErrInvalidRequest. None is ErrNotFound: an adapter reads a not-found where the API is
// certain of it (the answer to a get of one ID; see the package doc), never from a code
// that any call may answer.
type ErrorCodes[C ~string] struct {
	// Throttled are the codes of the rate limit: ErrThrottled.
	Throttled []C
	// Conflict are the codes of a clash with existing state: ErrConflict.
	Conflict []C
	// Transient are the codes of temporary failures, after which the same call may
	// succeed: ErrTransient.
	Transient []C
	// Rules classify by status, code and message together, before the codes: the first
	// that matches decides. For an API whose codes do not tell its errors apart, or that
	// has none (one that answers "name is not unique" under 422, "busy" under 403).
	Rules []ErrorRule[C]
}

// ErrorRule is a rule of ErrorCodes: a failed request that matches every part the rule
// sets (Status, Code, Message) is of Class. A rule that sets none matches nothing.
type ErrorRule[C ~string] struct {
	// Status is the answer's HTTP status; 0 for any.
	Status int
	// Code is the API's error code; empty for any.
	Code C
	// Message matches the API's error message (FailedRequest.Message); nil for any.
	Message *regexp.Regexp
	// Class is ErrThrottled, ErrConflict, ErrTransient or ErrInvalidRequest. Never
	// ErrNotFound (see ErrorCodes): a rule of any other class classifies as ErrTransient,
	// its error saying why.
	Class error
}

// matches reports whether r matches the rule.
func (rule ErrorRule[C]) matches(r FailedRequest[C]) bool {
	if rule.Status == 0 && rule.Code == "" && rule.Message == nil {
		return false
	}
	return (rule.Status == 0 || rule.Status == r.Status) && (rule.Code == "" || rule.Code == r.Code) &&
		(rule.Message == nil || rule.Message.MatchString(r.Message))
}

// FailedRequest is what an adapter knows of a failed request, for ErrorCodes.Classify.
type FailedRequest[C ~string] struct {
	// Code is the API's error code; empty when the answer was not the API's typed error
	// (a proxy's page, the answer of a wrong endpoint) or there was no answer.
	Code C
	// Status is the answer's HTTP status; 0 without an answer (a lost connection, a
	// context that ended).
	Status int
	// RetryAt is when the API said the next request may be made (its rate limit's
	// reset); zero when it did not say.
	RetryAt time.Time
	// Message is the API's error message, for ErrorCodes.Rules; empty when it has none.
	Message string
}

// Classify returns err as an *Error of its class for op on id, err as its cause:
//
//	a redirect a GatedClient followed   ErrInvalidRequest
//	not
//	the first of Rules that matches     its Class (ErrThrottled with RetryAfter as below)
//	a code of Throttled                 ErrThrottled, RetryAfter until r.RetryAt (at least a second)
//	a code of Conflict or Transient     ErrConflict or ErrTransient
//	any other code                      ErrInvalidRequest
//	no code, a 3xx or 4xx answer        ErrInvalidRequest: not the API's answer (a wrong base
//	                                    URL, a proxy), never "gone"; so is a redirect a
//	                                    GatedClient followed not
//	no code, no or any other answer     ErrTransient: the outcome is unknown; so is an
//	                                    answer a GatedClient refused as too long, unread
//	                                    or not one JSON value
func (c ErrorCodes[C]) Classify(op Operation, id string, r FailedRequest[C], err error) *Error {
	e := NewError(ErrTransient, op, id, err)
	i := slices.IndexFunc(c.Rules, func(rule ErrorRule[C]) bool { return rule.matches(r) })
	switch {
	case errors.Is(err, errRedirected): // a GatedClient's request
		e.Class = ErrInvalidRequest
	case i >= 0 && !slices.Contains([]error{ErrThrottled, ErrConflict, ErrTransient, ErrInvalidRequest}, c.Rules[i].Class):
		e.Err = fmt.Errorf("%w (error rule %d classifies as %s, which no rule may: read as transient)", err, i, c.Rules[i].Class.Error())
	case i >= 0:
		e.Class = c.Rules[i].Class
	case r.Code == "" && r.Status >= 300 && r.Status < 500:
		e.Class, e.Err = ErrInvalidRequest, fmt.Errorf("%w: not the API's error: check the endpoint's base URL", err)
	case r.Code == "", slices.Contains(c.Transient, r.Code):
	case slices.Contains(c.Throttled, r.Code):
		e.Class = ErrThrottled
	case slices.Contains(c.Conflict, r.Code):
		e.Class = ErrConflict
	default:
		e.Class = ErrInvalidRequest
	}
	if errors.Is(e.Class, ErrThrottled) && !r.RetryAt.IsZero() {
		e.RetryAfter = max(time.Until(r.RetryAt), time.Second)
	}
	return e
}
