package cloudapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// MaxParsedRetryAfter is the longest wait ParseRetryAfter returns.
const MaxParsedRetryAfter = 24 * time.Hour

// ParseRetryAfter reads the Retry-After header of an HTTP answer as a wait, for an adapter
// of a REST API to put in Error.RetryAfter: whole seconds (RFC 9110), or an HTTP date
// counted from the answer's Date header (the server's own clock, so a skewed local clock
// does not matter). The wait is 0 to MaxParsedRetryAfter: longer ones are cut before
// they are multiplied into a time.Duration, so none overflows (ccmkit caps every wait
// lower still); an absent, negative, signed, fractional or garbled value, a past date,
// and a date without a readable Date header are no wait (0).
func ParseRetryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) { // too large: the largest uint64
		return time.Duration(min(secs, uint64(MaxParsedRetryAfter/time.Second))) * time.Second
	}
	at, err := http.ParseTime(v)
	if now, errNow := http.ParseTime(h.Get("Date")); err == nil && errNow == nil {
		return min(max(at.Sub(now), 0), MaxParsedRetryAfter)
	}
	return 0
}
