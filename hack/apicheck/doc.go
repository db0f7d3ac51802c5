// Command apicheck writes and checks api/ccmkit.txt, the description of ccmkit's exported
// API that guards it against unnoticed changes (docs/versioning.md says what the API is
// and what a change costs its users).
//
//	go run ./hack/apicheck -w api/ccmkit.txt   # make api: write the description
//	go run ./hack/apicheck api/ccmkit.txt      # make api-check (in make test): compare
//
// The check exits 1 when the code's API differs from the file, listing every added,
// removed and changed identifier with its verdict, and 2 when it cannot tell (bad usage,
// a package that does not compile, a file not in the format below).
//
// # Which packages
//
// The public packages: every non-main package of the root module (`go list ./...`, so
// neither the e2e module nor testdata) except those with an internal path element and
// those under bench/ (the benchmark and its baseline), deploy/ (the manifests' tests) and
// examples/. The examples' library packages, examples/restcloud/adapter and
// examples/restcloud/server, are left out on purpose: they are a tutorial, written to be
// read and copied into a cloud team's own module, and the adapter registers the restcloud
// provider in init, so no program should import it; guarding them would make every
// improvement to the tutorial a versioned API change. A new package anywhere else is
// public the moment it exists, and the check says so.
//
// # The format
//
// One line per exported identifier, in the manner of Go's own api/*.txt files, sorted
// byte-wise (so a package's lines stay together):
//
//	pkg P, const Name T = value          typed, or "untyped int" etc.; value exact (1/1000)
//	pkg P, var Name T
//	pkg P, func Name[TP C](T1, ...T2) (R1, R2)
//	pkg P, type Name[TP C] struct        then one line per exported field:
//	pkg P, type Name[TP C] struct, Field T `tag`
//	pkg P, type Name[TP C] struct, embedded *Q
//	pkg P, type Name interface           then one line per method, embedded ones included:
//	pkg P, type Name interface, Method(T) R
//	pkg P, type Name interface{ unexported methods }   (other packages cannot implement it)
//	pkg P, type Name = T                 an alias
//	pkg P, type Name T                   any other defined type, by its underlying type
//	pkg P, method (T) Name(T1) R         the method sets of T and (methods only *T has) *T,
//	pkg P, method (*T) Name(T1) R        promoted methods included
//
// Types of P itself are unqualified, every other package's types carry their full import
// path (k8s.io/api/core/v1.Node), since package names such as v1 repeat. Parameter names
// are left out (they are not API); struct tags are in, because the yaml tags of
// provider.Config and fake.Config are the cloud config's keys. The description is of
// types, not spellings: an alias is written as the type it stands for, interface{} as
// any, byte and rune as uint8 and int32, so that rewording a declaration changes nothing.
// Nothing in a line depends on the Go release that wrote it, save for a kind of type that
// Go adds in the future, which is an error until describe.go learns to write it. The
// packages are read as built for the host's GOOS and GOARCH; no public package has a
// file for one platform only, so the description is the same on every machine.
//
// # Verdicts
//
// A removed identifier, or a changed line (signature, field type, struct tag, constant
// value, type parameters), breaks callers. An addition is compatible, as in Go's own
// compatibility rules (a new struct field or method included), except a method added to
// an interface that other packages can implement, which breaks its implementers. Moving a
// method from *T to T, and dropping an interface's unexported method, are compatible;
// sealing an interface with an unexported method breaks its implementers. A type or
// package added or removed as a whole is reported once, with the count of its lines.
//
// # How it reads the API, and why this way
//
// It asks `go list -export -deps` for the compiler's export data of the public packages
// and imports it with the standard library's go/importer (the "gc" importer with a lookup
// function), then walks the go/types objects. Only the standard library is used, so the
// root go.mod gains no requirement, and no nested module is needed. The alternatives
// were slower or heavier:
//
//   - go/types over source with go/importer's "source" importer type checks every
//     dependency from source (k8s.io/client-go, k8s.io/apiserver, ...) on every run;
//   - golang.org/x/tools/go/gcexportdata or go/packages do what the lookup function does
//     here, but x/tools is not a requirement of the root module, so using them from a
//     package in it would add one (it appears in `go list -m all` only as a requirement
//     of other modules), and a nested module would need go.mod, go.sum and its own
//     build;
//   - golang.org/x/exp/cmd/apidiff compares two builds' export data and gives verdicts,
//     but its saved form is binary export data, not a file a reviewer can read and diff,
//     and comparing against a git revision needs a second checkout and build.
//
// The export data is what `go build` already put in the build cache, so after make vet
// the check costs about the time of two `go list` runs. Run in the repository's root.
package main
