"""Renders the chart once per session for the values most tests look at."""

from __future__ import annotations

import pytest

from tests.chart.chart_tools import PRODUCTION_VALUES, Manifest, render


@pytest.fixture(scope="session")
def default_manifests() -> list[Manifest]:
    return render()


@pytest.fixture(scope="session")
def production_manifests() -> list[Manifest]:
    return render([PRODUCTION_VALUES])
