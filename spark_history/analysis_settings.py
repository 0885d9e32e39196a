"""Settings of ``history forecast`` and ``history report``, one model per concern: the analysis
(as of when, how far back, how far ahead), the replay that tunes the limits, the report's
panels, and the usage dataset. Defaults are written here once; ``commands.py`` makes the flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from spark_history.history_settings import (
    HistoryConcern,
    HistorySettings,
    Instant,
    Percentages,
    PositiveNumber,
)
from volume_quota.config.concerns import help_text
from volume_quota.config.credentials import raise_problems
from volume_quota.config.trust import OverrideTrustSettings


def _upper(value: Any) -> Any:
    """PAUSE or pause, as the decider's on_missing takes it."""
    return value.strip().upper() if isinstance(value, str) else value


class AnalysisSettings(HistorySettings):
    """What every analysis of the history reads: the time, the horizon, the lookback."""

    at: Instant | None = Field(
        None,
        **help_text(
            "evaluate as of this ISO 8601 time with an offset, e.g. 2026-11-22T12:00:00Z "
            "(default: the end of the last whole --history-bucket, e.g. the last whole hour)",
            "TIME",
        ),
    )
    horizon_days: PositiveNumber = Field(
        60.0, **help_text("no fill time is given past this horizon", "DAYS")
    )
    lookback_days: PositiveNumber = Field(7.0, **help_text("history used by the forecast", "DAYS"))
    retired_after_hours: PositiveNumber = Field(
        24.0,
        **help_text(
            "a volume without a snapshot for longer than this before --at is flagged retired "
            "and not forecast",
            "HOURS",
        ),
    )
    calibration_volumes: int = Field(
        2000,
        ge=1,
        **help_text(
            "at most N volumes, a fixed sample by a hash of their name, calibrate the "
            "forecast's bands with their backtests (a larger fleet costs no more)",
            "N",
        ),
    )


class ReplaySettings(HistoryConcern):
    """The replay of the decision rule over the history that scores candidate limits."""

    soft_grid: Percentages = Field(
        None,
        **help_text(
            "candidate soft limits, MinFreePercentage (default: 5,7.5,10,12.5,15,20,25,30)",
            "P,P,...",
        ),
    )
    hard_grid: Percentages = Field(
        None,
        **help_text("candidate hard limits, MinFreePercentage (default: 2,3,5,7.5,10)", "P,P,..."),
    )
    min_warning_hours: PositiveNumber = Field(
        6.0, **help_text("warning wanted between the soft and the hard limit", "HOURS")
    )
    replay_days: PositiveNumber = Field(
        30.0, **help_text("history replayed for the limits", "DAYS")
    )
    stale_after_minutes: PositiveNumber = Field(
        30.0,
        **help_text(
            "in the replay, a live broker whose newest snapshot is older is unknown (the "
            "history is sampled more coarsely than the topic)",
            "MINUTES",
        ),
    )
    on_missing: Annotated[Literal["PAUSE", "OPEN"], BeforeValidator(_upper)] = Field(
        "PAUSE",
        **help_text("the consumer's action for unknown live brokers, in the replay", "PAUSE|OPEN"),
    )


class PanelSettings(HistoryConcern):
    """The report's panels that are neither the forecast's nor the replay's."""

    max_plotted: int = Field(12, ge=1, **help_text("plot the N volumes closest to full", "N"))
    growth_weeks: int = Field(
        4, ge=1, **help_text("weeks of growth per broker in the report (reads N+1 weeks)", "N")
    )
    max_clock_skew_seconds: PositiveNumber = Field(
        60.0,
        **help_text(
            "flag a broker whose median snapshotAt is further than this from the Kafka record "
            "timestamp of its messages",
            "SECONDS",
        ),
    )


class UsageDatasetSettings(HistoryConcern):
    """The topic usage dataset ``history ingest --usage-output`` writes."""

    usage_dataset: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "the usage dataset written by 'history ingest --usage-output': forecast (or, in "
            "backtest, score) each volume with topic usage from its topics' write rates and "
            "retention (the mechanism; the trend elsewhere); report: also show the topics "
            "that grew the fleet",
            "URI",
        ),
    )


class MechanismSettings(HistoryConcern):
    """The mechanism forecast of ``history forecast``: the usage dataset's forecast, a CSV."""

    mechanism_output: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "also write the mechanism forecast's own table, one row per volume with usage in "
            "the lookback window, both fill times (hard limit, capacity) (needs "
            "--usage-dataset)",
            "URI",
        ),
    )


class OverrideDatasetSettings(OverrideTrustSettings, HistoryConcern):
    """The override dataset ``history ingest --override-output`` writes, judged with the
    decider's own settings (``override_signatures``, ``override_signers``,
    ``override_max_clock_skew``, ``signature_ca_file``)."""

    override_dataset: str | None = Field(
        None,
        min_length=1,
        **help_text(
            "the override dataset written by 'history ingest --override-output': in the limit "
            "replay, an operator's override decides the hours it was in force, as in the "
            "decider (default: no override is known)",
            "URI",
        ),
    )
    signature_ca_file: Path | None = Field(
        None,
        **help_text(
            "PEM CA bundle that issued the operators' certificates, which override signatures "
            "are checked against (required with override_signatures=require; with warn and "
            "none given, every override counts as unverified)",
            "FILE",
        ),
    )


class ForecastSettings(AnalysisSettings, UsageDatasetSettings, MechanismSettings):
    """``history forecast``."""

    @model_validator(mode="after")
    def _mechanism_needs_usage(self) -> ForecastSettings:
        if self.mechanism_output is not None and self.usage_dataset is None:
            raise_problems(
                type(self).__name__,
                [("usage_dataset", "--mechanism-output needs --usage-dataset")],
            )
        return self


class ReportSettings(
    AnalysisSettings,
    ReplaySettings,
    PanelSettings,
    UsageDatasetSettings,
    OverrideDatasetSettings,
):
    """``history report``."""
