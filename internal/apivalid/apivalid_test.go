package apivalid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIP(t *testing.T) {
	for _, tc := range []struct {
		in, wantErr string
	}{
		{"203.0.113.7", ""},
		{"2001:db8::1", ""},
		{"2001:DB8:0:0:0:0:0:1", ""}, // not canonical: the API server's legacy IP fields accept it
		{"", "must be a valid IP address"},
		{"fe80::1%eth0", "must be a valid IP address"},
		{"lb.example.com", "must be a valid IP address"},
		{"203.0.113.7 ", "must be a valid IP address"},
		{"203.0.113.7\x00", "must be a valid IP address"},
		{"010.0.0.1", "must not have leading 0s"},
		{"::ffff:10.0.0.1", "must not be an IPv4-mapped IPv6 address"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			err := IP(tc.in)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
