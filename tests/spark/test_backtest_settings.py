"""The history bucket width: one validated setting (``VOLUME_QUOTA_HISTORY_BUCKET``)."""

from __future__ import annotations

import pytest

from spark_history.history_settings import DEFAULT_BUCKET_SECONDS, HistorySettings, load_history
from volume_quota.errors import UsageError

pytestmark = pytest.mark.spark


def test_the_bucket_is_an_hour_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOLUME_QUOTA_HISTORY_BUCKET", raising=False)
    assert DEFAULT_BUCKET_SECONDS == 3600.0
    assert load_history().history_bucket == 3600.0


def test_the_environment_sets_the_bucket_as_a_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HISTORY_BUCKET", "1m")
    assert load_history().history_bucket == 60.0


def test_a_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HISTORY_BUCKET", "1m")
    assert load_history(history_bucket="10m").history_bucket == 600.0


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "greater than or equal to 1"),
        ("500ms", "greater than or equal to 1"),
        ("2d", "less than or equal to 86400"),
        ("soon", "is not a duration"),
        ("1.5s", "whole number of seconds"),
    ],
)
def test_a_bad_bucket_is_one_line_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, problem: str
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HISTORY_BUCKET", value)
    with pytest.raises(UsageError) as raised:
        load_history()
    (line,) = raised.value.problems
    assert line.startswith(
        "invalid setting history_bucket (--history-bucket, VOLUME_QUOTA_HISTORY_BUCKET): "
    )
    assert problem in line


def test_the_model_validates_direct_construction() -> None:
    assert HistorySettings(history_bucket=300).history_bucket == 300.0
