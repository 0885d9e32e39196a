"""Structured logs: one JSON object per line on stderr, for the publisher and consumer daemons.

``configure_logging`` sets up structlog and routes the standard ``logging`` module (and through it
librdkafka, when a client is created from ``with_client_logger(config)``) to the same
JSON lines, so every line a daemon writes can be parsed the same way.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, FilteringBoundLogger

from publisher.repeat_suppression import RepeatSuppressor

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

_LOGGER_NAME_KEY = "logger_name"
"""structlog's ``get_logger(logger=...)`` is taken; renamed to ``logger`` when rendered."""


def _rename_logger_name(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    if _LOGGER_NAME_KEY in event_dict:
        event_dict["logger"] = event_dict.pop(_LOGGER_NAME_KEY)
    return event_dict


def with_client_logger(config: Mapping[str, Any]) -> dict[str, Any]:
    """A librdkafka client configuration whose log lines go through ``logging`` (JSON lines,
    repeats suppressed) instead of librdkafka's own stderr output."""
    return {**config, "logger": logging.getLogger(LIBRDKAFKA_LOGGER)}


_SHARED_PROCESSORS: list[Any] = [
    structlog.contextvars.merge_contextvars,
    _rename_logger_name,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
]


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """JSON lines at ``level`` and above to ``stream`` (stderr by default). Idempotent."""
    numeric_level = LEVELS.get(level.lower())
    if numeric_level is None:
        raise ValueError(f"unknown log level {level!r}")
    output = stream if stream is not None else sys.stderr
    structlog.configure(
        processors=[
            *_SHARED_PROCESSORS,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.PrintLoggerFactory(file=output),
        cache_logger_on_first_use=False,
    )
    handler = _JsonLinesHandler(output)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ],
            foreign_pre_chain=[
                *_SHARED_PROCESSORS,
                structlog.stdlib.add_logger_name,
                structlog.processors.format_exc_info,
            ],
        )
    )
    librdkafka = logging.getLogger(LIBRDKAFKA_LOGGER)
    for existing_filter in list(librdkafka.filters):
        if isinstance(existing_filter, RepeatFilter):
            librdkafka.removeFilter(existing_filter)
    librdkafka.addFilter(RepeatFilter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, _JsonLinesHandler):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(numeric_level)


def reset_logging() -> None:
    """Undo :func:`configure_logging`: structlog's defaults, no handler of ours on the root
    logger. For whoever configured logging onto a stream that is about to close (a test's
    captured output, an embedding application's)."""
    structlog.reset_defaults()
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, _JsonLinesHandler):
            root.removeHandler(existing)


class _JsonLinesHandler(logging.StreamHandler[TextIO]):
    """The handler ``configure_logging`` installs (and replaces when called again)."""


def get_logger(name: str) -> FilteringBoundLogger:
    """A structlog logger tagged with ``logger=name``."""
    # Lazy: the logger follows ``configure_logging`` even when created at import time.
    logger: FilteringBoundLogger = structlog.get_logger(**{_LOGGER_NAME_KEY: name})
    return logger


LIBRDKAFKA_LOGGER = "librdkafka"


class RepeatFilter(logging.Filter):
    """Lets the first of each kind of librdkafka log line through per minute, counting the rest.

    A client reconnecting to an unreachable broker logs ``FAIL`` lines several times a second;
    the kind is the first word (librdkafka's facility).
    """

    def __init__(self, window_seconds: float = 60.0) -> None:
        super().__init__()
        self._suppressor = RepeatSuppressor(window_seconds)
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        kind = f"{record.levelno}:{message.split(' ', 1)[0]}"
        with self._lock:
            suppressed = self._suppressor.admit(kind, time.monotonic())
        if suppressed is None:
            return False
        if suppressed:
            record.msg = f"{message} ({suppressed} similar lines not logged)"
            record.args = None
        return True
