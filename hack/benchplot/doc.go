// Command benchplot draws the cost curve that `go run ./bench -sweep` measures: it reads
// the sweep's JSON (docs/benchmarks/sweep.json) and writes one SVG per figure beside it,
// ccmkit and the pass-through baseline by cluster size with dashed reference curves
// (ceil(N/P), N, the goals), which docs/benchmarks.md embeds. A size at which the
// baseline was not run (sweep.json's baseline_run) has no baseline point.
//
//	go run . [-in docs/benchmarks/sweep.json] [-out DIR]
//
// It is a module of its own so that gonum.org/v1/plot stays out of the library's go.mod;
// `make bench ARGS=-sweep` and `make benchmarks` run it, `make vet` builds and vets it.
package main
