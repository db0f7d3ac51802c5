#!/usr/bin/env bash
# hack/vendorcheck.sh [-w]: vendors ccmkit into two consumer modules, as a distribution's
# control plane does, builds them from their vendor directories, and measures what each
# pulls in:
#
#   fake-only  imports only cloudapi and fake (a cloud team's unit tests against the fake);
#   ccm        a complete cloud-controller-manager: its own adapter package registering
#              with provider.Register, and a main.go on k8s.io/cloud-provider/app.
#
# Each consumer is a module of its own in a scratch directory with a replace directive to
# this checkout; `go mod tidy` and `go mod vendor` must succeed, then `go build -mod=vendor`
# of fake-only, and for the CCM (whose 1,119 packages `make vet` compiles from the same
# sources) a `go list -mod=vendor -deps` that resolves every package from vendor/.
# The figures (modules in the consumer's build list, modules whose packages it compiles,
# packages it compiles, size of vendor/), and what a unit test on providertest and an
# adapter's contract test compile (no vendoring: the test's build in this module), are
# compared with the table between the
# "vendorcheck" markers in docs/versioning.md: a difference fails the check, and -w writes the
# table instead.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
root=$PWD
write=0
[[ ${1:-} == -w ]] && write=1

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ccmkit-vendor.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
goversion=$(go list -m -f '{{.GoVersion}}' github.com/ccmkit/ccmkit)

consumer() { # consumer NAME: writes go.mod; main.go (and more) come from the caller
	mkdir -p "$scratch/$1"
	cat >"$scratch/$1/go.mod" <<EOF
module example.com/$1

go $goversion

require github.com/ccmkit/ccmkit v0.0.0

replace github.com/ccmkit/ccmkit => $root
EOF
}

consumer fake-only
cat >"$scratch/fake-only/main.go" <<'EOF'
// Command fake-only lists the instances of an in-memory fake cloud through cloudapi.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
)

func main() {
	cloud, err := fake.New(fake.Config{Instances: []fake.Instance{{ID: "i-1", Name: "node-a"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var client cloudapi.Client = cloud
	page, err := client.Instances().ListInstances(context.Background(), cloudapi.ListOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(len(page.Items))
}
EOF

consumer ccm
mkdir -p "$scratch/ccm/adapter"
cat >"$scratch/ccm/adapter/adapter.go" <<'EOF'
// Package adapter registers a cloud provider named "example" with ccmkit. A real adapter
// returns a client of its cloud's API; this one returns the fake cloud.
package adapter

import (
	"github.com/ccmkit/ccmkit/cloudapi"
	"github.com/ccmkit/ccmkit/fake"
	"github.com/ccmkit/ccmkit/provider"
)

func init() {
	provider.Register("example", provider.Backend[fake.Config]{
		Name: "example",
		New: func(_ *provider.Config, section fake.Config) (cloudapi.Client, error) {
			return fake.New(section)
		},
	}, provider.Options{})
}
EOF
# The CCM is the example's package (main.go and the files beside it, such as its teardown
# subcommand), with the consumer's adapter linked in instead of the built-in cloud.
for f in examples/ccm/*.go; do
	[[ $f == *_test.go ]] && continue
	sed 's#_ "github.com/ccmkit/ccmkit/provider/builtin".*#_ "example.com/ccm/adapter"#' \
		"$f" >"$scratch/ccm/${f##*/}"
done
grep -q '"example.com/ccm/adapter"' "$scratch/ccm/main.go" ||
	{ echo "vendorcheck: examples/ccm/main.go no longer blank-imports provider/builtin" >&2; exit 1; }

table="| consumer imports | modules in its build list | modules it compiles | packages it compiles | vendor/ |
|---|---|---|---|---|"
for name in fake-only ccm; do
	dir=$scratch/$name
	(
		cd "$dir"
		go mod tidy
		go mod vendor
		if [[ $name == fake-only ]]; then
			go build -mod=vendor -o /dev/null .
		else
			# The CCM's 1,119 packages compile in `make vet` from the same sources: from its
			# vendor/, every package must resolve (a -mod=vendor list checks vendor/modules.txt
			# against go.mod, and names every import vendor/ lacks).
			bad=$(go list -mod=vendor -deps -e -f '{{with .Error}}{{.}}{{end}}{{range .DepsErrors}}{{.}}{{end}}' . | sort -u)
			[[ -z $bad ]] || { echo "$bad"; exit 1; }
		fi
	) >"$scratch/$name.log" 2>&1 || {
		echo "vendorcheck: the $name consumer failed to vendor or build:" >&2
		sed 's/^/    /' "$scratch/$name.log" >&2
		exit 1
	}
	modules=$(cd "$dir" && go list -mod=mod -m all | tail -n +2 | wc -l)
	deps=$(cd "$dir" && go list -mod=vendor -deps -f '{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}' .)
	compiled=$(echo "$deps" | awk 'NF == 2 && $2 != "example.com/'"$name"'" { print $2 }' | sort -u | wc -l)
	packages=$(echo "$deps" | awk 'NF == 2 && $2 != "example.com/'"$name"'"' | wc -l)
	size=$(find "$dir/vendor" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f MB", s / 1048576 }')
	case $name in
	fake-only) what='`cloudapi`, `fake`' ;;
	ccm) what='`provider` (a CCM on `k8s.io/cloud-provider/app`)' ;;
	esac
	table+=$'\n'"| $what | $modules | $compiled | $packages | $size |"
	verb=built
	[[ $name == ccm ]] && verb=resolved
	echo "vendorcheck: $name: vendored and $verb ($modules modules in the build list, $compiled compiled, $packages packages, vendor/ $size)"
done

# What a unit test compiles (not vendored: the packages of its build in this module): one on
# providertest, and an adapter's contract test, whose package registers with provider.
for pkg in ./provider/providertest ./examples/restcloud/adapter; do
	deps=$(go list -deps -test -f '{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}' "$pkg")
	compiled=$(echo "$deps" | awk 'NF == 2 { print $2 }' | sort -u | wc -l)
	packages=$(echo "$deps" | awk 'NF == 2' | wc -l)
	case $pkg in
	./provider/providertest) what='a test on `providertest`' ;;
	*) what='an adapter'"'"'s contract test (`examples/restcloud/adapter`)' ;;
	esac
	table+=$'\n'"| $what | — | $compiled | $packages | — |"
	echo "vendorcheck: $pkg's test compiles $packages packages of $compiled modules"
done

begin='<!-- vendorcheck begin: hack/vendorcheck.sh -w writes this table -->'
end='<!-- vendorcheck end -->'
if ((write)); then
	TABLE=$table BEGIN=$begin END=$end python3 - docs/versioning.md <<'EOF'
import os, sys
path = sys.argv[1]
text = open(path).read()
b, e = os.environ["BEGIN"], os.environ["END"]
i, j = text.index(b) + len(b), text.index(e)
open(path, "w").write(text[:i] + "\n" + os.environ["TABLE"] + "\n" + text[j:])
EOF
	echo "vendorcheck: wrote the table in docs/versioning.md"
	exit 0
fi
current=$(awk -v b="$begin" -v e="$end" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' docs/versioning.md)
if [[ $current != "$table" ]]; then
	echo "vendorcheck: docs/versioning.md's module graph table differs from what was measured; run" >&2
	echo "'bash hack/vendorcheck.sh -w' and commit docs/versioning.md. Measured:" >&2
	echo "$table" >&2
	exit 1
fi
echo "vendorcheck: docs/versioning.md's table matches"
