package paging

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ccmkit/ccmkit/cloudapi"
)

// op is the operation the lists of these tests page through.
const op = cloudapi.OpListRoutes

// script is a cloud that answers page i (by the token it handed out) with items[i] and
// next[i]; the first page is the empty token.
type script struct {
	items [][]int
	next  []string
	calls int
}

func (s *script) page(_ context.Context, token string) ([]int, string, error) {
	s.calls++
	i := 0
	if token != "" {
		n, err := strconv.Atoi(token[1:]) // tokens are "p<index>"
		if err != nil {
			return nil, "", err
		}
		i = n
	}
	if i >= len(s.next) {
		return nil, "", errors.New("no such page")
	}
	return s.items[i], s.next[i], nil
}

// intID is the ID of an int item: its decimal digits.
func intID(v *int) string { return strconv.Itoa(*v) }

func collect(t *testing.T, fetch Page[int]) ([]int, int, error) {
	t.Helper()
	var got []int
	pages, err := All(context.Background(), op, fetch, intID, func(v *int) bool { got = append(got, *v); return true })
	return got, pages, err
}

func TestAllPages(t *testing.T) {
	tests := []struct {
		name      string
		items     [][]int
		next      []string
		want      []int
		wantPages int
		wantErr   error
	}{
		{name: "one page", items: [][]int{{1, 2}}, next: []string{""}, want: []int{1, 2}, wantPages: 1},
		{name: "three pages, one empty", items: [][]int{{1}, {}, {3}}, next: []string{"p1", "p2", ""}, want: []int{1, 3}, wantPages: 3},
		{name: "token repeated at once", items: [][]int{{1}, {2}}, next: []string{"p1", "p1"}, wantPages: 2, wantErr: ErrBadPaging},
		{name: "cycle a→b→a", items: [][]int{{1}, {2}, {3}}, next: []string{"p1", "p2", "p1"}, wantPages: 3, wantErr: ErrBadPaging},
		{name: "cycle back through the first page", items: [][]int{{1}, {2}}, next: []string{"p1", "p0"}, wantPages: 3, wantErr: ErrBadPaging},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{items: tt.items, next: tt.next}
			got, pages, err := collect(t, s.page)
			assert.Equal(t, tt.wantPages, pages)
			assert.Equal(t, tt.wantPages, s.calls)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// A cloud that pages by offset answers an item again when one is created between two
// page reads: every item is handed over once, by ID, whatever page repeats it; an item
// without an ID cannot be told apart (a repeat of the item the caller keeps, say), and
// is left out.
func TestAllHandsEachItemOverOnce(t *testing.T) {
	tests := []struct {
		name  string
		items [][]int
		next  []string
		want  []int
	}{
		{name: "the last item of a page first on the next", items: [][]int{{1, 2}, {2, 3}, {3, 4}}, next: []string{"p1", "p2", ""}, want: []int{1, 2, 3, 4}},
		{name: "an item of the first page on the last", items: [][]int{{1, 2}, {3}, {4, 1}}, next: []string{"p1", "p2", ""}, want: []int{1, 2, 3, 4}},
		{name: "twice on one page", items: [][]int{{5, 5, 6}}, next: []string{""}, want: []int{5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := collect(t, (&script{items: tt.items, next: tt.next}).page)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("cloudapi items by their ID, an item without one left out", func(t *testing.T) {
		pages := [][]cloudapi.Route{
			{{ID: "r-1", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.0.0.0/24"}}, {RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.0.9.0/24"}}},
			{{ID: "r-1", RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.0.0.0/24"}}, {RouteSpec: cloudapi.RouteSpec{DestinationCIDR: "10.0.9.0/24"}}, {ID: "r-2"}},
		}
		fetch := func(_ context.Context, token string) ([]cloudapi.Route, string, error) {
			if token == "" {
				return pages[0], "p1", nil
			}
			return pages[1], "", nil
		}
		var got []string
		_, err := All(t.Context(), op, fetch, routeID, func(rt *cloudapi.Route) bool { got = append(got, rt.ID); return true })
		require.NoError(t, err)
		assert.Equal(t, []string{"r-1", "r-2"}, got)
	})
}

// hugeTokens is a cloud whose page tokens are 1 MB each, a new string for every page:
// page i (from 0) answers the token of page next(i), or ends the list when next returns
// a negative number.
func hugeTokens(next func(i int) int) (Page[int], *int) {
	pad := strings.Repeat("x", 1<<20)
	calls := 0
	return func(context.Context, string) ([]int, string, error) {
		i := calls
		calls++
		n := next(i)
		if n < 0 {
			return []int{i}, "", nil
		}
		return []int{i}, strconv.Itoa(n) + pad, nil // a fresh copy each time
	}, &calls
}

// The loop keeps no page token: 1,000 pages of 1 MB tokens hold a bounded amount of
// memory at the end of the list (a fixed-size fingerprint of each token), not the
// gigabyte of the tokens; and a cycle of such tokens is still caught.
func TestAllKeepsNoPageToken(t *testing.T) {
	const pages = 1_000
	t.Run("bounded", func(t *testing.T) {
		var before, atEnd runtime.MemStats
		fetch, calls := hugeTokens(func(i int) int {
			if i == pages-1 {
				return -1
			}
			return i + 1
		})
		measured := func(ctx context.Context, token string) ([]int, string, error) {
			if *calls == pages-1 { // the last page: what does the list hold now?
				runtime.GC()
				runtime.ReadMemStats(&atEnd)
			}
			return fetch(ctx, token)
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, n, err := collect(t, measured)
		require.NoError(t, err)
		assert.Equal(t, pages, n)
		assert.Len(t, got, pages)
		held := int64(atEnd.HeapAlloc) - int64(before.HeapAlloc)
		assert.Less(t, held, int64(32<<20), "the list held %d MB after %d pages of 1 MB tokens", held>>20, pages)
	})
	t.Run("a cycle is caught", func(t *testing.T) {
		fetch, calls := hugeTokens(func(i int) int {
			if i == pages-1 {
				return 500 // a token answered before, as a new string
			}
			return i + 1
		})
		_, n, err := collect(t, fetch)
		require.ErrorIs(t, err, ErrBadPaging)
		assert.Equal(t, pages, n)
		assert.Equal(t, pages, *calls)
	})
}

func TestAllEndsAnEndlessList(t *testing.T) {
	calls := 0
	endless := func(_ context.Context, token string) ([]int, string, error) {
		calls++
		return []int{calls}, "t" + strconv.Itoa(calls), nil // a new token every time
	}
	_, pages, err := collect(t, endless)
	require.ErrorIs(t, err, ErrBadPaging)
	assert.Equal(t, MaxPages, pages)
	assert.Equal(t, MaxPages, calls)
}

func TestAllStopsWhenTold(t *testing.T) {
	s := &script{items: [][]int{{1, 2}, {3}}, next: []string{"p1", ""}}
	var got []int
	pages, err := All(context.Background(), op, s.page, intID, func(v *int) bool { got = append(got, *v); return *v < 2 })
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, got)
	assert.Equal(t, 1, pages)
	assert.Equal(t, 1, s.calls, "no page after the one where each said stop")
}

func TestAllKeepsTheFetchError(t *testing.T) {
	boom := errors.New("boom")
	s := &script{items: [][]int{{1}}, next: []string{"p1"}} // page p1 does not exist
	_, pages, err := collect(t, s.page)
	assert.Equal(t, 1, pages)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrBadPaging)
	assert.Contains(t, err.Error(), "page 2")

	fail := func(context.Context, string) ([]int, string, error) { return nil, "", boom }
	_, _, err = collect(t, fail)
	require.ErrorIs(t, err, boom)
}

func TestAllStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	fetch := func(context.Context, string) ([]int, string, error) {
		calls++
		cancel() // the caller gives up during the first page
		return []int{1}, "p1", nil
	}
	pages, err := All(ctx, op, fetch, intID, func(*int) bool { return true })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, pages)
	assert.Equal(t, 1, calls)
}

// FuzzAll drives All with a cloud that answers an arbitrary sequence of page tokens:
// whatever the sequence, the list ends, with every item or an error, within MaxPages
// calls, and the error says why.
func FuzzAll(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 0})
	f.Add([]byte{1, 2, 1})
	f.Add([]byte{7, 7})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, tokens []byte) {
		// Call i answers the token tokens[i] (0 = the last page), and the last-page token
		// once the script is exhausted, or, when the script's last byte is odd, tokens
		// without end.
		endless := len(tokens) > 0 && tokens[len(tokens)-1]%2 == 1
		calls := 0
		fetch := func(context.Context, string) ([]int, string, error) {
			i := calls
			calls++
			switch {
			case i < len(tokens) && tokens[i] == 0:
				return []int{i}, "", nil
			case i < len(tokens):
				return []int{i}, "t" + strconv.Itoa(int(tokens[i])), nil
			case endless:
				return []int{i}, "n" + strconv.Itoa(i), nil
			}
			return []int{i}, "", nil
		}
		items := 0
		pages, err := All(context.Background(), op, fetch, intID, func(*int) bool { items++; return true })
		require.LessOrEqual(t, calls, MaxPages)
		assert.Equal(t, calls, pages)
		assert.Equal(t, calls, items)
		if err != nil {
			require.ErrorIs(t, err, ErrBadPaging)
			return
		}
		// A list that ended well saw no token twice.
		seen := map[byte]bool{}
		for _, tok := range tokens[:min(calls, len(tokens))] {
			if tok != 0 {
				require.False(t, seen[tok], "token t%d answered twice but the list succeeded", tok)
				seen[tok] = true
			}
		}
	})
}

// A list's not-found (a 404 of the list endpoint, on any page) says nothing about any
// resource: it never matches cloudapi.ErrNotFound, keeps the cloud's text and is
// transient; every other error passes as it is.
func TestListErrorIsNeverNotFound(t *testing.T) {
	notFound := cloudapi.NewError(cloudapi.ErrNotFound, op, "", errors.New("HTTP 404: no such endpoint"))
	throttled := cloudapi.Throttled(op, time.Second, nil)
	for _, tt := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"not found", notFound, true},
		{"wrapped not found", fmt.Errorf("backend: %w", notFound), true},
		{"throttled", throttled, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			fetch := func(_ context.Context, token string) ([]int, string, error) {
				calls++
				if token == "" {
					return []int{1}, "p1", nil
				}
				return nil, "", tt.err
			}
			_, err := All(t.Context(), op, fetch, intID, func(*int) bool { return true })
			require.Error(t, err)
			assert.Equal(t, 2, calls)
			assert.NotErrorIs(t, err, cloudapi.ErrNotFound, "a list has nothing to not find")
			assert.Contains(t, err.Error(), "page 2")
			if tt.transient {
				assert.ErrorIs(t, err, cloudapi.ErrTransient)
				assert.Contains(t, err.Error(), "HTTP 404: no such endpoint", "the cloud's text is kept")
			} else {
				assert.ErrorIs(t, err, tt.err, "other errors pass as they are")
			}
		})
	}
}

// A missing page is an unknown answer, never a not-found.
func TestNoPage(t *testing.T) {
	err := NoPage(cloudapi.OpListInstances)
	require.ErrorIs(t, err, cloudapi.ErrTransient)
	assert.NotErrorIs(t, err, cloudapi.ErrNotFound)
	assert.Contains(t, err.Error(), "ListInstances")
}
