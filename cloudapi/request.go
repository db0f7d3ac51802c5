package cloudapi

import (
	"context"
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
// around hc's: the HTTP client to give an SDK.
func GatedClient(hc *http.Client) *http.Client {
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	out.Transport = Transport(out.Transport)
	return out
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
