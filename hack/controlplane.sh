#!/usr/bin/env bash
# Builds the kube-apiserver and etcd that the e2e suite and the demo run, from the Go
# modules pinned in e2e/tools/go.mod, into .cache/controlplane (git-ignored). Does nothing
# when both binaries are there and were built from the current e2e/tools/go.mod, go.sum and
# this script.
#
# No -trimpath: without it the packages kube-apiserver shares with the e2e module (client-go,
# apiserver, etcd's client, grpc, ...; hack/sharedversions.sh keeps them at the same
# versions) have the same Go build cache keys as in the e2e build, so they compile once.
# The packages only these binaries use (k8s.io/kubernetes/..., etcd's server) are compiled
# without optimizations (-N -l): after the e2e build that took the control-plane build from
# 233 s to 131 s on 2 cores, and the e2e suite ran as fast as against optimized binaries
# (105 s vs 102 s). These binaries serve tests and the demo, never a real cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/controlplane
stamp="$out/.built-from"
want=$(sha256sum e2e/tools/go.mod e2e/tools/go.sum hack/controlplane.sh | sha256sum | cut -d' ' -f1)
if [[ -x $out/kube-apiserver && -x $out/etcd && -f $stamp && $(cat "$stamp") == "$want" ]]; then
	exit 0
fi
mkdir -p "$out"
version=$(cd e2e/tools && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
echo "==> building the control plane for the e2e suite and the demo into $out (once; about 10 minutes on 2 cores, about 3 when the e2e module is already built)"
start=$SECONDS
echo "    kube-apiserver $version (k8s.io/kubernetes/cmd/kube-apiserver)"
(cd e2e/tools && go build -o "../../$out/kube-apiserver" -gcflags='k8s.io/kubernetes/...=-N -l' \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	k8s.io/kubernetes/cmd/kube-apiserver)
echo "    etcd $(cd e2e/tools && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3) (go.etcd.io/etcd/server/v3)"
(cd e2e/tools && go build -gcflags='go.etcd.io/etcd/server/...=-N -l' -ldflags "-s -w" -o "../../$out/etcd" go.etcd.io/etcd/server/v3)
echo "$want" >"$stamp"
echo "==> control plane built in $((SECONDS - start)) s"
