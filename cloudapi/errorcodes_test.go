package cloudapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

type code string

func TestErrorCodesClassify(t *testing.T) {
	codes := cloudapi.ErrorCodes[code]{Throttled: []code{"rate_limit"}, Conflict: []code{"taken"}, Transient: []code{"locked", "not_found"}}
	cause := errors.New("the API's answer")
	for _, tc := range []struct {
		name string
		r    cloudapi.FailedRequest[code]
		want error
		msg  string
	}{
		{"throttled", cloudapi.FailedRequest[code]{Code: "rate_limit", Status: 429}, cloudapi.ErrThrottled, ""},
		{"conflict", cloudapi.FailedRequest[code]{Code: "taken", Status: 409}, cloudapi.ErrConflict, ""},
		{"transient", cloudapi.FailedRequest[code]{Code: "locked", Status: 423}, cloudapi.ErrTransient, ""},
		{"a not-found code is never gone", cloudapi.FailedRequest[code]{Code: "not_found", Status: 404}, cloudapi.ErrTransient, ""},
		{"any other code", cloudapi.FailedRequest[code]{Code: "invalid_input", Status: 400}, cloudapi.ErrInvalidRequest, ""},
		{"a bare 404", cloudapi.FailedRequest[code]{Status: 404}, cloudapi.ErrInvalidRequest, "not the API's error: check the endpoint's base URL"},
		{"a bare redirect", cloudapi.FailedRequest[code]{Status: 302}, cloudapi.ErrInvalidRequest, "check the endpoint's base URL"},
		{"a bare 502", cloudapi.FailedRequest[code]{Status: 502}, cloudapi.ErrTransient, ""},
		{"no answer", cloudapi.FailedRequest[code]{}, cloudapi.ErrTransient, ""},
		{"a 200 that did not decode", cloudapi.FailedRequest[code]{Status: 200}, cloudapi.ErrTransient, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := codes.Classify(cloudapi.OpGetInstance, "1", tc.r, cause)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, cause, "the cause is kept")
			assert.Equal(t, "1", err.ID)
			assert.Equal(t, cloudapi.OpGetInstance, err.Op)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	err := codes.Classify(cloudapi.OpGetInstance, "", cloudapi.FailedRequest[code]{Code: "rate_limit", RetryAt: time.Now().Add(time.Minute)}, cause)
	wait, ok := cloudapi.RetryAfter(err)
	require.True(t, ok)
	assert.InDelta(t, time.Minute, wait, float64(5*time.Second))
	err = codes.Classify(cloudapi.OpGetInstance, "", cloudapi.FailedRequest[code]{Code: "rate_limit", RetryAt: time.Now().Add(-time.Minute)}, cause)
	wait, _ = cloudapi.RetryAfter(err)
	assert.Equal(t, time.Second, wait, "a reset passed: at least a second")
}

// TestErrorCodesRules: rules tell apart by status and message what one code (or none)
// does not, before the codes; a rule of a class no rule may give (not found) is read as
// transient, and a rule that sets nothing matches nothing.
func TestErrorCodesRules(t *testing.T) {
	codes := cloudapi.ErrorCodes[code]{Transient: []code{"busy"}, Rules: []cloudapi.ErrorRule[code]{
		{Status: 422, Message: regexp.MustCompile(`(?i)name is not unique`), Class: cloudapi.ErrConflict},
		{Status: 403, Message: regexp.MustCompile(`\bbusy\b`), Class: cloudapi.ErrTransient},
		{Code: "limited", Class: cloudapi.ErrThrottled},
		{Code: "gone", Class: cloudapi.ErrNotFound},
		{Class: cloudapi.ErrConflict},
	}}
	cause := errors.New("the API's answer")
	for _, tc := range []struct {
		name string
		r    cloudapi.FailedRequest[code]
		want error
	}{
		{"422 not unique", cloudapi.FailedRequest[code]{Code: "unprocessable_entity", Status: 422, Message: "Name is not unique"}, cloudapi.ErrConflict},
		{"422 anything else", cloudapi.FailedRequest[code]{Code: "unprocessable_entity", Status: 422, Message: "bad port"}, cloudapi.ErrInvalidRequest},
		{"403 busy without a code", cloudapi.FailedRequest[code]{Status: 403, Message: "the load balancer is busy"}, cloudapi.ErrTransient},
		{"403 forbidden", cloudapi.FailedRequest[code]{Code: "forbidden", Status: 403, Message: "not allowed"}, cloudapi.ErrInvalidRequest},
		{"a rule by code", cloudapi.FailedRequest[code]{Code: "limited", Status: 400}, cloudapi.ErrThrottled},
		{"a rule may not say gone", cloudapi.FailedRequest[code]{Code: "gone", Status: 404}, cloudapi.ErrTransient},
	} {
		err := codes.Classify(cloudapi.OpCreateLoadBalancer, "", tc.r, cause)
		require.ErrorIs(t, err, tc.want, tc.name)
		require.ErrorIs(t, err, cause, tc.name)
		require.NotErrorIs(t, err, cloudapi.ErrNotFound, tc.name)
	}
	err := codes.Classify(cloudapi.OpCreateLoadBalancer, "", cloudapi.FailedRequest[code]{Code: "gone", Status: 404}, cause)
	assert.ErrorContains(t, err, "error rule 3 classifies as not found, which no rule may")
	err = codes.Classify(cloudapi.OpCreateLoadBalancer, "", cloudapi.FailedRequest[code]{Code: "limited", RetryAt: time.Now().Add(time.Minute)}, cause)
	wait, ok := cloudapi.RetryAfter(err)
	require.True(t, ok, "a rule's throttle waits as the API said")
	assert.InDelta(t, time.Minute, wait, float64(5*time.Second))
}

// TestErrorTransport: an SDK that drops the API's error code and message still has its
// errors classified: ErrorTransport records the failed answer in the call's context,
// below GatedClient, and the SDK reads the body unchanged.
func TestErrorTransport(t *testing.T) {
	const body = `{"id": "unprocessable_entity", "message": "Name is not unique"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, `{}`)
			return
		}
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	parse := func(b []byte) (code, string) {
		var e struct{ ID, Message string }
		if json.Unmarshal(b, &e) != nil {
			return "", ""
		}
		return code(e.ID), e.Message
	}
	hc := cloudapi.GatedClient(&http.Client{Transport: cloudapi.ErrorTransport[code](nil, parse)})
	// sdk is an SDK's call that keeps nothing of a failed answer but its status.
	sdk := func(ctx context.Context, path string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			return string(b), fmt.Errorf("request failed with status %d", resp.StatusCode)
		}
		return string(b), nil
	}
	codes := cloudapi.ErrorCodes[code]{Rules: []cloudapi.ErrorRule[code]{
		{Status: 422, Message: regexp.MustCompile(`not unique`), Class: cloudapi.ErrConflict},
	}}

	ctx, failed := cloudapi.RecordFailures[code](t.Context())
	got, err := sdk(ctx, "/ok")
	require.NoError(t, err)
	assert.Equal(t, `{}`, got)
	assert.Equal(t, cloudapi.FailedRequest[code]{}, failed.Last(), "a success records nothing")

	got, err = sdk(ctx, "/fail")
	require.Error(t, err)
	assert.Equal(t, body, got, "the SDK reads the body unchanged")
	last := failed.Last()
	assert.Equal(t, code("unprocessable_entity"), last.Code)
	assert.Equal(t, "Name is not unique", last.Message)
	assert.Equal(t, 422, last.Status)
	assert.WithinDuration(t, time.Now().Add(30*time.Second), last.RetryAt, 5*time.Second)
	classified := codes.Classify(cloudapi.OpCreateLoadBalancer, "", last, err)
	require.ErrorIs(t, classified, cloudapi.ErrConflict, "classified by the answer the SDK dropped")

	_, err = sdk(t.Context(), "/fail")
	require.Error(t, err, "a request without RecordFailures: nothing recorded, nothing fails")
}
