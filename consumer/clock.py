"""The clocks the daemon reads: wall time for ``snapshotAt``, monotonic time for intervals."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def wall(self) -> datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def wall(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()
