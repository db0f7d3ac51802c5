package cloudapi_test

import (
	"errors"
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
