"""Delivered bytes per producer, measured over sliding windows (pure apart from the clock)."""

from __future__ import annotations

import threading
from collections import deque

RATE_WINDOW_S = 8.0
"""Every rate the demo shows or judges is measured over this window (>= 8 s: the broker's
quota is enforced over an 11 s window, so shorter windows see its bursts and throttles)."""

_BLOCKS = " ▁▂▃▄▅▆▇█"


class RateMeter:
    """Records deliveries (time, bytes) and answers the rate over a trailing window."""

    def __init__(self, keep_s: float = 60.0) -> None:
        self._keep_s = keep_s
        self._deliveries: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()
        self.total_bytes = 0

    def record(self, at: float, size: int) -> None:
        with self._lock:
            self._deliveries.append((at, size))
            self.total_bytes += size
            while self._deliveries and self._deliveries[0][0] < at - self._keep_s:
                self._deliveries.popleft()

    def rate(self, now: float, window_s: float = RATE_WINDOW_S) -> float:
        """Bytes per second delivered in ``(now - window_s, now]``."""
        since = now - window_s
        with self._lock:
            delivered = sum(size for at, size in self._deliveries if since < at <= now)
        return delivered / window_s


def sparkline(values: list[float], top: float, width: int = 24) -> str:
    """The last ``width`` values as block characters, full height at ``top``."""
    shown = values[-width:]
    if top <= 0:
        return " " * len(shown)
    steps = len(_BLOCKS) - 1
    return "".join(_BLOCKS[max(0, min(steps, round(value / top * steps)))] for value in shown)


def human_rate(bytes_per_second: float) -> str:
    """1.5 MiB/s, 128 KiB/s: the units the callback's documentation uses."""
    if bytes_per_second >= 1024 * 1024:
        return f"{bytes_per_second / (1024 * 1024):.2f} MiB/s"
    return f"{bytes_per_second / 1024:.0f} KiB/s"
