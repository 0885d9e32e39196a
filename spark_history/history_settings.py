"""Settings of the history job read from the environment (``VOLUME_QUOTA_*``), validated once.

``history_bucket``: the width of the buckets the history is cut into before forecasting
(the maximum of each bucket is the envelope the forecast fits). One hour by default; a
shorter bucket scores a cluster run in compressed time the same way (a minute standing for an
hour: every duration of the forecast and the backtest counts buckets as hours).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from volume_quota.config.concerns import Seconds, help_text
from volume_quota.config.sources import ENV_PREFIX, SettingsBase, load

DEFAULT_BUCKET_SECONDS = 3600.0


class HistorySettings(SettingsBase):
    """The history job's own settings (flags, then ``VOLUME_QUOTA_*``, then defaults)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

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
