#!/usr/bin/env bash
# Fails when the repository tracks what it must not carry: a compiled executable (ELF, Mach-O,
# PE or a Go test binary), a file with the executable bit that is not on the list below, a
# file over 1 MiB that is not on the list below, or a merge's conflict markers. Every clone
# downloads every tracked byte, and a build output that is tracked goes stale beside the
# code it was built from.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tracked files that may carry the executable bit: scripts run by path.
executables=(
	.ci/run
	hack/benchmarks.sh
	hack/compat.sh
	hack/controlplane.sh
	hack/sharedversions.sh
	hack/trackedfiles.sh
	hack/vendorcheck.sh
)
# Tracked files that may be larger than max_bytes.
large=()
max_bytes=$((1024 * 1024))

listed() {
	local want=$1
	shift
	local f
	for f in "$@"; do [[ $f == "$want" ]] && return 0; done
	return 1
}

problems=0
while IFS= read -r -d '' entry; do
	mode=${entry%% *}
	path=${entry#*$'\t'}
	if [[ $mode == 120000 ]]; then
		continue # a symlink's content is its target's name
	fi
	if [[ $mode == 100755 ]] && ! listed "$path" "${executables[@]}"; then
		echo "tracked with the executable bit, not listed in hack/trackedfiles.sh: $path"
		problems=$((problems + 1))
	fi
	[[ -f $path ]] || continue
	magic=$(head -c 4 "$path" | od -An -tx1 | tr -d ' \n')
	case $magic in
	7f454c46 | cffaedfe | cefaedfe | feedface | feedfacf | 4d5a*)
		echo "tracked compiled executable (a build output: delete it and ignore it in .gitignore): $path"
		problems=$((problems + 1))
		;;
	esac
	size=$(stat -c %s "$path")
	if ((size > max_bytes)) && ! listed "$path" "${large[@]}"; then
		echo "tracked file of $size bytes, over $max_bytes and not listed in hack/trackedfiles.sh: $path"
		problems=$((problems + 1))
	fi
done < <(git ls-files -s -z | sed -z 's/^\([0-9]*\) [0-9a-f]* [0-9]\t/\1 \t/')
# A merge whose conflict was committed unresolved: git's markers at the start of a line.
markers=$(git grep -n -I -E '^(<<<<<<<|>>>>>>>) ' -- .) || (($? == 1)) # 1: none found
while IFS= read -r hit; do
	[[ -n $hit ]] || continue
	echo "unresolved merge conflict marker: $hit"
	problems=$((problems + 1))
done <<<"$markers"
if ((problems > 0)); then
	echo "$problems tracked file(s) the repository must not carry"
	exit 1
fi
