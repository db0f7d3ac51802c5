package targetgroups

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDeletable(t *testing.T) {
	const maxAge = time.Minute
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		named bool
		since time.Time
		want  bool
	}{
		{name: "not known to be new", want: true},
		{name: "named and let go, made a moment ago", named: true, since: now, want: true},
		{name: "made a moment ago", since: now, want: false},
		{name: "made just under 32 MaxAge ago", since: now.Add(-KeepNew*maxAge + time.Nanosecond), want: false},
		{name: "made 32 MaxAge ago", since: now.Add(-KeepNew * maxAge), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Deletable(tc.named, tc.since, now, maxAge))
		})
	}
}
