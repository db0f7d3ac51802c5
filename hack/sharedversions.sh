#!/usr/bin/env bash
# Checks that every module whose packages are built both by the e2e module (its tests and
# the demo) and by another module of the repository resolves to the same module version
# in both, so that the Go build cache compiles those packages once:
#   - e2e/tools (kube-apiserver and etcd): a cold control-plane build after the e2e build
#     measured 233 s instead of 519 s;
#   - examples/hcloud (the Hetzner adapter, its mock and its CCM): after the e2e build it
#     compiles only hcloud-go and its own packages, not the Kubernetes client tree again;
#   - bench/peers (the benchmark with the other providers' columns): after the e2e build
#     it compiles only the AWS SDK, the AWS provider and its own packages.
# A version that drifts apart (say after `go get` in one module) still works, only slower;
# this check says which module to align.
set -euo pipefail
export LC_ALL=C # sort and join must agree on the order of module paths
root="$(cd "$(dirname "$0")/.." && pwd)"
# Each module as the path@version its packages come from (a replacement's, if replaced);
# the main module and a directory replacement as their absolute directory, so that ../
# and ../.. compare equal, and so do examples/hcloud and e2e's replacement of it.
format='{{with .Module}}{{.Path}} {{if .Main}}{{.Dir}}{{else if .Replace}}{{if .Replace.Version}}{{.Replace.Path}}@{{.Replace.Version}}{{else}}{{.Replace.Dir}}{{end}}{{else}}{{.Path}}@{{.Version}}{{end}}{{end}}'
e2e=$(cd "$root/e2e" && go list -deps -test -f "$format" ./... | sort -u -k1,1)
tools=$(cd "$root/e2e/tools" && go list -deps -f "$format" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 | sort -u -k1,1)
hcloud=$(cd "$root/examples/hcloud" && go list -deps -test -f "$format" ./... | sort -u -k1,1)
peers=$(cd "$root/bench/peers" && go list -deps -test -f "$format" ./... | sort -u -k1,1)

failed=0
# compare NAME LIST HOW K8S: the modules of LIST that e2e builds too, at the same versions;
# K8S says how NAME takes a k8s.io module's version.
compare() {
	local name=$1 list=$2 how=$3 k8s=$4 both drift
	both=$(join <(echo "$e2e") <(echo "$list"))
	drift=$(echo "$both" | awk -v name="$name" '$2 != $3 { printf "  %s: e2e %s, %s %s\n", $1, $2, name, $3 }')
	if [[ -n $drift ]]; then
		echo "modules built by both e2e and $name are at different versions, so $how"
		echo "compiles them a second time. Align them: a k8s.io module $k8s, any other"
		echo "with 'go get MODULE@VERSION' in the module that has the lower version:"
		echo "$drift"
		failed=1
		return
	fi
	echo "$(echo "$both" | wc -l) modules built by both e2e and $name, all at the same versions"
}
compare e2e/tools "$tools" "the control-plane build" \
	"through e2e/tools/go.mod's replace block (with k8s.io/kubernetes at the same release)"
compare examples/hcloud "$hcloud" "the examples/hcloud build" \
	"with 'go get' in examples/hcloud at e2e's version (both at e2e/go.mod's minor)"
compare bench/peers "$peers" "the bench/peers build" \
	"with 'go get' in bench/peers at e2e's version; one the AWS provider asks a newer one of, through bench/peers/go.mod's replace block"
exit $failed
