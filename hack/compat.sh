#!/usr/bin/env bash
# hack/compat.sh [TARGET...]: builds and tests the library against other Kubernetes minors
# than the floor its go.mod requires (docs/versioning.md, "Kubernetes versions").
#
# A TARGET is a minor of the k8s.io staging modules: "0.36" means the newest v0.36.x patch
# of each of them, "0.38-pre" the newest v0.38.0 pre-release of each (modules that have
# none yet stay where the others' requirements take them). For each target the script
# copies the tracked files into a scratch directory, moves every k8s.io module that go.mod
# requires at the floor's minor to the target there (`go get`, then `go mod tidy`), and
# runs `go build ./...` and `go test -short -vet=off -count=1 ./...` (vet and -race run at
# the floor in `make vet` and `make unit`; -short skips the scale tests, which run there
# too). A minor between the floor and the e2e module's compiles and links its tests without
# running them (`-run '^$'`: the API is checked; the behaviour is run at the floor and at
# e2e's minor), unless COMPAT_RUN_ALL=1. The checked-in go.mod and go.sum are never changed.
#
# The target at the minor the e2e module builds (e2e/go.mod's k8s.io/client-go) also takes
# e2e's version of every other module both build lists hold, where e2e's is higher (`go
# get`; the k8s.io modules the target moves stay at its newest patch):
# so its packages have the Go build cache keys of e2e's build, which `make test` runs
# first, and compile once for both (hack/sharedversions.sh does the same for e2e/tools).
#
# A supported minor is built with the Go toolchain at hand (GOTOOLCHAIN=local: a minor that
# needs a newer Go fails). A pre-release may require a Go release newer than the one here,
# as its consumers will: it is built and tested with COMPAT_PRE_GO (go1.27.3, what v0.38
# requires), which the go command fetches from the module proxy once (76 MB) and keeps in
# the module cache. GOTOOLCHAIN is set to it in that target's commands alone: the other
# targets, and everything else `make test` runs, use the Go at hand. Its packages compile
# once in the build cache of that Go (nothing is shared with the other targets' builds):
# about 560 s of CPU time the first time, 175 s after (docs/versioning.md).
#
# Every target must pass, the pre-release's too: a target that fails fails the run. Each
# target prints one line: PASS or FAIL, the versions it resolved, the Go that built it
# and its duration; a failing target's log is printed in full.
#
# Environment: COMPAT_TARGETS (default "0.36 0.37 0.38-pre") when no TARGET is given;
# COMPAT_PRE_GO (default go1.27.3) the Go of the pre-release targets; COMPAT_KEEP=1 keeps
# the scratch directories (their paths are printed).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
root=$PWD
pre_go=${COMPAT_PRE_GO:-go1.27.3}
if [[ ! $pre_go =~ ^go1\.[0-9]+\.[0-9]+$ ]]; then
	echo "compat: COMPAT_PRE_GO=$pre_go is not a Go release such as go1.27.3" >&2
	exit 2
fi
# Tools `make` installs (helm, for deploy's chart test) are found as under make.
export PATH=$root/.bin:$PATH

if (($# > 0)); then
	targets=("$@")
else
	read -r -a targets <<<"${COMPAT_TARGETS:-0.36 0.37 0.38-pre}"
fi

# The floor is the minor of k8s.io/client-go in go.mod; the staging modules to move are
# the k8s.io modules go.mod requires at that minor (direct and indirect requirements).
floor=$(go list -m -f '{{.Version}}' k8s.io/client-go | sed -E 's/^v0\.([0-9]+)\..*/0.\1/')
mapfile -t staging < <(go list -m -f '{{.Path}} {{.Version}}' all |
	awk -v re="^v${floor//./\\.}\\." '$1 ~ /^k8s\.io\// && $2 ~ re { print $1 }')
if ((${#staging[@]} == 0)); then
	echo "compat: found no k8s.io module at the floor v$floor in go.mod" >&2
	exit 1
fi

# newest MODULE MINOR PRE prints the newest version of MODULE in the minor (v0.MINOR.x), or
# with PRE=1 its newest v0.MINOR.0 pre-release; nothing when there is none.
newest() {
	local mod=$1 minor=$2 pre=$3 pattern
	if ((pre)); then
		pattern="^v${minor//./\\.}\\.0-(alpha|beta|rc)\\."
	else
		pattern="^v${minor//./\\.}\\.[0-9]+$"
	fi
	# go list -m -versions lists in semver order, oldest first.
	go list -m -versions "$mod" | tr ' ' '\n' | grep -E "$pattern" | tail -n 1 || true
}

scratchroot=$(mktemp -d "${TMPDIR:-/tmp}/ccmkit-compat.XXXXXX")
# The e2e module's minor and build list (path, version; sorted for join), for the target
# that shares its build.
e2eminor=$(cd e2e && go list -m -f '{{.Version}}' k8s.io/client-go | sed -E 's/^v0\.([0-9]+)\..*/0.\1/')
e2emods=$scratchroot/e2e.mods
(cd e2e && go list -m -f '{{if not .Replace}}{{.Path}} {{.Version}}{{end}}' all | grep -v '^$' | sort) >"$e2emods"
if [[ ${COMPAT_KEEP:-} != 1 ]]; then
	trap 'rm -rf "$scratchroot"' EXIT
fi

failed=()
for target in "${targets[@]}"; do
	minor=${target%-pre}
	pre=0
	[[ $target == *-pre ]] && pre=1
	if [[ ! $minor =~ ^0\.[0-9]+$ ]]; then
		echo "compat: target $target is not a minor such as 0.36 or 0.38-pre" >&2
		exit 2
	fi
	dir=$scratchroot/$target
	log=$scratchroot/$target.log
	mkdir -p "$dir"
	# The tracked files and the new ones git does not ignore: the working tree as it would
	# be committed.
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir"
	toolchain=local
	((pre)) && toolchain=$pre_go
	start=$SECONDS
	gets=()
	for mod in "${staging[@]}"; do
		v=$(newest "$mod" "$minor" "$pre")
		[[ -n $v ]] && gets+=("$mod@$v")
	done
	status=FAIL
	if ((${#gets[@]} == 0)); then
		echo "no k8s.io module has a release in v$minor" >"$log"
	else
		# Not a condition (if/&&/||), so that errexit holds inside: the first failing step
		# ends the target. The nested modules (e2e and its tools) are not part of the matrix.
		set +e
		(
			set -ex
			cd "$dir"
			export GOTOOLCHAIN=$toolchain
			export CCMKIT_COMPAT=$target # tests of the checked-in go.mod skip
			go get "${gets[@]}"
			go mod tidy
			if [[ $minor == "$e2eminor" ]]; then
				# e2e's versions where e2e's is higher ("path ours e2e's" lines of both build
				# lists), never for the k8s.io modules the target moved (staging): it tests their
				# newest patch, whatever e2e pins.
				mapfile -t align < <(join <(go list -m -f '{{.Path}} {{.Version}}' all | sort) "$e2emods" |
					grep -vF -f <(printf '%s \n' "${staging[@]}") | while read -r path ours theirs; do
						[[ -n $theirs && $ours != "$theirs" ]] || continue
						[[ $(printf '%s\n%s\n' "$ours" "$theirs" | sort -V | tail -n 1) == "$theirs" ]] && echo "$path@$theirs"
					done)
				if ((${#align[@]} > 0)); then
					go get "${align[@]}"
					go mod tidy
				fi
			fi
			go version
			go build ./...
			if [[ $minor == "$e2eminor" || $pre == 1 || ${COMPAT_RUN_ALL:-} == 1 ]]; then
				go test -short -vet=off -count=1 ./...
			else
				# A minor between the floor and e2e's: the tests compile and link against
				# it; they run at the floor (make unit) and at e2e's minor.
				go test -short -vet=off -count=1 -run '^$' ./...
			fi
		) >"$log" 2>&1
		rc=$?
		set -e
		((rc == 0)) && status=PASS
	fi
	# What the target asked for (the modules that set the minor), and the Go that built it.
	asked=$(printf '%s\n' "${gets[@]}" | grep -E '^k8s\.io/(client-go|cloud-provider)@' | tr '\n' ' ' || true)
	goused=$(cd "$dir" && GOTOOLCHAIN=$toolchain go env GOVERSION 2>/dev/null || true)
	printf '%-9s %s  %s%s (%ds)\n' "$target" "$status" "$asked" "$goused" $((SECONDS - start))
	if [[ $status == FAIL ]]; then
		sed 's/^/    /' "$log"
		failed+=("$target")
	fi
	[[ ${COMPAT_KEEP:-} == 1 ]] && echo "    kept: $dir" || rm -rf "$dir"
done

if ((${#failed[@]})); then
	echo "compat: FAILED: ${failed[*]}"
	exit 1
fi
echo "compat: every target passed"
