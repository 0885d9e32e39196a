from __future__ import annotations

import io
import json
import logging

from hypothesis import given
from hypothesis import strategies as st

from publisher.repeat_suppression import RepeatSuppressor
from volume_quota.logging_setup import LIBRDKAFKA_LOGGER, RepeatFilter, configure_logging


def test_first_report_logs_then_repeats_are_counted() -> None:
    suppressor = RepeatSuppressor(window_seconds=60)
    assert suppressor.admit("_TRANSPORT", 0.0) == 0
    assert suppressor.admit("_TRANSPORT", 1.0) is None
    assert suppressor.admit("_TRANSPORT", 59.9) is None
    assert suppressor.admit("_ALL_BROKERS_DOWN", 2.0) == 0
    assert suppressor.admit("_TRANSPORT", 60.0) == 2
    assert suppressor.admit("_TRANSPORT", 61.0) is None


@given(st.lists(st.floats(min_value=0, max_value=1000), min_size=1, max_size=100))
def test_every_report_is_either_logged_or_counted(offsets: list[float]) -> None:
    suppressor = RepeatSuppressor(window_seconds=10)
    logged = 0
    counted = 0
    for now in sorted(offsets):
        result = suppressor.admit("k", now)
        if result is not None:
            logged += 1
            counted += result
    final = suppressor.admit("k", 10_000.0)
    assert final is not None
    assert logged + counted + final == len(offsets)


def test_librdkafka_floods_are_thinned() -> None:
    output = io.StringIO()
    configure_logging("info", output)
    librdkafka = logging.getLogger(LIBRDKAFKA_LOGGER)
    assert sum(isinstance(f, RepeatFilter) for f in librdkafka.filters) == 1
    for attempt in range(50):
        librdkafka.error("FAIL [producer-1] connect to %s failed (attempt %d)", "b:1", attempt)
    librdkafka.warning("SSL handshake failed")
    events = [json.loads(line) for line in output.getvalue().splitlines()]
    assert [event["event"] for event in events] == [
        "FAIL [producer-1] connect to b:1 failed (attempt 0)",
        "SSL handshake failed",
    ]
    configure_logging("info", output)
    assert sum(isinstance(f, RepeatFilter) for f in librdkafka.filters) == 1
