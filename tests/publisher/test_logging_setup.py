from __future__ import annotations

import io
import json
import logging

import pytest

from volume_quota.logging_setup import configure_logging, get_logger


@pytest.fixture
def stream() -> io.StringIO:
    output = io.StringIO()
    configure_logging("info", output)
    return output


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_events_are_json_lines(stream: io.StringIO) -> None:
    get_logger("volume_quota.test").info("snapshot published", broker_id=3)
    get_logger("volume_quota.test").debug("hidden below info")
    (event,) = lines(stream)
    assert event["event"] == "snapshot published"
    assert event["broker_id"] == 3
    assert event["level"] == "info"
    assert event["logger"] == "volume_quota.test"
    assert str(event["timestamp"]).endswith("Z")


def test_stdlib_logging_becomes_json_too(stream: io.StringIO) -> None:
    logging.getLogger("librdkafka").warning("FAIL|rdkafka#producer-1| %s", "Connection refused")
    (event,) = lines(stream)
    assert event["logger"] == "librdkafka"
    assert event["level"] == "warning"
    assert event["event"] == "FAIL|rdkafka#producer-1| Connection refused"


def test_reconfiguring_replaces_the_handler(stream: io.StringIO) -> None:
    second = io.StringIO()
    configure_logging("warning", second)
    logging.getLogger("x").warning("once")
    get_logger("x").info("filtered")
    assert stream.getvalue() == ""
    assert len(second.getvalue().splitlines()) == 1


def test_unknown_level() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("loud")
