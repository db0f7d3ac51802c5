// Package harness is the benchmark that `make bench` runs (see the bench command's doc
// for the figures): one world, the upstream controllers of k8s.io/cloud-provider, one
// virtual clock and one set of scenarios that drive every column of the report.
//
// A column (Column) is a provider under test over an in-memory cloud of its own (Cloud),
// which holds the world's instances (WorldInstance), counts every call it answers by
// operation (Calls) and tells when a load balancer write reaches an instance. ccmkit's
// and the baseline's columns run over ccmkit's fake cloud and are always there; a peer's
// column lives in a module of its own (bench/peers), so that its cloud's SDK stays out of
// the library's go.mod, and is handed to Main. ccmkit's goals, the ratio of its figures
// to the best peer's and the figures a peer wins are in the report.
//
// The package is not part of ccmkit's API: only the benchmark's commands import it.
package harness
