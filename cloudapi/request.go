package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// A call of an adapter's method may make more than one request to its cloud: an API
// that answers a write with an asynchronous action is polled until the action is done,
// an SDK may read pages by itself. ccmkit's client paces and counts every call it makes;
// to pace and count these requests too, it puts a gate in the context of each call, and
// the adapter passes through it before every request: with Request, or once for all with
// Transport around its HTTP client's transport.

// gateKey is the context key of the gate.
type gateKey struct{}

// WithRequestGate returns ctx carrying gate, which Request calls. ccmkit's client sets it
// for every call; an adapter never needs to.
func WithRequestGate(ctx context.Context, gate func(context.Context) error) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// Request waits until the call whose context is ctx may send its next request to the
// cloud: it passes through the gate ccmkit put in ctx (the first request of a call passes
// at once, since the call was admitted; each later one waits for ccmkit's rate limiter
// and is counted), and returns at once without a gate. An error (ctx ended, or the rate
// limit allows no request before ctx's deadline) means: do not send it.
func Request(ctx context.Context) error {
	if gate, ok := ctx.Value(gateKey{}).(func(context.Context) error); ok {
		return gate(ctx)
	}
	return ctx.Err()
}

// Transport returns an http.RoundTripper that calls Request with each request's context
// before it sends the request through base (nil: http.DefaultTransport). An adapter over
// an HTTP SDK sets it once in the SDK's client, and every request of its calls, action
// polls included, is paced and counted.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return gatedTransport{base}
}

// GatedClient returns a copy of hc (nil: a new client) whose transport is Transport
// around hc's: the HTTP client to give an SDK. Its requests also follow no redirect and
// read no answer longer than MaxAnswerBytes (see the package doc, "Answers that look like
// success"): a 3xx answer is an error that ErrorCodes.Classify reads as
// ErrInvalidRequest, naming the answer's Location, and a longer body fails its read.
func GatedClient(hc *http.Client) *http.Client {
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = Transport(strictTransport{base})
	return out
}

// MaxAnswerBytes bounds the body of every answer a GatedClient reads: an API's page holds
// a few MB at most, and a longer answer is not one to decode in part.
const MaxAnswerBytes = 16 << 20

// errRedirected is matched by the error of a request of a GatedClient that the endpoint
// answered with a redirect.
var errRedirected = errors.New("a redirect, which is not followed (a write would not reach the API): set the endpoint to the API's own URL")

// strictTransport refuses what an SDK would read wrongly: a 3xx answer is an error
// matching errRedirected (so that an http.Client follows none, and no SDK reads a
// redirect's body as the answer), and a body longer than MaxAnswerBytes fails its read.
type strictTransport struct{ base http.RoundTripper }

func (s strictTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, fmt.Errorf("answered %d to %q: %w", resp.StatusCode, resp.Header.Get("Location"), errRedirected)
	}
	if resp.Body != nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, MaxAnswerBytes)
	}
	return resp, nil
}

type gatedTransport struct{ base http.RoundTripper }

func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := Request(req.Context()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, also on error
		}
		return nil, err
	}
	return t.base.RoundTrip(req)
}
