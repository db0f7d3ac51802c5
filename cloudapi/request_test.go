package cloudapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// TestGatedClientFollowsNoRedirect: a 3xx answer, to a write or a read, to the same host
// or another, is an error that ErrorCodes.Classify reads as ErrInvalidRequest naming the
// Location (Go's client would follow a 301, 302 or 303 to a DELETE with a GET, whose 200
// an SDK reads as the delete's answer); the redirect's target is never asked.
func TestGatedClientFollowsNoRedirect(t *testing.T) {
	followed := 0
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		followed++
		_, _ = io.WriteString(w, "{}")
	}))
	defer elsewhere.Close()
	var status int
	var location string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := cloudapi.GatedClient(srv.Client())
	for _, location = range []string{srv.URL + "/v2/load_balancers/1", elsewhere.URL + "/v1/load_balancers/1"} {
		for _, status = range []int{301, 302, 303, 307, 308} {
			for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodGet} {
				_, err := writeStatus(c, method, srv.URL+"/v1/load_balancers/1")
				require.Error(t, err, "%s answered %d", method, status)
				classified := cloudapi.ErrorCodes[string]{}.Classify(cloudapi.OpDeleteLoadBalancer, "1", cloudapi.FailedRequest[string]{}, err)
				require.ErrorIs(t, classified, cloudapi.ErrInvalidRequest, "%s answered %d", method, status)
				assert.Contains(t, classified.Error(), location)
			}
		}
	}
	assert.Zero(t, followed, "no redirect is followed")
}

// writeStatus is an SDK's write as many SDKs make it: it looks at the answer's status
// and closes its body unread.
func writeStatus(c *http.Client, method, url string) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(`{"name":"web"}`))
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// decodeFirst is an SDK's read that decodes the first JSON value of the answer and reads
// no further.
func decodeFirst(c *http.Client, url string) (map[string]any, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var v map[string]any
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v, err
}

// spaces is an endless reader of JSON whitespace.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// answer writes `{}` and then spaces up to size bytes: one JSON value, size bytes long.
func answer(w io.Writer, size int64) {
	_, _ = io.WriteString(w, "{}")
	_, _ = io.CopyN(w, spaces{}, size-2)
}

// TestGatedClientChecksAnswersTheSDKNeverReads: the bound and the JSON check hold for
// an SDK that reads nothing of a write's answer, or decodes only its first JSON value: the
// request fails with an error matching ErrTransient (the write's outcome is unknown),
// never a success.
func TestGatedClientChecksAnswersTheSDKNeverReads(t *testing.T) {
	bound := int64(cloudapi.MaxAnswerBytes)
	writes := []struct {
		name    string
		answer  func(http.ResponseWriter)
		refused bool
	}{
		{"over the bound, with a Content-Length", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.FormatInt(bound+1, 10))
			answer(w, bound+1)
		}, true},
		{"over the bound, chunked", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, "{}")
			w.(http.Flusher).Flush()
			_, _ = io.CopyN(w, spaces{}, bound-1)
		}, true},
		{"over the bound once gunzipped", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			answer(zw, bound+1)
			_ = zw.Close()
		}, true},
		{"trailing data", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"action":{"id":1}} <html>`)
		}, true},
		{"at the bound", func(w http.ResponseWriter) { answer(w, bound) }, false},
		{"no body", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }, false},
	}
	for _, tc := range writes {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				tc.answer(w)
			}))
			defer srv.Close()
			c := cloudapi.GatedClient(srv.Client())
			for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPost} {
				status, err := writeStatus(c, method, srv.URL+"/v1/load_balancers/1")
				if !tc.refused {
					require.NoError(t, err, method)
					continue
				}
				require.ErrorIs(t, err, cloudapi.ErrTransient, "%s answered %d: never a success", method, status)
				classified := cloudapi.ErrorCodes[string]{}.Classify(cloudapi.OpUpdateLoadBalancer, "1", cloudapi.FailedRequest[string]{}, err)
				assert.Equal(t, cloudapi.ErrTransient, cloudapi.ClassOf(classified), method)
			}
		})
	}

	reads := []struct {
		name, contentType, body string
		refused                 bool
	}{
		{"garbage after the value", "application/json", `{"a":1} garbage`, true},
		{"a second value", "application/json; charset=utf-8", `{"a":1}{"b":2}`, true},
		{"a second value, no content type", "", `{"a":1}{"b":2}`, true},
		{"an array and more", "text/plain", `[1] 2`, true},
		{"JSON's content type, not JSON", "application/problem+json", `not json`, true},
		{"one value and whitespace", "application/json", "{\"a\":1}\r\n\t ", false},
		{"empty", "application/json", "", false},
		{"not JSON", "text/plain", "ok", false},
	}
	for _, tc := range reads {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			v, err := decodeFirst(cloudapi.GatedClient(srv.Client()), srv.URL+"/v1/load_balancers/1")
			if tc.refused {
				require.ErrorIs(t, err, cloudapi.ErrTransient, "decoded %v", v)
				return
			}
			require.NotErrorIs(t, err, cloudapi.ErrTransient, "the SDK is handed the answer")
			if strings.HasPrefix(tc.body, "{") {
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"a": 1.0}, v)
			}
		})
	}
}

// errorAfter is a body that reads n bytes of data, then fails with err.
type errorAfter struct {
	data string
	err  error
}

func (e *errorAfter) Read(p []byte) (int, error) {
	if e.data == "" {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func (*errorAfter) Close() error { return nil }

// TestGatedClientAnswers: a body whose read fails is an error wrapping the read's; an
// answer that has no body (HEAD, whatever its Content-Length says, 204) passes; an SDK
// reads the whole body it is handed, as often as it likes; an answer in an encoding the
// client cannot check is refused.
func TestGatedClientAnswers(t *testing.T) {
	lost := errors.New("connection reset by peer")
	cases := []struct {
		name    string
		method  string
		resp    func() *http.Response
		want    string
		wantErr error
	}{
		{"a read that fails", http.MethodDelete, func() *http.Response {
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: -1, Header: http.Header{},
				Body: &errorAfter{data: `{"action":`, err: lost}}
		}, "", lost},
		{"HEAD", http.MethodHead, func() *http.Response {
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: 2 * cloudapi.MaxAnswerBytes, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
		}, "", nil},
		{"204", http.MethodDelete, func() *http.Response {
			return &http.Response{StatusCode: 204, Status: "204 No Content", Header: http.Header{}, Body: http.NoBody}
		}, "", nil},
		{"nil body", http.MethodDelete, func() *http.Response {
			return &http.Response{StatusCode: 204, Status: "204 No Content", Header: http.Header{}}
		}, "", nil},
		{"gzip the SDK asked for", http.MethodGet, func() *http.Response {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = io.WriteString(zw, `{"a":1}`)
			_ = zw.Close()
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: -1,
				Header: http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"application/json"}}, Body: io.NopCloser(&z)}
		}, "gzip", nil},
		{"gzip the SDK asked for, trailing data", http.MethodGet, func() *http.Response {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = io.WriteString(zw, `{"a":1} {}`)
			_ = zw.Close()
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: -1,
				Header: http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"application/json"}}, Body: io.NopCloser(&z)}
		}, "", cloudapi.ErrTransient},
		{"gzip the SDK asked for, over the bound once gunzipped", http.MethodGet, func() *http.Response {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			answer(zw, cloudapi.MaxAnswerBytes+1)
			_ = zw.Close()
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: int64(z.Len()),
				Header: http.Header{"Content-Encoding": {"gzip"}}, Body: io.NopCloser(&z)}
		}, "", cloudapi.ErrTransient},
		{"an encoding it cannot check", http.MethodGet, func() *http.Response {
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: 3,
				Header: http.Header{"Content-Encoding": {"br"}}, Body: io.NopCloser(strings.NewReader("xyz"))}
		}, "", cloudapi.ErrTransient},
		{"a page", http.MethodGet, func() *http.Response {
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: -1, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"servers":[]}`))}
		}, `{"servers":[]}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cloudapi.GatedClient(&http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) { return tc.resp(), nil })})
			req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://api.example/v1/load_balancers/1", nil)
			require.NoError(t, err)
			resp, err := c.Do(req)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorIs(t, err, cloudapi.ErrTransient, "an answer not read whole is of unknown outcome")
				return
			}
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			if resp.Body == nil {
				return
			}
			for range 2 {
				got, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				if tc.want != "gzip" {
					assert.Equal(t, tc.want, string(got))
				}
				if seeker, ok := resp.Body.(io.Seeker); ok {
					_, err = seeker.Seek(0, io.SeekStart)
					require.NoError(t, err)
				}
			}
		})
	}
}

// countingReader counts the bytes read of an endless body.
type countingReader struct{ n int }

func (c *countingReader) Read(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// TestGatedClientRefusesALongContentLengthUnread: an answer whose Content-Length is over
// MaxAnswerBytes is refused before a byte of it is read, and its body is closed.
func TestGatedClientRefusesALongContentLengthUnread(t *testing.T) {
	read := &countingReader{}
	body := &closeTracker{Reader: read}
	c := cloudapi.GatedClient(&http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: cloudapi.MaxAnswerBytes + 1, Header: http.Header{}, Body: body}, nil
	})})
	_, err := writeStatus(c, http.MethodDelete, "http://api.example/v1/load_balancers/1")
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.Contains(t, err.Error(), "Content-Length")
	assert.Zero(t, read.n, "nothing read")
	assert.True(t, body.closed)
}

// BenchmarkGatedClient measures a GET of a page of JSON through a GatedClient (read whole,
// bounded and checked before the SDK reads it) beside a plain client, the SDK reading the
// whole body as hcloud-go does.
func BenchmarkGatedClient(b *testing.B) {
	for _, servers := range []int{1, 50, 1000} {
		page := `{"servers":[` + strings.Repeat(`{"id":4711,"name":"node-4711","status":"running","labels":{"cluster":"prod"}},`, servers) + `{}]}`
		base := roundTripper(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Status: "200 OK", ContentLength: int64(len(page)),
				Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(page))}, nil
		})
		for _, c := range []struct {
			name string
			hc   *http.Client
		}{{"plain", &http.Client{Transport: base}}, {"gated", cloudapi.GatedClient(&http.Client{Transport: base})}} {
			b.Run(fmt.Sprintf("%s/%dB", c.name, len(page)), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(page)))
				for b.Loop() {
					resp, err := c.hc.Get("http://api.example/v1/servers")
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadAll(resp.Body); err != nil {
						b.Fatal(err)
					}
					_ = resp.Body.Close()
				}
			})
		}
	}
}
