package cloudapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// MaxErrorBytes bounds what ErrorTransport reads of an error answer's body to parse it:
// an API's error is a small JSON object.
const MaxErrorBytes = 64 << 10

// Failures records the failed answers of the requests of one call, for an SDK that
// returns an error without the API's error code (or message): ErrorTransport, below the
// SDK, records each; the adapter classifies the SDK's error with the last one
// (ErrorCodes.Classify). Make one per call with RecordFailures; it is safe for
// concurrent use.
type Failures[C ~string] struct {
	mu   sync.Mutex
	last FailedRequest[C]
}

// failuresKey is the context key of the Failures of code type C.
type failuresKey[C ~string] struct{}

// RecordFailures returns ctx carrying a new, empty Failures, and the Failures: the
// requests made with the returned context record their failed answers in it (through
// ErrorTransport).
//
//	ctx, failed := cloudapi.RecordFailures[code](ctx)
//	lb, err := sdk.GetLoadBalancer(ctx, id)
//	if err != nil {
//		return nil, codes.Classify(op, id, failed.Last(), err)
//	}
func RecordFailures[C ~string](ctx context.Context) (context.Context, *Failures[C]) {
	f := &Failures[C]{}
	return context.WithValue(ctx, failuresKey[C]{}, f), f
}

// Last returns the last failed answer recorded: the zero FailedRequest (no answer, which
// Classify reads as ErrTransient) when none was.
func (f *Failures[C]) Last() FailedRequest[C] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// ErrorTransport returns an http.RoundTripper that sends each request through base (nil:
// http.DefaultTransport) and, for an answer of status 400 or more, reads up to
// MaxErrorBytes of its body, has parse read the API's error code and message from it
// (empty when the body is not the API's typed error), and records them, with the status
// and the Retry-After, in the Failures of the request's context (RecordFailures; none:
// nothing is recorded). The SDK reads the body unchanged. Set it as the transport of the
// http.Client that GatedClient copies, so the gate and the answers' checks stay above it.
func ErrorTransport[C ~string](base http.RoundTripper, parse func(body []byte) (code C, message string)) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return errorTransport[C]{base: base, parse: parse}
}

type errorTransport[C ~string] struct {
	base  http.RoundTripper
	parse func([]byte) (C, string)
}

func (t errorTransport[C]) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	f, ok := req.Context().Value(failuresKey[C]{}).(*Failures[C])
	if err != nil || !ok || resp.StatusCode < 400 {
		return resp, err
	}
	r := FailedRequest[C]{Status: resp.StatusCode}
	if d := ParseRetryAfter(resp.Header); d > 0 {
		r.RetryAt = time.Now().Add(d)
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		head, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBytes))
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), &errReader{readErr, resp.Body}), resp.Body}
		if readErr == nil {
			r.Code, r.Message = t.parse(head)
		}
	}
	f.mu.Lock()
	f.last = r
	f.mu.Unlock()
	return resp, nil
}

// errReader answers err, when it is set, and else reads on from r.
type errReader struct {
	err error
	r   io.Reader
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.r.Read(p)
}
