"""How fast each topic grows on each volume: a bounded history of the sidecar's own surveys (pure).

Every survey adds, per volume and topic it names, one sample (when, bytes). The history keeps
them in two tiers, each thinned to one sample per bucket (the first that fell in it):

- the last ``FINE_WINDOW_SECONDS`` (15 min), in buckets of ``FINE_BUCKET_SECONDS`` (15 s):
  one sample per survey at the default 60 s ``usage_interval``;
- the last ``COARSE_WINDOW_SECONDS`` (24 h), in buckets of ``COARSE_BUCKET_SECONDS`` (15 min).

So a series holds at most about 60 + 96 samples, whatever the survey interval. The growth of a
topic over a window is its bytes now minus its bytes at the oldest sample no older than the
window, stated with the span it covers (``Growth.seconds``): a sidecar that started 5 minutes
ago says "+X bytes in 300 s" for the 15 min window, not a made-up 15 min figure.

The history lives in memory: the sidecar has no state directory, so a restart starts it again
and the next documents show the shorter span. A topic that leaves the survey (deleted, or no
longer among the ``usage_top_topics`` largest of its volume) loses its history, and a volume
that leaves the survey loses all of it: a topic that comes back starts a new span.

Times are the monotonic clock's seconds: a wall clock step must not make growth up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

FINE_WINDOW_SECONDS = 15 * 60.0
FINE_BUCKET_SECONDS = 15.0
COARSE_WINDOW_SECONDS = 24 * 3600.0
COARSE_BUCKET_SECONDS = 15 * 60.0
MAX_SAMPLES_PER_SERIES = (
    int(FINE_WINDOW_SECONDS // FINE_BUCKET_SECONDS)
    + int(COARSE_WINDOW_SECONDS // COARSE_BUCKET_SECONDS)
    + 3
)
"""No series is longer: one sample per bucket of each tier, and the newest."""

SeriesKey = tuple[str, str]
"""(volume name, topic)."""


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    """Monotonic seconds."""
    bytes: int


@dataclass(frozen=True, slots=True)
class Growth:
    """Bytes gained (negative: lost) over the last ``seconds``."""

    bytes: int
    seconds: float


def _bucket(at: float, width: float) -> int:
    return int(at // width)


def thin(samples: Iterable[Sample], now: float) -> tuple[Sample, ...]:
    """The samples worth keeping at ``now``: the newest, and the first of each fine bucket within
    the fine window and of each coarse bucket within the coarse window; oldest first."""
    ordered = sorted(samples, key=lambda sample: sample.at)
    if not ordered:
        return ()
    newest = ordered[-1]
    kept: list[Sample] = []
    fine_seen: set[int] = set()
    coarse_seen: set[int] = set()
    for sample in ordered[:-1]:
        age = now - sample.at
        if age > COARSE_WINDOW_SECONDS:
            continue
        fine = _bucket(sample.at, FINE_BUCKET_SECONDS)
        coarse = _bucket(sample.at, COARSE_BUCKET_SECONDS)
        if age <= FINE_WINDOW_SECONDS and fine not in fine_seen:
            fine_seen.add(fine)
            coarse_seen.add(coarse)
            kept.append(sample)
        elif coarse not in coarse_seen:
            coarse_seen.add(coarse)
            kept.append(sample)
    kept.append(newest)
    return tuple(kept)


def growth_over(series: tuple[Sample, ...], window_seconds: float) -> Growth | None:
    """The growth from the oldest sample no older than ``window_seconds`` (counted from the
    newest) to the newest; None with fewer than two samples in the window."""
    if len(series) < 2:
        return None
    newest = series[-1]
    for sample in series[:-1]:
        if newest.at - sample.at <= window_seconds:
            if sample.at >= newest.at:
                return None
            return Growth(newest.bytes - sample.bytes, newest.at - sample.at)
    return None


@dataclass(frozen=True, slots=True)
class TopicGrowth:
    last_15m: Growth | None
    last_24h: Growth | None


@dataclass(frozen=True, slots=True)
class UsageHistory:
    """Every (volume, topic) series; a new value per survey (``record``)."""

    series: Mapping[SeriesKey, tuple[Sample, ...]]

    @staticmethod
    def empty() -> UsageHistory:
        return UsageHistory({})

    def record(self, now: float, measured: Mapping[SeriesKey, int]) -> UsageHistory:
        """The history after a survey at ``now`` measured ``measured``: series of topics not
        measured are dropped (see the module docstring), a sample older than the newest one of its
        series (a clock that went back) restarts that series."""
        updated: dict[SeriesKey, tuple[Sample, ...]] = {}
        for key, size in measured.items():
            previous = self.series.get(key, ())
            if previous and previous[-1].at > now:
                previous = ()
            updated[key] = thin((*previous, Sample(now, size)), now)
        return UsageHistory(updated)

    def growth(self, key: SeriesKey) -> TopicGrowth:
        series = self.series.get(key, ())
        return TopicGrowth(
            last_15m=growth_over(series, FINE_WINDOW_SECONDS),
            last_24h=growth_over(series, COARSE_WINDOW_SECONDS),
        )
