package cloudapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ccmkit/ccmkit/cloudapi"
)

func TestParseRetryAfter(t *testing.T) {
	const date = "Sun, 06 Nov 2033 08:49:37 GMT"
	for _, tc := range []struct {
		name, value, date string
		want              time.Duration
	}{
		{"absent", "", "", 0},
		{"seconds", "7", "", 7 * time.Second},
		{"over one day", "86401", "", cloudapi.MaxParsedRetryAfter},
		{"overflows when multiplied by time.Second", "9223372037", "", cloudapi.MaxParsedRetryAfter},
		{"larger than any integer", "99999999999999999999", "", cloudapi.MaxParsedRetryAfter},
		{"negative", "-5", "", 0},
		{"fraction", "1.5", "", 0},
		{"date two minutes after the answer's", "Sun, 06 Nov 2033 08:51:37 GMT", date, 2 * time.Minute},
		{"date before the answer's", "Sun, 06 Nov 1994 08:49:37 GMT", date, 0},
		{"date far after the answer's", "Fri, 31 Dec 9999 23:59:59 GMT", date, cloudapi.MaxParsedRetryAfter},
		{"date without the answer's Date", "Sun, 06 Nov 2033 08:51:37 GMT", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.value != "" {
				h.Set("Retry-After", tc.value)
			}
			if tc.date != "" {
				h.Set("Date", tc.date)
			}
			assert.Equal(t, tc.want, cloudapi.ParseRetryAfter(h))
		})
	}
}
