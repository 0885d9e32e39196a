"""Settings of ``history backtest``: where the origins fall, how far the forecasters look
ahead, which horizons are scored. ``backtest_command.py`` makes the flags and reads them."""

from __future__ import annotations

from pydantic import Field, model_validator

from spark_history.analysis_settings import UsageDatasetSettings
from spark_history.history_settings import (
    HistorySettings,
    Instant,
    PositiveNumber,
    WholeNumber,
    WholeNumbers,
)
from volume_quota.config.concerns import help_text
from volume_quota.config.credentials import raise_problems
from volume_quota.config.sources import describe_setting

DEFAULT_HORIZONS = "6,24,72,168"


class BacktestSettings(HistorySettings, UsageDatasetSettings):
    """``history backtest`` (every duration counts buckets as hours)."""

    at: Instant | None = Field(
        None,
        **help_text("score the history up to this ISO 8601 time only (default: all of it)", "TIME"),
    )
    origin_step: WholeNumber = Field(6.0, **help_text("hours between origins", "HOURS"))
    warmup: WholeNumber = Field(
        24.0, **help_text("history a volume needs before its first origin", "HOURS")
    )
    horizon_days: PositiveNumber = Field(
        7.0,
        **help_text(
            "the forecasters predict crossings within this horizon (a whole number of hours)",
            "DAYS",
        ),
    )
    horizons: WholeNumbers = Field(
        DEFAULT_HORIZONS,  # parsed like the flag, so --help shows it as written
        **help_text("the horizons scored, in hours, each within --horizon-days", "H,H,..."),
    )

    @property
    def horizon_hours(self) -> float:
        return self.horizon_days * 24.0

    @model_validator(mode="after")
    def _horizons_within_the_horizon(self) -> BacktestSettings:
        problems: list[tuple[str, str]] = []
        if not self.horizon_hours.is_integer():
            problems.append(("horizon_days", f"{self.horizon_hours:g} h is not whole hours"))
        problems += [
            (
                "horizons",
                f"{hours:g} h is not within {describe_setting('horizon_days')} "
                f"({self.horizon_hours:g} h)",
            )
            for hours in self.horizons
            if hours > self.horizon_hours
        ]
        raise_problems(type(self).__name__, problems)
        return self

    def scored_horizons(self) -> tuple[float, ...]:
        return tuple(sorted(set(self.horizons)))
