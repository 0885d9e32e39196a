"""Starting Spark for the history jobs, and telling the user how far a long job has got.

Local mode (``local[*]``) by default so that an operator can run the analyses on a laptop; any
master and any Spark setting pass through (``--master``, ``--conf key=value``). Under
spark-submit the session already carries its master, so none is forced.

Why our own progress lines: Spark's console progress bar redraws one terminal line, which is
garbage in logs and CI. A daemon thread polls the status tracker instead and prints one line
per stage change to stderr; every step also reports its wall time.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "volume-quota-history"

SESSION_DEFAULTS: Mapping[str, str] = {
    # Dates (the dataset's partitions) and hour buckets are UTC whatever the host's zone.
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The analyses shuffle one row per volume-hour: a few partitions per core is plenty.
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "4g",
}


@dataclass(frozen=True, slots=True)
class SessionSettings:
    master: str | None = DEFAULT_MASTER
    conf: Mapping[str, str] = field(default_factory=dict)
    jars: Sequence[Path] = ()


_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log_config() -> Path:
    """A log4j2 file that keeps Spark's JVM to errors only (our own lines say what happens)."""
    path = Path(tempfile.gettempdir()) / f"volume-quota-history-log4j2-{os.getuid()}.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J:
        path.write_text(_QUIET_LOG4J)
    return path


def build_session(settings: SessionSettings) -> SparkSession:
    """A SparkSession with our defaults, overridden by ``settings.conf``."""
    builder = SparkSession.builder.appName(APP_NAME)
    merged = {**SESSION_DEFAULTS, **settings.conf}
    if settings.master:
        builder = builder.master(settings.master)
        if settings.master.startswith("local"):
            # Local mode talks to itself only: keep the driver on the loopback interface.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            merged.setdefault(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile=file:{_quiet_log_config()}",
            )
    if settings.jars:
        extra = [str(path) for path in settings.jars]
        existing = merged.get("spark.jars")
        merged["spark.jars"] = ",".join([*([existing] if existing else []), *extra])
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class StageProgress:
    """Prints active stage progress to ``stream`` every ``interval`` seconds while running."""

    def __init__(
        self, session: SparkSession, stream: TextIO = sys.stderr, interval: float = 5.0
    ) -> None:
        self._tracker = session.sparkContext.statusTracker()
        self._stream = stream
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stage-progress", daemon=True)
        self._last = ""

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 1)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                line = self._describe()
            except Exception:
                return
            if line and line != self._last:
                print(f"[history] {line}", file=self._stream, flush=True)
                self._last = line

    def _describe(self) -> str:
        parts = []
        for stage_id in sorted(self._tracker.getActiveStageIds()):
            info = self._tracker.getStageInfo(stage_id)
            if info is None:
                continue
            parts.append(
                f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks"
                + (f" ({info.numActiveTasks} running)" if info.numActiveTasks else "")
            )
        return "; ".join(parts)


@contextmanager
def step(name: str, stream: TextIO = sys.stderr) -> Iterator[None]:
    """Report the wall time of one step of a job on ``stream``."""
    started = time.monotonic()
    print(f"[history] {name} ...", file=stream, flush=True)
    yield
    print(f"[history] {name}: {time.monotonic() - started:.1f} s", file=stream, flush=True)
