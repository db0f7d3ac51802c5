#!/usr/bin/env bash
# Builds the kube-apiserver and etcd that the e2e suite and the demo run, from the Go
# modules pinned in e2e/tools/go.mod, into .cache/controlplane (git-ignored). Does nothing
# when both binaries are there and were built from the current e2e/tools/go.sum.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/controlplane
stamp="$out/.built-from"
want=$(sha256sum e2e/tools/go.mod e2e/tools/go.sum | sha256sum | cut -d' ' -f1)
if [[ -x $out/kube-apiserver && -x $out/etcd && -f $stamp && $(cat "$stamp") == "$want" ]]; then
	exit 0
fi
mkdir -p "$out"
version=$(cd e2e/tools && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
echo "==> building the control plane for the e2e suite and the demo into $out (once; about 9 minutes on 2 cores, less with a warm Go build cache)"
start=$SECONDS
echo "    kube-apiserver $version (k8s.io/kubernetes/cmd/kube-apiserver)"
(cd e2e/tools && go build -trimpath -o "../../$out/kube-apiserver" \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	k8s.io/kubernetes/cmd/kube-apiserver)
echo "    etcd $(cd e2e/tools && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3) (go.etcd.io/etcd/server/v3)"
(cd e2e/tools && go build -trimpath -ldflags "-s -w" -o "../../$out/etcd" go.etcd.io/etcd/server/v3)
echo "$want" >"$stamp"
echo "==> control plane built in $((SECONDS - start)) s"
