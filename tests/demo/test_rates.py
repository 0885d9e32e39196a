"""Delivered-rate windows and the sparkline (pure)."""

from __future__ import annotations

from volume_quota.demo.rates import RateMeter, human_rate, sparkline


def test_the_rate_counts_only_deliveries_inside_the_window() -> None:
    meter = RateMeter()
    for second in range(20):
        meter.record(100.0 + second, 1024)
    assert meter.rate(now=119.0, window_s=8) == 8 * 1024 / 8
    assert meter.rate(now=130.0, window_s=8) == 0
    assert meter.total_bytes == 20 * 1024


def test_old_deliveries_are_forgotten() -> None:
    meter = RateMeter(keep_s=10)
    meter.record(0.0, 1)
    meter.record(100.0, 1)
    assert meter.rate(now=100.0, window_s=200) == 1 / 200


def test_sparkline_scales_to_the_top_and_keeps_the_last_values() -> None:
    assert sparkline([0, 50, 100], top=100) == " ▄█"
    assert sparkline([300.0], top=100) == "█"
    assert len(sparkline([1.0] * 100, top=1, width=10)) == 10
    assert sparkline([1.0], top=0) == " "


def test_human_rate() -> None:
    assert human_rate(1024 * 1024) == "1.00 MiB/s"
    assert human_rate(128 * 1024) == "128 KiB/s"
