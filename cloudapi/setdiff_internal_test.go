package cloudapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedDiffAgreesWithMapDiff checks the merge used for sorted lists against the
// map-based diff on random sorted inputs with duplicates, and that it refuses (ok false)
// exactly the inputs of which one is not sorted.
func TestSortedDiffAgreesWithMapDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		out := make([]string, rng.IntN(8))
		for i := range out {
			out[i] = fmt.Sprintf("i-%d", rng.IntN(10))
		}
		slices.Sort(out)
		return out
	}
	for range 5000 {
		have, want := gen(), gen()
		addM, removeM := mapDiff(have, want)
		addS, removeS, ok := sortedDiff(have, want)
		if !ok || !slices.Equal(addM, addS) || !slices.Equal(removeM, removeS) {
			t.Fatalf("have %v want %v: map diff +%v -%v, merge +%v -%v (ok %v)", have, want, addM, removeM, addS, removeS, ok)
		}
		shuffled := slices.Clone(have)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		_, _, ok = sortedDiff(shuffled, want)
		if sorted := slices.IsSorted(shuffled); ok != sorted {
			t.Fatalf("have %v want %v: merge ok %v, have sorted %v", shuffled, want, ok, sorted)
		}
		_, _, ok = sortedDiff(want, shuffled)
		if sorted := slices.IsSorted(shuffled); ok != sorted {
			t.Fatalf("have %v want %v: merge ok %v, want sorted %v", want, shuffled, ok, sorted)
		}
		add, remove := setDiff(shuffled, want)
		if !slices.Equal(addM, add) || !slices.Equal(removeM, remove) {
			t.Fatalf("have %v want %v: map diff +%v -%v, setDiff +%v -%v", shuffled, want, addM, removeM, add, remove)
		}
	}
}
