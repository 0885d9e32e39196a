#!/usr/bin/env bash
# Installs the tools the chart tests (tests/chart/) need, into a cache directory, idempotently:
#
#   - helm, pinned, built from source with the Go toolchain (`go install`, module proxy);
#   - @kubernetes-models/prometheus-operator, pinned, from npm: the validators generated from the
#     prometheus-operator CRD schemas, used to check the ServiceMonitor and PrometheusRule;
#   - promtool (Debian's package prometheus, apt-get, when missing): checks the alert rules'
#     PromQL and runs their unit tests (tests/chart/test_alert_rules.py). Only the package is
#     installed; no Prometheus server is started.
#
# (The built-in Kubernetes kinds are validated with the JSON schemas of the Python package
# kubernetes-validate, a dev dependency in pyproject.toml, not installed here.)
#
# Usage: bash deploy/helm/install-helm.sh        prints the helm binary's path on the last line
# Cache: $VOLUME_QUOTA_TOOLS_DIR, default ${XDG_CACHE_HOME:-~/.cache}/volume-quota/chart-tools
# The tests find helm at $VOLUME_QUOTA_HELM, default $VOLUME_QUOTA_TOOLS_DIR/helm-$HELM_VERSION/helm.
set -euo pipefail

HELM_VERSION="v3.22.0"
# Kubernetes version helm assumes when no cluster is asked (`.Capabilities.KubeVersion` in
# `helm template` / `helm lint`). The release Makefile derives it from the k8s.io/client-go
# version in helm's go.mod (v0.37.0 for v3.22.0 -> 1.37); a plain `go install` would leave
# helm's source default, 1.20. Set the same as the release binaries.
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="37"
PROMETHEUS_OPERATOR_MODELS_VERSION="6.0.0"

tools_dir="${VOLUME_QUOTA_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/volume-quota/chart-tools}"
helm_dir="$tools_dir/helm-$HELM_VERSION"
helm_bin="$helm_dir/helm"
models_dir="$tools_dir/prometheus-operator-models-$PROMETHEUS_OPERATOR_MODELS_VERSION"

install_helm() {
    if [[ -x "$helm_bin" ]] &&
        [[ "$("$helm_bin" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
        echo "helm $HELM_VERSION already installed" >&2
        return
    fi
    command -v go >/dev/null || { echo "install-helm.sh: the Go toolchain (go) is needed" >&2; exit 1; }
    echo "building helm $HELM_VERSION with go install (takes a few minutes on 2 cores)" >&2
    local ldflags start
    start=$SECONDS
    mkdir -p "$tools_dir"
    staging="$(mktemp -d "$tools_dir/.helm-build.XXXXXX")"
    trap 'rm -rf "$staging"' EXIT
    ldflags="-s -w"
    ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    for package in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
        ldflags+=" -X $package.k8sVersionMajor=$HELM_K8S_MAJOR"
        ldflags+=" -X $package.k8sVersionMinor=$HELM_K8S_MINOR"
    done
    GOBIN="$staging" CGO_ENABLED=0 GOFLAGS="-buildvcs=false" \
        go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    mkdir -p "$helm_dir"
    mv -f "$staging/helm" "$helm_bin"
    echo "helm $HELM_VERSION built in $((SECONDS - start)) s" >&2
}

install_prometheus_operator_models() {
    local marker="$models_dir/node_modules/@kubernetes-models/prometheus-operator/package.json"
    if [[ -f "$marker" ]] && grep -q "\"version\": \"$PROMETHEUS_OPERATOR_MODELS_VERSION\"" "$marker"; then
        echo "@kubernetes-models/prometheus-operator $PROMETHEUS_OPERATOR_MODELS_VERSION already installed" >&2
        return
    fi
    command -v npm >/dev/null || { echo "install-helm.sh: npm is needed" >&2; exit 1; }
    mkdir -p "$models_dir"
    [[ -f "$models_dir/package.json" ]] ||
        echo '{"name": "volume-quota-chart-tools", "private": true}' >"$models_dir/package.json"
    npm install --prefix "$models_dir" --no-audit --no-fund --loglevel=error --save-exact \
        "@kubernetes-models/prometheus-operator@$PROMETHEUS_OPERATOR_MODELS_VERSION" >&2
}

install_promtool() {
    if command -v promtool >/dev/null; then
        echo "promtool already installed ($(command -v promtool))" >&2
        return
    fi
    command -v apt-get >/dev/null ||
        { echo "install-helm.sh: promtool is needed (e.g. Debian's package prometheus)" >&2; exit 1; }
    echo "installing promtool (Debian package prometheus, apt-get)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
}

install_helm
install_prometheus_operator_models
install_promtool
echo "$helm_bin"
