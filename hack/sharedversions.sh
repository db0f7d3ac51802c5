#!/usr/bin/env bash
# Checks that every module whose packages are built both by the e2e module (its tests and
# the demo) and by e2e/tools (kube-apiserver and etcd) resolves to the same module version
# in both. The Go build cache then compiles those packages once: a cold control-plane build
# after the e2e build measured 233 s instead of 519 s. A version that drifts apart (say after
# `go get` in one module) still works, only slower; this check says which module to align.
set -euo pipefail
export LC_ALL=C # sort and join must agree on the order of module paths
cd "$(dirname "$0")/../e2e"
# Each module as the path@version its packages come from (a replacement's, if replaced).
format='{{with .Module}}{{.Path}} {{with .Replace}}{{.Path}}@{{.Version}}{{else}}{{.Path}}@{{.Version}}{{end}}{{end}}'
e2e=$(go list -deps -test -f "$format" ./... | sort -u -k1,1)
tools=$(cd tools && go list -deps -f "$format" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 | sort -u -k1,1)
both=$(join <(echo "$e2e") <(echo "$tools"))
drift=$(echo "$both" | awk '$2 != $3 { printf "  %s: e2e %s, e2e/tools %s\n", $1, $2, $3 }')
if [[ -n $drift ]]; then
	echo "modules built by both e2e and e2e/tools are at different versions, so the control-plane"
	echo "build compiles them a second time. Align them: a k8s.io staging module through"
	echo "e2e/tools/go.mod's replace block (with k8s.io/kubernetes at the same release), any other"
	echo "with 'go get MODULE@VERSION' in the module that has the lower version:"
	echo "$drift"
	exit 1
fi
echo "$(echo "$both" | wc -l) modules built by both e2e and e2e/tools, all at the same versions"
