package cloudapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
// around hc's: the HTTP client to give an SDK. Its requests also follow no redirect, and
// each answer is read whole and checked before the SDK sees it, so that the checks hold
// for an SDK that reads nothing of a write's answer or decodes only its first JSON value
// (see the package doc, "Answers that look like success"):
//
//   - a 3xx answer is an error that ErrorCodes.Classify reads as ErrInvalidRequest,
//     naming the answer's Location;
//   - an answer longer than MaxAnswerBytes (by its Content-Length, before any read, or
//     as read), one whose read fails, and a JSON one (Content-Type application/json or
//     */*+json, or a body starting with '{' or '[') that is not exactly one JSON value
//     with only whitespace after it, is an error matching ErrTransient: for a write, the
//     outcome is unknown.
//
// The bound applies to the body the SDK reads: a gzip body that Go's transport decodes
// by itself (it asks for gzip when the SDK asks for no encoding) is bounded and checked
// decoded. An SDK that asks for gzip itself is handed the encoded body, which is bounded
// both as sent and decoded, and checked decoded; an answer in any other encoding is an
// error, as it cannot be checked. An answer without a body (HEAD, 204) passes as it is.
// The SDK is handed the body as a bytes.Reader, which it may read again (Seek); answers
// are never streamed, so GatedClient is not for watches or downloads.
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
// redirect's body as the answer), and a body that is not an answer to read (checkAnswer)
// an error matching ErrTransient.
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
	if resp.Body == nil || resp.Body == http.NoBody || req.Method == http.MethodHead {
		return resp, nil // no body follows, whatever the Content-Length says
	}
	body, err := checkAnswer(resp)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("answered %q %w, which is not an answer to read: %w", resp.Status, err, ErrTransient)
	}
	resp.Body, resp.ContentLength = answerBody{bytes.NewReader(body)}, int64(len(body))
	return resp, nil
}

// checkAnswer reads resp's body whole and returns it, or an error (phrased to follow
// "answered 200 OK") when it is longer than MaxAnswerBytes, its read fails, or it is not
// the one JSON value its Content-Type or first byte says it is.
func checkAnswer(resp *http.Response) ([]byte, error) {
	if resp.ContentLength > MaxAnswerBytes {
		return nil, fmt.Errorf("with a Content-Length of %d, over the bound of %d bytes", resp.ContentLength, MaxAnswerBytes)
	}
	body, err := readBounded(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, err
	}
	decoded := body
	switch enc := resp.Header.Get("Content-Encoding"); {
	case enc == "" || strings.EqualFold(enc, "identity"):
	case strings.EqualFold(enc, "gzip"): // asked for by the SDK: Go's transport decodes only what it asked for
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("with a body that is not gzip: %w", err)
		}
		if decoded, err = readBounded(zr, -1); err != nil {
			return nil, fmt.Errorf("%w, once gunzipped", err)
		}
	default:
		return nil, fmt.Errorf("in Content-Encoding %q, which cannot be checked: let Go's transport choose the encoding (send no Accept-Encoding)", enc)
	}
	if isJSON(resp.Header.Get("Content-Type"), decoded) && !json.Valid(decoded) {
		return nil, errors.New("with a body that is not one JSON value (data after the first, or not JSON)")
	}
	return body, nil
}

// readBounded reads r whole, size bytes long when size is not -1, and fails when it is
// longer than MaxAnswerBytes (having read one byte more) or its read fails.
func readBounded(r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size >= 0 {
		buf.Grow(int(size) + bytes.MinRead) // one allocation: ReadFrom keeps MinRead bytes free
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, MaxAnswerBytes+1)); err != nil {
		return nil, fmt.Errorf("with a body whose read failed: %w", err)
	}
	if buf.Len() > MaxAnswerBytes {
		return nil, fmt.Errorf("with a body longer than the bound of %d bytes", MaxAnswerBytes)
	}
	return buf.Bytes(), nil
}

// isJSON reports whether an answer of Content-Type contentType whose body is body is
// JSON: by its media type (application/json, */*+json) or, whatever that says, by a body
// whose first byte other than whitespace is '{' or '[', which an SDK would decode. An
// empty body is none.
func isJSON(contentType string, body []byte) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) == 0 {
		return false
	}
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") || body[0] == '{' || body[0] == '['
}

// answerBody is the body a GatedClient hands the SDK: the answer read whole, which the
// SDK may read again (Seek).
type answerBody struct{ *bytes.Reader }

// Close does nothing: the answer's own body is closed once read.
func (answerBody) Close() error { return nil }

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
