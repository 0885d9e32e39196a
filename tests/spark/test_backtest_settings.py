"""The history job's settings: the bucket width (``VOLUME_QUOTA_HISTORY_BUCKET``), and every
option read from flags, then ``VOLUME_QUOTA_*``, then the ``--config`` file."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spark_history.analysis_settings import ForecastSettings, ReportSettings
from spark_history.commands import add_history_actions
from spark_history.history_settings import DEFAULT_BUCKET_SECONDS, HistorySettings, load_history
from spark_history.settings_flags import load_options
from spark_history.source_settings import IngestSettings
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


def _parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_history_actions(parser.add_subparsers(), default_master=None)
    return parser.parse_args(argv)


FORECAST = ["forecast", "--input", "in", "--output", "f.csv"]


@pytest.fixture
def no_history_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("VOLUME_QUOTA_")]:
        monkeypatch.delenv(name)


@pytest.mark.usefixtures("no_history_environment")
def test_every_history_option_has_its_default_without_flags() -> None:
    settings = load_options(ForecastSettings, _parsed(FORECAST))
    assert (settings.horizon_days, settings.lookback_days, settings.retired_after_hours) == (
        60.0,
        7.0,
        24.0,
    )
    assert settings.at is None
    report = load_options(ReportSettings, _parsed(["report", "--input", "in", "--output-dir", "d"]))
    assert (report.replay_days, report.stale_after_minutes, report.on_missing) == (
        30.0,
        30.0,
        "PAUSE",
    )
    assert (report.max_plotted, report.growth_weeks, report.max_clock_skew_seconds) == (12, 4, 60.0)
    assert report.soft_grid is None
    assert report.hard_grid is None


@pytest.mark.usefixtures("no_history_environment")
def test_the_environment_sets_a_history_option_and_a_flag_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HORIZON_DAYS", "30")
    monkeypatch.setenv("VOLUME_QUOTA_AT", "2026-11-22T12:00:00+01:00")
    settings = load_options(ForecastSettings, _parsed(FORECAST))
    assert settings.horizon_days == 30.0
    assert settings.at == datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
    flagged = load_options(ForecastSettings, _parsed([*FORECAST, "--horizon-days", "2.5"]))
    assert flagged.horizon_days == 2.5


@pytest.mark.usefixtures("no_history_environment")
def test_the_config_file_sets_history_options_under_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "volume-quota.toml"
    config.write_text(
        'soft_grid = [10, 20]\nmin_warning_hours = 3\nkafka_option = ["maxOffsetsPerTrigger=5"]\n'
        'bootstrap_servers = "b1:9093,b2:9093"\ntls_keystore_password = "secret"\n'
        'log_dirs = ["/var/lib/kafka"]\n'  # another command's setting: one file serves all
    )
    report = ["report", "--input", "in", "--output-dir", "d", "--config", str(config)]
    settings = load_options(ReportSettings, _parsed(report))
    assert settings.soft_grid == [10.0, 20.0]
    assert settings.min_warning_hours == 3.0
    monkeypatch.setenv("VOLUME_QUOTA_CONFIG", str(config))
    monkeypatch.setenv("VOLUME_QUOTA_MIN_WARNING_HOURS", "4")
    settings = load_options(
        ReportSettings, _parsed(["report", "--input", "in", "--output-dir", "d"])
    )
    assert settings.min_warning_hours == 4.0
    ingest = ["ingest", "--source", "kafka", "--checkpoint", "c", "--output", "o"]
    kafka = load_options(IngestSettings, _parsed([*ingest, "--kafka-option", "a=1"]))
    assert kafka.kafka_option == [("a", "1")]
    assert kafka.bootstrap_servers == "b1:9093,b2:9093"
    assert kafka.tls_keystore_password is not None
    assert kafka.tls_keystore_password.get_secret_value() == "secret"
    monkeypatch.delenv("VOLUME_QUOTA_CONFIG")
    assert load_options(IngestSettings, _parsed(ingest)).kafka_option == []


@pytest.mark.parametrize(
    "flag", ["--tls-key-password", "--tls-keystore-password", "--tls-truststore-password"]
)
def test_no_password_is_a_flag(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    ingest = ["ingest", "--source", "kafka", "--checkpoint", "c", "--output", "o"]
    with pytest.raises(SystemExit):
        _parsed([*ingest, flag, "secret"])
    assert f"unrecognized arguments: {flag} secret" in capsys.readouterr().err
