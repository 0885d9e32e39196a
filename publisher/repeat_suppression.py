"""Keeping a repeated warning from flooding the log (pure: the time is passed in).

A reconnecting Kafka client reports the same error several times a second. The first report of
each kind is logged; repeats within ``window_seconds`` are only counted, and the next logged
report says how many were suppressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class RepeatSuppressor:
    window_seconds: float = 60.0
    _last_logged: dict[str, float] = field(default_factory=dict)
    _suppressed: dict[str, int] = field(default_factory=dict)

    def admit(self, key: str, now: float) -> int | None:
        """None to stay quiet; otherwise log now, mentioning the returned count of repeats
        suppressed since the last logged one."""
        last = self._last_logged.get(key)
        if last is not None and now - last < self.window_seconds:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._last_logged[key] = now
        return self._suppressed.pop(key, 0)
