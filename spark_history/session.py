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
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
"""Defaults: applied only where neither ``--conf`` nor spark-submit (``--conf``,
``spark-defaults.conf``) set the key."""

LOCAL_DEFAULTS: Mapping[str, str] = {
    # The analyses shuffle one row per volume-hour: a few partitions per core is plenty on a
    # laptop; on a cluster Spark's own default (or the operator's) applies.
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "4g",
}
"""Further defaults for local mode started by the command itself (not under spark-submit)."""

REQUIRED: Mapping[str, str] = {
    # Dates (the dataset's partitions) and hour buckets are UTC whatever the host's zone: the
    # analyses are wrong otherwise, so this one is not a default.
    "spark.sql.session.timeZone": "UTC",
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
    """A SparkSession: ``settings.conf`` wins, then what spark-submit or the cluster's
    ``spark-defaults.conf`` set, then our defaults."""
    from pyspark import SparkConf, SparkContext  # noqa: PLC0415 - keeps the module light

    builder = SparkSession.builder.appName(APP_NAME)
    if under_spark_submit():
        # Connect to spark-submit's JVM now: SparkConf() then holds every --conf it was given
        # (without a JVM it is empty, and nothing was submitted).
        SparkContext._ensure_initialized()
    submitted = SparkConf()
    defaults = dict(SESSION_DEFAULTS)
    local = bool(settings.master and settings.master.startswith("local"))
    if local and not under_spark_submit():
        defaults.update(LOCAL_DEFAULTS)
    merged = {
        **{key: value for key, value in defaults.items() if not submitted.contains(key)},
        **settings.conf,
        **REQUIRED,
    }
    if settings.master:
        builder = builder.master(settings.master)
        if local:
            # Local mode talks to itself only: keep the driver on the loopback interface.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            if not submitted.contains("spark.driver.extraJavaOptions"):
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


def under_spark_submit() -> bool:
    """True when spark-submit started this Python (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def describe_session(session: SparkSession) -> str:
    """The settings that decide where and how the job runs, for the progress log."""
    context = session.sparkContext
    conf = context.getConf()
    keys = ("spark.submit.deployMode", "spark.sql.shuffle.partitions", "spark.executor.memory")
    settings = ", ".join(
        f"{key}={session.conf.get(key, None) or conf.get(key, 'default')}" for key in keys
    )
    return f"spark {context.version} master={context.master} {settings}"


def _spark_history_file(_: object) -> str:
    import spark_history  # noqa: PLC0415 - imported on the executor, which is the point

    return str(spark_history.__file__)


def executor_code_origin(session: SparkSession) -> str:
    """Where an executor imports ``spark_history`` from (the ``--py-files`` zip, or an
    install): one tiny task, run once per job off local mode, so a version mismatch between
    the submitted code and the executors' shows in the log."""
    origin: str = session.sparkContext.parallelize([0], 1).map(_spark_history_file).first()
    return origin


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
