"""helm itself: the pinned version is installed, and `helm lint --strict` accepts the chart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chart.chart_tools import (
    CHART,
    CI_VALUES,
    HELM_VERSION,
    PRODUCTION_VALUES,
    REPO,
    SHIPPED_VALUES,
    helm_binary,
    lint,
    render_notes,
    run_helm,
)


def test_the_pinned_helm_is_installed() -> None:
    assert helm_binary().name == "helm"
    assert run_helm("version", "--template", "{{.Version}}").strip() == HELM_VERSION


def test_helm_assumes_a_kubernetes_version_the_chart_accepts() -> None:
    # install-helm.sh sets helm's default Kubernetes version to the release binaries' (1.37);
    # a plain `go install` would leave 1.20, and Chart.yaml's kubeVersion (>=1.28) refuses that.
    assert "kind: StatefulSet" in run_helm("template", "x", str(CHART))


def test_lint_strict_passes_with_the_default_values() -> None:
    output = lint()
    assert "1 chart(s) linted, 0 chart(s) failed" in output
    assert "[WARNING]" not in output
    assert "[ERROR]" not in output


def test_ci_values_cover_own_cluster_and_attach_mode() -> None:
    assert [path.name for path in CI_VALUES] == ["attach-values.yaml", "own-cluster-values.yaml"]


@pytest.mark.parametrize("values", SHIPPED_VALUES, ids=lambda path: str(path.relative_to(REPO)))
def test_lint_strict_passes_with_every_shipped_values_file(values: Path) -> None:
    output = lint([values])
    assert "1 chart(s) linted, 0 chart(s) failed" in output
    assert "[WARNING]" not in output
    assert "[ERROR]" not in output


def test_the_install_notes_name_the_secrets_and_the_quota(tmp_path: Path) -> None:
    notes = render_notes(tmp_path / "chart", [PRODUCTION_VALUES])
    assert "5 Kafka nodes (KRaft, broker + controller)" in notes
    assert "Secret vq-volume-quota-broker-tls: broker certificate (CN kafka-broker" in notes
    assert (
        "cert-manager csi-driver (CSIDriver csi.cert-manager.io) and Issuer kafka-ca: one client "
        "certificate per sidecar (CN volume-quota-sidecar" in notes
    )
    assert "Snapshot signatures: require." in notes
    assert "PriorityClass kafka-critical: created by this release" in notes
    assert "Secret kafka-admin-tls: used by Job vq-volume-quota-acls-1" in notes
    assert "Never throttled: User:volume-quota-sidecar;User:kafka-admin;" in notes
    assert "producers get the PAUSE floor of 393216 B/s" in notes
