"""Settings of the history job: flags, then ``VOLUME_QUOTA_*``, then ``--config``, validated once.

The value types every history concern shares (positive numbers, an instant with an offset) and
the bucket width live here; the concerns are in ``analysis_settings`` (forecast, report),
``source_settings`` (ingest, compact) and ``backtest_settings``.

``history_bucket``: the width of the buckets the history is cut into before forecasting
(the maximum of each bucket is the envelope the forecast fits). One hour by default; a
shorter bucket scores a cluster run in compressed time the same way (a minute standing for an
hour: every duration of the forecast and the backtest counts buckets as hours).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from volume_quota.config.concerns import Seconds, help_text
from volume_quota.config.sources import ENV_PREFIX, SettingsBase, load

DEFAULT_BUCKET_SECONDS = 3600.0

_EXAMPLE_TIME = "example: 2026-11-22T12:00:00Z"


def _instant(value: Any) -> Any:
    """An ISO 8601 text as a datetime (a TOML datetime passes as is)."""
    if not isinstance(value, str):
        return value
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time ({_EXAMPLE_TIME})") from None


def _with_offset(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment.isoformat()!r} has no offset: add Z or +hh:mm ({_EXAMPLE_TIME})")
    return moment


def _whole(value: float) -> float:
    if not float(value).is_integer():
        raise ValueError(f"{value:g} is not a whole number")
    return value


def _number_list(value: Any) -> Any:
    """'5,7.5,10' (a flag, the environment) as a list; a TOML array passes as is."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _not_empty(values: list[float] | None) -> list[float] | None:
    if values is not None and not values:
        raise ValueError("the list is empty")
    return values


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    return value


PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""A finite number above zero (days, hours, minutes, seconds)."""
WholeNumber = Annotated[float, Field(gt=0, allow_inf_nan=False), AfterValidator(_whole)]
"""A whole number above zero, written as a number (6, 24; not 1.5)."""
Instant = Annotated[datetime, BeforeValidator(_instant), AfterValidator(_with_offset)]
"""An ISO 8601 time that carries an offset (Z or +hh:mm)."""
Percentages = Annotated[
    list[Annotated[float, Field(ge=0, le=100), AfterValidator(_finite)]] | None,
    NoDecode,
    BeforeValidator(_number_list),
    AfterValidator(_not_empty),
]
"""Comma-separated percentages, each 0 to 100 (None: not given)."""
WholeNumbers = Annotated[
    list[WholeNumber],
    NoDecode,
    BeforeValidator(_number_list),
    AfterValidator(_not_empty),
]
"""Comma-separated whole numbers above zero."""


class HistoryConcern(SettingsBase):
    """A concern of the history job (flags, then ``VOLUME_QUOTA_*``, then ``--config``, then
    defaults)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)


class HistorySettings(HistoryConcern):
    """The width of the buckets every forecast cuts the history into."""

    history_bucket: Seconds = Field(
        DEFAULT_BUCKET_SECONDS,
        ge=1.0,
        le=86400.0,
        **help_text(
            "cut the history into buckets this wide before forecasting; every duration of "
            "the forecast counts buckets as hours (1s to 1d, whole seconds)",
            "DURATION",
        ),
    )

    @field_validator("history_bucket")
    @classmethod
    def _whole_seconds(cls, value: float) -> float:
        if not float(value).is_integer():
            raise ValueError(f"must be a whole number of seconds, not {value:g}")
        return value


def load_history(**flags: Any) -> HistorySettings:
    """The settings from ``flags`` given (None: not given) and the environment; a bad value
    raises ``UsageError``, one line naming the setting."""
    return load(HistorySettings, flags)
