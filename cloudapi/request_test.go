package cloudapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestTransport: every request passes through the gate of its context first; one the
// gate refuses is not sent, and its body is closed.
func TestTransport(t *testing.T) {
	sent := 0
	base := roundTripper(func(*http.Request) (*http.Response, error) { sent++; return &http.Response{StatusCode: 200}, nil })
	gated := 0
	refuse := errors.New("no slot before the deadline")
	gate := func(context.Context) error {
		if gated++; gated > 2 {
			return refuse
		}
		return nil
	}
	ctx := cloudapi.WithRequestGate(t.Context(), gate)
	tr := cloudapi.Transport(base)
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/v1/actions/1", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		require.NoError(t, err)
	}
	body := &closeTracker{Reader: strings.NewReader("{}")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.example/v1/load_balancers", body)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, refuse)
	assert.True(t, body.closed)
	assert.Equal(t, 2, sent, "the refused request is not sent")

	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.example/v1/servers", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.NoError(t, err, "no gate: sent")
	assert.Equal(t, 3, sent)
}

// TestGatedClient: the copy sends through the gate, then through the client's own
// transport; the client given is not changed.
func TestGatedClient(t *testing.T) {
	sent := 0
	base := roundTripper(func(*http.Request) (*http.Response, error) { sent++; return &http.Response{StatusCode: 200}, nil })
	hc := &http.Client{Transport: base, Timeout: time.Minute}
	gated := cloudapi.GatedClient(hc)
	assert.Equal(t, time.Minute, gated.Timeout)
	refuse := errors.New("no slot")
	ctx := cloudapi.WithRequestGate(t.Context(), func(context.Context) error { return refuse })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/v1/actions/1", nil)
	require.NoError(t, err)
	_, err = gated.Transport.RoundTrip(req)
	require.ErrorIs(t, err, refuse)
	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.example/v1/actions/1", nil)
	require.NoError(t, err)
	_, err = gated.Transport.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 1, sent, "sent through hc's transport once the gate lets it")
	assert.NotNil(t, hc.Transport)
	_, isBase := hc.Transport.(roundTripper)
	assert.True(t, isBase, "hc is not changed")
	assert.NotNil(t, cloudapi.GatedClient(nil).Transport)
}

// TestGatedClientFollowsNoRedirectAndBoundsAnswers: a 3xx answer to a write is an error
// that ErrorCodes.Classify reads as ErrInvalidRequest naming the Location (Go's client
// would follow a 301, 302 or 303 to a DELETE with a GET, whose 200 an SDK reads as the
// delete's answer), and a body longer than MaxAnswerBytes fails its read.
func TestGatedClientFollowsNoRedirectAndBoundsAnswers(t *testing.T) {
	var body string
	status := http.StatusMovedPermanently
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(body)) // where a followed redirect would land
			return
		}
		w.Header().Set("Location", "https://api.example/v1/load_balancers/1")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := cloudapi.GatedClient(srv.Client())
	for _, status = range []int{301, 302, 303, 307, 308} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL+"/v1/load_balancers/1", nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		require.Error(t, err, "status %d", status)
		classified := cloudapi.ErrorCodes[string]{}.Classify(cloudapi.OpDeleteLoadBalancer, "1", cloudapi.FailedRequest[string]{}, err)
		require.ErrorIs(t, classified, cloudapi.ErrInvalidRequest, "status %d", status)
		assert.Contains(t, classified.Error(), "https://api.example/v1/load_balancers/1")
	}

	body = strings.Repeat("x", cloudapi.MaxAnswerBytes+1)
	resp, err := c.Get(srv.URL + "/v1/load_balancers")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	_, err = io.ReadAll(resp.Body)
	var tooLong *http.MaxBytesError
	require.ErrorAs(t, err, &tooLong)
}
