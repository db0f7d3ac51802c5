package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/examples/restcloud/server"
	"github.com/ccmkit/ccmkit/fake"
)

const token = "srv-token-42"

// TestRequests checks the answers that the adapter's tests do not reach: malformed
// requests and authentication, and the wire format of not-found that the adapter trusts:
// code "not_found" for every resource that does not exist, a plain text 404 for an
// unknown path.
func TestRequests(t *testing.T) {
	cloud, err := fake.New(fake.Config{})
	require.NoError(t, err)
	h := server.New(cloud, server.Options{Token: token})
	for _, tc := range []struct {
		name, method, target, auth, body string
		wantStatus                       int
		wantBody                         string
	}{
		{"no token", "GET", "/v1/instances", "", "", http.StatusUnauthorized, `"code":"unauthorized"`},
		{"wrong token", "GET", "/v1/instances", "Bearer " + token + "x", "", http.StatusUnauthorized, `"code":"unauthorized"`},
		{"empty list", "GET", "/v1/instances", "Bearer " + token, "", http.StatusOK, `{"items":[],"nextPageToken":""}`},
		{"tag without value", "GET", "/v1/instances?tag=pool", "Bearer " + token, "", http.StatusBadRequest, `want key=value`},
		{"bad page size", "GET", "/v1/routes?pageSize=x", "Bearer " + token, "", http.StatusBadRequest, `pageSize`},
		{"unknown instance", "GET", "/v1/instances/i-9", "Bearer " + token, "", http.StatusNotFound, `"code":"not_found"`},
		{"unknown field", "POST", "/v1/routes", "Bearer " + token, `{"destination":"10.0.0.0/24"}`, http.StatusBadRequest, `unknown field`},
		{"invalid route", "POST", "/v1/routes", "Bearer " + token, `{"destinationCIDR":"nope","targetInstanceID":"i-1"}`, http.StatusBadRequest, `"code":"invalid"`},
		{"delete unknown", "DELETE", "/v1/loadbalancers/lb-9", "Bearer " + token, "", http.StatusNotFound, `"code":"not_found"`},
		{"unknown load balancer", "GET", "/v1/loadbalancers/lb-9", "Bearer " + token, "", http.StatusNotFound, `"code":"not_found"`},
		{"update unknown", "PUT", "/v1/loadbalancers/lb-9", "Bearer " + token,
			`{"name":"web","listeners":[{"name":"http","protocol":"TCP","port":80,"targetPort":30080}]}`, http.StatusNotFound, `"code":"not_found"`},
		{"unknown size", "POST", "/v1/loadbalancers", "Bearer " + token,
			`{"name":"web","listeners":[{"name":"http","protocol":"TCP","port":80,"targetPort":30080}],"size":"huge"}`, http.StatusBadRequest,
			`size: \"huge\" is not one of small, medium, large`},
		{"a size", "POST", "/v1/loadbalancers", "Bearer " + token,
			`{"name":"web","listeners":[{"name":"http","protocol":"TCP","port":80,"targetPort":30080}],"size":"large"}`, http.StatusCreated, `"size":"large"`},
		{"delete unknown route", "DELETE", "/v1/routes/r-9", "Bearer " + token, "", http.StatusNotFound, `"code":"not_found"`},
		{"unknown path", "GET", "/v2/instances/i-9", "Bearer " + token, "", http.StatusNotFound, "404 page not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), tc.method, tc.target, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, err := io.ReadAll(rec.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.wantStatus, rec.Code, "body %s", body)
			assert.Contains(t, string(body), tc.wantBody)
			assert.NotContains(t, string(body), token, "an answer never repeats the token")
		})
	}
}
