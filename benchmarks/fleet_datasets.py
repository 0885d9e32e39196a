"""Synthetic fleet datasets for the fleet-scale benchmark: the volume history and the topic
usage history, both date-partitioned Parquet as ``history ingest`` writes them.

Volume rows come from ``spark_history.synthetic`` (one row per broker, volume and one-minute
snapshot). Usage rows follow ``spark_history.usage_documents``: per volume and survey (every
``usage_interval``, 60 s by default, a few seconds after the broker's snapshot) one ``topic``
row per topic on the volume (8 to 20, all within the sidecar's default top 20) and one
``other`` row (no topic outside the top N: 0 bytes); the topics' bytes sum to the volume's
allocated bytes (``totalBytes``, 99.5 % of its consumed bytes) minus ``unattributedBytes``
(0.2 %), each topic holding a fixed share of the volume. Every 300 s (the default
``topic_configs_interval``) the lowest broker publishes ``config`` rows: one per topic of the
cluster, with retention configs. Written with pyarrow, one file per chunk of brokers and date,
and listed in a ``_spark_metadata`` log as Spark's file sink lists its files
(:func:`write_sink_log`), so that the hourly rollups can be kept as ``history ingest`` keeps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from benchmarks.history_cluster_throughput import with_limits
from spark_history import sink_log, synthetic
from spark_history.usage_documents import CONFIG, OTHER, TOPIC, USAGE_ROW_COLUMNS

USAGE_INTERVAL_SECONDS = 60.0
CONFIGS_INTERVAL_SECONDS = 300.0
SURVEY_DELAY_SECONDS = 20.0
TOPICS_PER_VOLUME = (8, 20)
TOPICS_PER_BROKER = 3
"""Topics of the cluster per broker (the pool each volume draws its topics from)."""
GIB = 1024**3
DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class FleetShape:
    brokers: int
    volumes_per_broker: int
    days: float
    at: datetime
    seed: int = 5

    @property
    def history(self) -> synthetic.HistoryConfig:
        return synthetic.HistoryConfig(
            at=self.at,
            history_hours=24.0 * self.days,
            missing_fraction=0.0,
            volumes_per_broker=self.volumes_per_broker,
        )

    @property
    def topics(self) -> int:
        return max(TOPICS_PER_VOLUME[1], TOPICS_PER_BROKER * self.brokers)


@dataclass(frozen=True, slots=True)
class Written:
    volume_rows: int
    usage_rows: int
    seconds: float


def _write_dated(table: pd.DataFrame | pa.Table, target: Path, column: str, name: str) -> None:
    """One file per UTC date of ``column`` under ``target/date=YYYY-MM-DD/``."""
    arrow: Any = (
        pa.Table.from_pandas(table, preserve_index=False)
        if isinstance(table, pd.DataFrame)
        else table
    )
    micros = arrow.column(column).combine_chunks().cast(pa.int64()).to_numpy()
    days = micros // 86_400_000_000
    for day in np.unique(days):
        part = arrow.filter(pa.array(days == day))
        date = (np.datetime64(0, "D") + day).astype(str)
        folder = target / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, folder / f"{name}.parquet")


def _lagged(values: np.ndarray, lag: int) -> np.ndarray:
    index = np.maximum(np.arange(values.shape[0]) - lag, 0)
    lagged: np.ndarray = values[index]
    return lagged


def _topic_rows(
    rng: np.random.Generator,
    *,
    broker: int,
    volume: str,
    instants: np.ndarray,
    consumed: np.ndarray,
    pool: int,
) -> dict[str, np.ndarray]:
    """The ``topic`` and ``other`` rows of one volume, survey-major, as column arrays."""
    count = int(rng.integers(TOPICS_PER_VOLUME[0], TOPICS_PER_VOLUME[1] + 1))
    names = np.array([f"topic-{index:05d}" for index in rng.choice(pool, count, replace=False)])
    shares = np.sort(rng.dirichlet(np.full(count, 0.8)))[::-1]
    total = np.rint(consumed * 0.995).astype(np.int64)
    unattributed = np.rint(consumed * 0.002).astype(np.int64)
    attributed = (total - unattributed).astype(np.float64)
    topic_bytes = np.rint(attributed[:, None] * shares[None, :]).astype(np.int64)
    surveys = instants.shape[0]
    seconds = (instants - instants[0]).astype("timedelta64[us]").astype(np.float64) / 1e6
    span15 = seconds - _lagged(seconds, 15)
    span24 = seconds - _lagged(seconds, 1440)
    partitions = rng.integers(1, 13, count).astype(np.int32)
    rows = surveys * (count + 1)
    kind = np.full((surveys, count + 1), TOPIC, dtype=object)
    kind[:, -1] = OTHER
    topic = np.empty((surveys, count + 1), dtype=object)
    topic[:, :count] = names[None, :]
    topic[:, -1] = None
    values = np.zeros((surveys, count + 1), dtype=np.int64)
    values[:, :count] = topic_bytes
    parts = np.zeros((surveys, count + 1), dtype=np.int32)
    parts[:, :count] = partitions[None, :]
    active = np.minimum(values, parts.astype(np.int64) * (256 * 1024**2))
    growth15 = (values - _lagged(values, 15)).astype(np.float64)
    growth24 = (values - _lagged(values, 1440)).astype(np.float64)
    first = (np.arange(surveys) == 0)[:, None] | np.zeros((1, count + 1), dtype=bool)
    growth15[first] = np.nan
    growth24[first] = np.nan
    other_topics = np.zeros((surveys, count + 1), dtype=np.float64)
    other_topics[:, :count] = np.nan
    oldest = np.repeat(instants, count + 1) - np.timedelta64(3, "D")
    oldest_null = (kind == OTHER).ravel()
    return {
        "brokerId": np.full(rows, broker, dtype=np.int32),
        "surveyedAt": np.repeat(instants, count + 1),
        "kind": kind.ravel(),
        "volumeName": np.full(rows, volume, dtype=object),
        "topic": topic.ravel(),
        "bytes": values.ravel(),
        "partitions": parts.ravel(),
        "activeSegmentBytes": active.ravel(),
        "transientBytes": np.zeros(rows, dtype=np.int64),
        "oldestSegmentAt": np.where(oldest_null, np.datetime64("NaT"), oldest),
        "growth15mBytes": growth15.ravel(),
        "growth15mSeconds": np.repeat(np.where(span15 > 0, span15, np.nan), count + 1),
        "growth24hBytes": growth24.ravel(),
        "growth24hSeconds": np.repeat(np.where(span24 > 0, span24, np.nan), count + 1),
        "otherTopics": other_topics.ravel(),
        "totalBytes": np.repeat(total, count + 1),
        "unattributedBytes": np.repeat(unattributed, count + 1),
    }


_ARROW_TYPES: dict[str, Any] = {
    "int": pa.int32(),
    "long": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def usage_arrow_schema() -> Any:
    """The usage dataset's columns without ``date``, typed as ``USAGE_ROW_DDL`` says."""
    from spark_history.usage_documents import USAGE_ROW_DDL  # noqa: PLC0415

    fields = [part.strip().split(" ") for part in USAGE_ROW_DDL.split(",")]
    assert [name for name, _ in fields] == list(USAGE_ROW_COLUMNS[:-1])
    return pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in fields])


def _usage_table(columns: dict[str, np.ndarray], schema: Any) -> Any:
    arrays = []
    rows = len(columns["brokerId"])
    for field in schema:
        values = columns.get(field.name)
        if values is None:
            arrays.append(pa.nulls(rows, field.type))
        elif pa.types.is_integer(field.type) and values.dtype.kind == "f":
            arrays.append(pa.array(values, from_pandas=True).cast(field.type))
        elif pa.types.is_timestamp(field.type):
            stamps = pd.DatetimeIndex(values)
            stamps = stamps.tz_localize("UTC") if stamps.tz is None else stamps
            arrays.append(pa.array(stamps, type=field.type, from_pandas=True))
        else:
            arrays.append(pa.array(values, type=field.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


def _config_columns(rng: np.random.Generator, shape: FleetShape) -> dict[str, np.ndarray]:
    """``config`` rows: every topic of the cluster every ``CONFIGS_INTERVAL_SECONDS``."""
    start = pd.Timestamp(shape.at) - pd.Timedelta(days=shape.days)
    reads = pd.date_range(
        start + pd.Timedelta(seconds=CONFIGS_INTERVAL_SECONDS),
        pd.Timestamp(shape.at),
        freq=pd.Timedelta(seconds=CONFIGS_INTERVAL_SECONDS),
    ).to_numpy()
    topics = shape.topics
    names = np.array([f"topic-{index:05d}" for index in range(topics)], dtype=object)
    retention_ms = rng.choice([DAY_MS, 3 * DAY_MS, 7 * DAY_MS], topics).astype(np.int64)
    compacted = rng.random(topics) < 0.1
    retention_bytes = np.where(rng.random(topics) < 0.2, 50 * GIB, -1).astype(np.int64)
    per_read = {
        "topic": names,
        "cleanupPolicy": np.where(compacted, "compact", "delete").astype(object),
        "retentionMs": np.where(compacted, -1, retention_ms),
        "retentionBytes": retention_bytes,
        "segmentBytes": np.full(topics, GIB, dtype=np.int64),
        "segmentMs": np.full(topics, 7 * DAY_MS, dtype=np.int64),
        "remoteStorageEnable": np.zeros(topics, dtype=bool),
        "localRetentionMs": np.full(topics, -2, dtype=np.int64),
        "localRetentionBytes": np.full(topics, -2, dtype=np.int64),
    }
    columns = {name: np.tile(values, reads.size) for name, values in per_read.items()}
    instants = np.repeat(reads, topics)
    columns |= {
        "brokerId": np.zeros(instants.size, dtype=np.int32),
        "surveyedAt": instants,
        "configReadAt": instants,
        "kind": np.full(instants.size, CONFIG, dtype=object),
    }
    return columns


def _broker_chunks(shape: FleetShape, chunk: int) -> Iterator[list[synthetic.Trace]]:
    config = shape.history
    traces = synthetic.make_traces(shape.seed, shape.brokers * shape.volumes_per_broker, config)
    per_chunk = chunk * shape.volumes_per_broker
    for start in range(0, len(traces), per_chunk):
        yield traces[start : start + per_chunk]


def write_fleet(
    shape: FleetShape, volumes: Path, usage: Path | None, chunk_brokers: int = 8
) -> Written:
    """Write the volume dataset to ``volumes`` and (unless None) the usage dataset to
    ``usage``; how many rows each holds and how long it took."""
    import time  # noqa: PLC0415

    started = time.monotonic()
    config = shape.history
    schema = usage_arrow_schema()
    rng = np.random.default_rng(shape.seed + 1)
    volume_rows = usage_rows = 0
    for number, traces in enumerate(_broker_chunks(shape, chunk_brokers)):
        frame = synthetic.history_frame(traces, shape.seed + number, config)
        _write_dated(with_limits(frame), volumes, "snapshotAt", f"part-{number:05d}")
        volume_rows += len(frame)
        if usage is None:
            continue
        tables = []
        delay = np.timedelta64(int(SURVEY_DELAY_SECONDS * 1e6), "us")
        newest = np.datetime64(shape.at.replace(tzinfo=None), "us")
        for key, rows in frame.groupby(["brokerId", "volumeName"], sort=True):
            broker, volume = cast(tuple[int, str], key)
            stamps = rows["snapshotAt"].dt.tz_convert(None).to_numpy().astype("datetime64[us]")
            columns = _topic_rows(
                rng,
                broker=int(broker),
                volume=str(volume),
                instants=np.minimum(stamps + delay, newest),
                consumed=rows["consumed"].to_numpy(),
                pool=shape.topics,
            )
            tables.append(_usage_table(columns, schema))
        table = pa.concat_tables(tables)
        _write_dated(table, usage, "surveyedAt", f"part-{number:05d}")
        usage_rows += table.num_rows
    if usage is not None:
        configs = _usage_table(_config_columns(rng, shape), schema)
        _write_dated(configs, usage, "surveyedAt", "configs")
        usage_rows += configs.num_rows
    return Written(volume_rows, usage_rows, time.monotonic() - started)


def write_sink_log(dataset: Path) -> None:
    """List every data file of ``dataset`` in its ``_spark_metadata`` log (batch 0), as the
    file sink of ``history ingest`` would have; nothing if it has a log."""
    log = dataset / sink_log.LOG_DIR
    if log.exists():
        return
    entries = []
    for path in sorted(dataset.glob("date=*/*.parquet")):
        status = path.stat()
        modified = int(status.st_mtime * 1000)
        uri = "file://" + quote(str(path), safe="/=")  # as Hadoop's Path writes it: '=' kept
        entries.append(sink_log.file_entry(uri, status.st_size, modified, 1, 2**25))
    log.mkdir()
    (log / "0").write_text(sink_log.render_log(entries))


def ensure_fleet(shape: FleetShape, folder: Path, with_usage: bool = True) -> Written:
    """``write_fleet`` into ``folder/volumes`` and ``folder/usage``, unless a previous run
    finished writing them there (``written.json`` records the counts and the time it took),
    each with its sink log."""
    import json  # noqa: PLC0415
    import shutil  # noqa: PLC0415

    marker = folder / "written.json"
    if marker.exists():
        for name in ("volumes", "usage"):
            if (folder / name).is_dir():
                write_sink_log(folder / name)
        return Written(**json.loads(marker.read_text()))
    for name in ("volumes", "usage"):
        shutil.rmtree(folder / name, ignore_errors=True)
    written = write_fleet(shape, folder / "volumes", folder / "usage" if with_usage else None)
    for name in ("volumes", "usage") if with_usage else ("volumes",):
        write_sink_log(folder / name)
    marker.write_text(
        json.dumps(
            {"volume_rows": written.volume_rows, "usage_rows": written.usage_rows,
             "seconds": written.seconds}
        )
    )  # fmt: skip
    return written
