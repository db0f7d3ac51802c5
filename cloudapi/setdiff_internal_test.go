package cloudapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedDiffAgreesWithMapDiff checks the merge used for sorted lists against the
// map-based diff on random sorted inputs with duplicates.
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
		addS, removeS := sortedDiff(have, want)
		if !slices.Equal(addM, addS) || !slices.Equal(removeM, removeS) {
			t.Fatalf("have %v want %v: map diff +%v -%v, merge +%v -%v", have, want, addM, removeM, addS, removeS)
		}
	}
}
