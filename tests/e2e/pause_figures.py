"""Per-producer figures of one PAUSE, from the producers' per-second ack reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.e2e.pause_bound import Window

BASELINE_S = 20.0  # the producer's own rate before the PAUSE, over this many seconds
RECOVERY_WINDOW_S = 5.0
RECOVERED = 0.9
JUDGED_AFTER_OPEN_S = 30.0


@dataclass(frozen=True)
class ProducerFigures:
    client: str
    principal: str
    connections: int
    producer: int
    baseline_bytes_per_s: float
    longest_stall_s: float
    recovery_s: float | None  # None: not back to 90 % while measured
    acked: int
    failed: int
    sent: int
    max_latency_s: float
    max_blocked_s: float
    longest_throttle_s: float  # the longest throttle_time_ms the broker returned it
    finished: bool  # the producer closed and reported every record it sent
    error: str

    def row(self) -> str:
        recovery = "never" if self.recovery_s is None else f"{self.recovery_s:.1f}"
        return (
            f"| {self.client} | {self.connections} | {self.principal}-{self.producer} | "
            f"{self.baseline_bytes_per_s / 1024:.0f} | {self.longest_stall_s:.1f} | {recovery} | "
            f"{self.max_latency_s:.1f} | {self.max_blocked_s:.1f} | "
            f"{self.longest_throttle_s:.1f} | {self.acked} | {self.failed} |"
        )


ROW_HEADER = (
    "| client | N | producer | rate before PAUSE (KiB/s) | longest stall (s) | "
    "back to 90 % after OPEN (s) | oldest record at ack (s) | longest blocked send (s) | "
    "longest throttle from the broker (s) | records acked | records failed |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def rate(windows: Sequence[Window], start_ms: float, end_ms: float) -> float:
    """Bytes per second acked in windows ending within (start, end]."""
    total = sum(w.bytes for w in windows if start_ms < w.t <= end_ms)
    return total / max(1e-9, (end_ms - start_ms) / 1000)


def peak_rate(
    producers: Sequence[Sequence[Window]], start_ms: float, end_ms: float, span_s: int = 10
) -> float:
    """The highest rate (bytes/s) the ``producers`` together had acked over any ``span_s``
    consecutive reporting seconds ending within (start, end]; 0 when the span does not fit."""
    per_second: dict[int, int] = {}
    for windows in producers:
        for window in windows:
            if start_ms < window.t <= end_ms:
                per_second[window.t // 1000] = per_second.get(window.t // 1000, 0) + window.bytes
    first, last = int(start_ms // 1000) + 1, int(end_ms // 1000)
    totals = [per_second.get(second, 0) for second in range(first, last + 1)]
    sums = [sum(totals[i : i + span_s]) for i in range(len(totals) - span_s + 1)]
    return max(sums, default=0) / span_s


def longest_stall_s(windows: Sequence[Window], start_ms: float, end_ms: float) -> float:
    """The longest time without an ack that overlaps [start, end], ending at ``end`` at the
    latest; measured between the last ack of one second and the first of the next with any."""
    previous: float | None = None
    longest = 0.0
    for window in windows:
        if window.acks == 0:
            continue
        if previous is not None and window.first_ack > start_ms and previous < end_ms:
            longest = max(longest, min(window.first_ack, end_ms) - max(previous, 0.0))
        previous = window.last_ack
        if previous > end_ms:
            break
    if previous is None:
        return (end_ms - start_ms) / 1000
    if previous < end_ms:
        longest = max(longest, end_ms - previous)
    return longest / 1000


def recovery_s(
    windows: Sequence[Window], open_ms: float, baseline: float, until_ms: float
) -> float | None:
    """Seconds from OPEN until the rate over the last 5 s is >= 90 % of ``baseline``."""
    span = RECOVERY_WINDOW_S * 1000
    for window in windows:
        if window.t < open_ms or window.t > until_ms:
            continue
        if rate(windows, window.t - span, window.t) >= RECOVERED * baseline:
            return (window.t - open_ms) / 1000
    return None


def producer_figures(
    client: str,
    principal: str,
    per_producer: dict[int, list[Window]],
    paused_at: float,
    opened_at: float,
) -> list[ProducerFigures]:
    pause_ms, open_ms = paused_at * 1000, opened_at * 1000
    judged_until = open_ms + JUDGED_AFTER_OPEN_S * 1000
    figures = []
    for producer, windows in sorted(per_producer.items()):
        baseline = rate(windows, pause_ms - BASELINE_S * 1000, pause_ms)
        figures.append(
            ProducerFigures(
                client=client,
                principal=principal,
                connections=len(per_producer),
                producer=producer,
                baseline_bytes_per_s=baseline,
                longest_stall_s=longest_stall_s(windows, pause_ms, judged_until),
                recovery_s=recovery_s(windows, open_ms, baseline, judged_until + 30_000),
                acked=sum(w.acks for w in windows),
                failed=sum(w.failed for w in windows),
                sent=sum(w.sent for w in windows),
                max_latency_s=max((w.max_latency_ms for w in windows), default=0) / 1000,
                max_blocked_s=max((w.max_blocked_ms for w in windows), default=0) / 1000,
                longest_throttle_s=max(
                    (w.throttle_max_ms for w in windows if w.t >= pause_ms), default=0
                )
                / 1000,
                finished=any(w.final for w in windows),
                error=next((w.error for w in windows if w.error), ""),
            )
        )
    return figures


def paused_principal_rate(
    per_producer: dict[int, list[Window]], paused_at: float, opened_at: float
) -> float:
    """The principal's acked bytes/s over the second half of the PAUSE."""
    start, end = (paused_at + opened_at) / 2 * 1000, opened_at * 1000
    return sum(rate(windows, start, end) for windows in per_producer.values())


def principal_recovery_s(
    per_producer: dict[int, list[Window]], paused_at: float, opened_at: float
) -> float | None:
    """Seconds from OPEN until the principal's total rate over 5 s is >= 90 % of its total
    over the 20 s before the PAUSE (the issue's "back to 90 %", summed over its connections)."""
    pause_ms, open_ms = paused_at * 1000, opened_at * 1000
    merged = sorted(
        (window for windows in per_producer.values() for window in windows),
        key=lambda window: window.t,
    )
    baseline = rate(merged, pause_ms - BASELINE_S * 1000, pause_ms)
    return recovery_s(merged, open_ms, baseline, open_ms + (JUDGED_AFTER_OPEN_S + 30) * 1000)
