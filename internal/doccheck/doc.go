// Package doccheck holds the test that compiles every Go snippet of the documentation
// (README.md, CONTRIBUTING.md and docs/): a ```go block starts with its package clause,
// and the blocks of one page with the same package name are one package, so a page can
// build a package step by step. A block that is a fragment on purpose is marked
// ```go fragment and skipped. The tests also hold the k8s.io module versions the docs
// quote (`k8s.io/api@v0.35.10`) equal to go.mod's, and docs/architecture.md true to the
// tree: every package its picture and its package table name is a directory with Go files
// (or, for a module of its own, a go.mod), and every file they name exists.
package doccheck
