#!/usr/bin/env bash
# Installs a real Kubernetes control plane for tests/kubernetes/, into a cache directory,
# idempotently:
#
#   - kube-apiserver, kube-controller-manager, kube-scheduler and kubectl, built from the Go module
#     proxy: k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces every staging module
#     k8s.io/api, k8s.io/client-go, ... with ./staging/src/...), so a two-line module of ours
#     requires k8s.io/kubernetes at $KUBERNETES_VERSION and replaces each staging module with its
#     published tag (v0.x.y for v1.x.y). The version is stamped with -ldflags, as the release
#     build does, so that `kubectl version` and helm's .Capabilities.KubeVersion report it;
#   - etcd from Debian's package etcd-server (apt-get), only when no etcd is on the PATH;
#   - helm, via deploy/helm/install-helm.sh;
#   - the CustomResourceDefinitions the chart and the Strimzi recipe use: Prometheus Operator's
#     (ServiceMonitor, PodMonitor, PrometheusRule) and cert-manager's (Certificate, Issuer,
#     ClusterIssuer), taken from their Go modules (go mod download; no helm rendering needed,
#     the files are plain YAML); Strimzi's four CRDs are read
#     from the shared reference directory next to the repository (shared/reference/strimzi-crds).
#
# No kubelet, container runtime or kube-proxy is built: pods are created and scheduled, never run.
#
# Usage: bash tests/kubernetes/install-control-plane.sh     prints the bin directory on its last line
# Cache: ${XDG_CACHE_HOME:-~/.cache}/volume-quota/kubernetes-$KUBERNETES_VERSION/
#   bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,helm,etcd}
#   crds/{prometheus-operator,cert-manager,cert-manager-csi-driver,strimzi}/*.yaml
set -euo pipefail

KUBERNETES_VERSION="v1.36.3"
PROMETHEUS_OPERATOR_VERSION="v0.85.0"
CERT_MANAGER_VERSION="v1.21.2"
# cert-manager's csi-driver: only its CSIDriver object (the chart's sidecars mount its inline
# volumes; no driver runs here). The module zip from the Go module proxy, checked against this
# digest: sum.golang.org has no entry for it, so `go mod download` refuses it.
CSI_DRIVER_VERSION="v0.12.0"
CSI_DRIVER_ZIP_SHA256="a4b77b3e793d6afa4cde14f651f6b8feafbd9a748d4ba83e5f199bdde2b21168"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/volume-quota/kubernetes-$KUBERNETES_VERSION"
bin_dir="$cache_dir/bin"
crd_dir="$cache_dir/crds"
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

die() { echo "install-control-plane.sh: $*" >&2; exit 1; }

# v1.36.3 -> major 1, minor 36; the staging modules are tagged v0.36.3.
version_core="${KUBERNETES_VERSION#v}"
major="${version_core%%.*}"
minor_patch="${version_core#*.}"
minor="${minor_patch%%.*}"
staging_version="v0.${minor_patch}"

built_version() {
    # `kube-apiserver --version` prints "Kubernetes v1.36.3".
    "$bin_dir/$1" --version 2>/dev/null | awk '{print $2}'
}

components_installed() {
    local component
    for component in kube-apiserver kube-controller-manager kube-scheduler; do
        [[ -x "$bin_dir/$component" ]] || return 1
        [[ "$(built_version "$component")" == "$KUBERNETES_VERSION" ]] || return 1
    done
    [[ -x "$bin_dir/kubectl" ]] || return 1
    [[ "$("$bin_dir/kubectl" version --client -o json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')" \
        == "$KUBERNETES_VERSION" ]]
}

build_components() {
    if components_installed; then
        echo "kubernetes $KUBERNETES_VERSION control plane already built" >&2
        return
    fi
    command -v go >/dev/null || die "the Go toolchain (go) is needed"
    echo "building kubernetes $KUBERNETES_VERSION ${components[*]} (17 minutes measured on 2 busy cores with an empty module cache)" >&2
    local start staging module ldflags package
    start=$SECONDS
    mkdir -p "$cache_dir"
    staging="$(mktemp -d "$cache_dir/.build.XXXXXX")"
    trap 'rm -rf "$staging"' EXIT

    # The staging modules: the ones k8s.io/kubernetes both requires (at v0.0.0) and replaces with
    # ./staging/src/<module>, read from its own go.mod at this version.
    local kubernetes_mod
    kubernetes_mod="$(cd "$staging" && GOFLAGS=-mod=mod go mod download -json \
        "k8s.io/kubernetes@$KUBERNETES_VERSION" | python3 -c \
        'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
    local -a staging_modules
    mapfile -t staging_modules < <(python3 - "$kubernetes_mod" <<'EOF'
import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()
replaced = set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", text, re.M))
required = set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+v0\.0\.0\b", text, re.M))
print("\n".join(sorted(replaced & required)))
EOF
    )
    [[ ${#staging_modules[@]} -gt 10 ]] || die "found no staging modules in $kubernetes_mod"

    {
        echo "module volume-quota.test/kubernetes-control-plane"
        echo
        echo "go $(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')"
        echo
        echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
        echo
        echo "replace ("
        for module in "${staging_modules[@]}"; do
            echo "	$module => $module $staging_version"
        done
        echo ")"
    } >"$staging/go.mod"
    # One blank import keeps k8s.io/kubernetes in the module graph for `go mod tidy`.
    printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\nfunc main() {}\n' \
        >"$staging/main.go"
    (cd "$staging" && GOFLAGS=-mod=mod go mod tidy >&2)

    ldflags="-s -w"
    for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $package.gitVersion=$KUBERNETES_VERSION"
        ldflags+=" -X $package.gitMajor=$major"
        ldflags+=" -X $package.gitMinor=$minor"
        ldflags+=" -X $package.gitTreeState=clean"
        ldflags+=" -X $package.buildDate=1970-01-01T00:00:00Z"
    done
    local -a packages=()
    for component in "${components[@]}"; do
        packages+=("k8s.io/kubernetes/cmd/$component")
    done
    mkdir -p "$staging/out"
    (cd "$staging" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod" \
        go build -trimpath -ldflags "$ldflags" -o out/ "${packages[@]}" >&2)
    mkdir -p "$bin_dir"
    for component in "${components[@]}"; do
        mv -f "$staging/out/$component" "$bin_dir/$component"
    done
    rm -rf "$staging"
    trap - EXIT
    echo "kubernetes $KUBERNETES_VERSION built in $((SECONDS - start)) s" >&2
}

install_etcd() {
    local etcd
    etcd="$(command -v etcd || true)"
    if [[ -z "$etcd" ]]; then
        command -v apt-get >/dev/null || die "etcd is needed (e.g. Debian's package etcd-server)"
        echo "installing etcd (Debian package etcd-server, apt-get)" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            etcd-server >&2
        etcd="$(command -v etcd)" || die "etcd-server installed no etcd on the PATH"
    else
        echo "etcd already installed ($etcd)" >&2
    fi
    mkdir -p "$bin_dir"
    ln -sfn "$etcd" "$bin_dir/etcd"
}

install_helm() {
    local helm
    helm="$(bash "$repo_root/deploy/helm/install-helm.sh" | tail -n 1)"
    [[ -x "$helm" ]] || die "deploy/helm/install-helm.sh printed no helm binary ($helm)"
    ln -sfn "$helm" "$bin_dir/helm"
}

module_dir() {
    # go mod download needs a module context only for its cache; run it from an empty directory.
    local scratch dir
    scratch="$(mktemp -d)"
    dir="$(cd "$scratch" && GOFLAGS=-mod=mod go mod download -json "$1" | python3 -c \
        'import json,sys; print(json.load(sys.stdin)["Dir"])')"
    rm -rf "$scratch"
    echo "$dir"
}

install_prometheus_operator_crds() {
    local target="$crd_dir/prometheus-operator" source kind
    local -a kinds=(servicemonitors podmonitors prometheusrules)
    if [[ -f "$target/.version" ]] && [[ "$(cat "$target/.version")" == "$PROMETHEUS_OPERATOR_VERSION" ]]; then
        echo "prometheus-operator $PROMETHEUS_OPERATOR_VERSION CRDs already installed" >&2
        return
    fi
    source="$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")"
    rm -rf "$target" && mkdir -p "$target"
    for kind in "${kinds[@]}"; do
        cp "$source/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$target/"
    done
    chmod u+w "$target"/*.yaml
    echo "$PROMETHEUS_OPERATOR_VERSION" >"$target/.version"
}

install_cert_manager_crds() {
    local target="$crd_dir/cert-manager" source kind
    local -a kinds=(certificates issuers clusterissuers)
    if [[ -f "$target/.version" ]] && [[ "$(cat "$target/.version")" == "$CERT_MANAGER_VERSION" ]]; then
        echo "cert-manager $CERT_MANAGER_VERSION CRDs already installed" >&2
        return
    fi
    source="$(module_dir "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION")"
    rm -rf "$target" && mkdir -p "$target"
    # deploy/crds/ holds the CRDs as controller-gen writes them (plain YAML, the same schemas
    # the release's cert-manager.crds.yaml carries, without the chart's labels).
    for kind in "${kinds[@]}"; do
        cp "$source/deploy/crds/cert-manager.io_$kind.yaml" "$target/"
        grep -q '^kind: CustomResourceDefinition' "$target/cert-manager.io_$kind.yaml" ||
            die "cert-manager's deploy/crds/cert-manager.io_$kind.yaml holds no CustomResourceDefinition"
    done
    chmod u+w "$target"/*.yaml
    echo "$CERT_MANAGER_VERSION" >"$target/.version"
}

install_csi_driver_object() {
    # The CSIDriver csi.cert-manager.io as csi-driver's own Helm chart renders it (its default
    # values), applied with the CRDs (ControlPlane.apply_crds applies every file here).
    local target="$crd_dir/cert-manager-csi-driver" proxy scratch module
    if [[ -f "$target/.version" ]] && [[ "$(cat "$target/.version")" == "$CSI_DRIVER_VERSION" ]]; then
        echo "cert-manager csi-driver $CSI_DRIVER_VERSION CSIDriver already installed" >&2
        return
    fi
    proxy="$(go env GOPROXY | cut -d, -f1)"
    [[ "$proxy" == http* ]] || proxy="https://proxy.golang.org"
    scratch="$(mktemp -d)"
    module="github.com/cert-manager/csi-driver@$CSI_DRIVER_VERSION"
    curl -fsSL --retry 3 -o "$scratch/module.zip" \
        "$proxy/github.com/cert-manager/csi-driver/@v/$CSI_DRIVER_VERSION.zip" ||
        die "could not fetch $module from $proxy"
    echo "$CSI_DRIVER_ZIP_SHA256  $scratch/module.zip" | sha256sum --check --quiet >&2 ||
        die "$module: the module zip does not have the pinned digest"
    (cd "$scratch" && python3 -m zipfile -e module.zip .) || die "could not unpack $module"
    rm -rf "$target" && mkdir -p "$target"
    "$bin_dir/helm" template cert-manager-csi-driver "$scratch/$module/deploy/charts/csi-driver" \
        --show-only templates/csidriver.yaml >"$target/csidriver.yaml" ||
        die "helm could not render $module's CSIDriver"
    grep -q '^kind: CSIDriver' "$target/csidriver.yaml" ||
        die "$module's chart rendered no CSIDriver"
    rm -rf "$scratch"
    echo "$CSI_DRIVER_VERSION" >"$target/.version"
}

install_strimzi_crds() {
    # CI has shared/ next to the clone: <repo>/../shared/reference/strimzi-crds (read-only).
    local source="$repo_root/../shared/reference/strimzi-crds" target="$crd_dir/strimzi"
    [[ -d "$source" ]] || die "Strimzi's CRDs are expected in $source"
    mkdir -p "$target"
    cp -f "$source"/0*-Crd-*.yaml "$target/"
    chmod u+w "$target"/*.yaml
}

build_components
install_etcd
install_helm
install_prometheus_operator_crds
install_cert_manager_crds
install_csi_driver_object
install_strimzi_crds
echo "$bin_dir"
