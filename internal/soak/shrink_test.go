package soak

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shrink returns a sub-history of ops for which fails holds, made small by delta
// debugging (ddmin): it tries to keep only one of n chunks, then to drop one, and splits
// finer when neither fails. It stops when no single operation can be dropped or after
// budget calls of fails, whichever is first; ops must fail to begin with. It returns the
// sub-history and the number of calls made.
func shrink(ops []op, fails func([]op) bool, budget int) ([]op, int) {
	calls := 0
	try := func(sub []op) bool {
		calls++
		return fails(sub)
	}
	n := 2
	for len(ops) >= 2 && calls < budget {
		chunks := split(ops, n)
		reduced := false
		for i := 0; i < len(chunks) && !reduced && calls < budget; i++ {
			if try(chunks[i]) {
				ops, n, reduced = chunks[i], 2, true
			}
		}
		for i := 0; i < len(chunks) && !reduced && n > 2 && calls < budget; i++ {
			if rest := without(chunks, i); try(rest) {
				ops, n, reduced = rest, max(n-1, 2), true
			}
		}
		if !reduced {
			if n >= len(ops) {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	return ops, calls
}

// split cuts ops into n chunks of nearly equal length, in order.
func split(ops []op, n int) [][]op {
	out := make([][]op, 0, n)
	for i := range n {
		lo, hi := i*len(ops)/n, (i+1)*len(ops)/n
		if hi > lo {
			out = append(out, ops[lo:hi:hi])
		}
	}
	return out
}

// without concatenates all chunks but the i-th.
func without(chunks [][]op, i int) []op {
	var out []op
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}

// indices formats the operations' indices for -soak.only.
func indices(ops []op) string {
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = strconv.Itoa(o.Index)
	}
	return strings.Join(parts, ",")
}

// only returns the operations of ops whose index is listed in list ("3,17,42").
func only(ops []op, list string) ([]op, error) {
	keep := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= len(ops) {
			return nil, fmt.Errorf("-soak.only: %q is not an operation index below %d", f, len(ops))
		}
		keep[i] = true
	}
	return slices.DeleteFunc(slices.Clone(ops), func(o op) bool { return !keep[o.Index] }), nil
}

func TestShrink(t *testing.T) {
	ops := make([]op, 100)
	for i := range ops {
		ops[i] = op{Index: i}
	}
	has := func(sub []op, idx ...int) bool {
		for _, want := range idx {
			if !slices.ContainsFunc(sub, func(o op) bool { return o.Index == want }) {
				return false
			}
		}
		return true
	}
	tests := []struct {
		name   string
		fails  func([]op) bool
		budget int
		want   string
	}{
		{name: "one culprit", fails: func(s []op) bool { return has(s, 42) }, budget: 1000, want: "42"},
		{name: "two culprits far apart", fails: func(s []op) bool { return has(s, 3, 97) }, budget: 1000, want: "3,97"},
		{name: "three culprits in order", fails: func(s []op) bool { return has(s, 10, 11, 60) }, budget: 1000, want: "10,11,60"},
		{name: "budget stops early", fails: func(s []op) bool { return has(s, 42) }, budget: 1, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, calls := shrink(ops, tt.fails, tt.budget)
			assert.LessOrEqual(t, calls, tt.budget)
			require.True(t, tt.fails(got), "the shrunk history must still fail")
			if tt.want != "" {
				assert.Equal(t, tt.want, indices(got))
			} else {
				assert.Less(t, len(got), len(ops))
			}
		})
	}
}

func TestOnly(t *testing.T) {
	ops := generate(1, 10)
	got, err := only(ops, "1, 7,3")
	require.NoError(t, err)
	assert.Equal(t, "1,3,7", indices(got))
	_, err = only(ops, "10")
	assert.ErrorContains(t, err, "not an operation index")
}
