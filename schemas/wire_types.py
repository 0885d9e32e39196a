"""Building blocks shared by every wire format: the model base and the timestamp type."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, PlainSerializer


def format_instant(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``: the one timestamp style we write."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Instant = Annotated[AwareDatetime, PlainSerializer(format_instant, return_type=str)]
"""An ISO 8601 timestamp that must carry an offset (a naive time is ambiguous across hosts)."""


class WireModel(BaseModel):
    """Immutable, forward compatible (unknown fields ignored), no NaN or Infinity accepted."""

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        allow_inf_nan=False,
        populate_by_name=True,
    )
