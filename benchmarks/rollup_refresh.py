"""What keeping the hourly rollups costs an hourly ingest: a day's rollups extended with the
hour appended to it, against the day recomputed, on the same datasets in the same run.

``python -m benchmarks.rollup_refresh --brokers 200 --workdir /tmp/vq-rollup-refresh``. A fleet
of ``--brokers`` x ``--volumes-per-broker`` volumes, a snapshot and a usage survey a minute
(``benchmarks.fleet_datasets``: the fleet benchmark's datasets), 24 hours ending at 23:00 UTC,
so its last date holds 23 hours: the state of an hourly ingest at the end of a day, where
recomputing the date costs the most. The rows of the last hour are cut out of the last date's
files into files of their own. Then, in Spark local mode (``--cores``):

1. the datasets' sink logs list every file but the last hour's, and ``refresh_rollup`` computes
   both rollups (the snapshots' and the usage's) of both dates (timed, not compared);
2. the last hour's files are added to the logs, as the ingest's file sink adds an hour's files,
   and ``refresh_rollup`` brings the rollups up to date, as ``history ingest`` does after its
   run: it extends the last date's rollup with the new files (**extended**);
3. the last date's manifests are deleted and ``refresh_rollup`` recomputes that date from all
   its raw files, which is what the refresh did before it could extend (**recomputed**).

The rollups after 2 and after 3 must be the same rows (count and an order-free hash of every
column), or the run fails. Printed: the seconds of each refresh per kind, the rows read and
the ratio; written to ``<workdir>/rollup-refresh-b<brokers>.json``. The datasets are kept and
reused (``written.json``); the rollups and the last hour's log entries are reset each run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from benchmarks.fleet_datasets import FleetShape, write_fleet, write_sink_log
from benchmarks.local_spark import local_session
from benchmarks.machine import describe_machine
from spark_history import sink_log

AT = datetime(2026, 11, 22, 23, 0, tzinfo=UTC)
CUT = AT - timedelta(hours=1)
LAST_DATE = f"date={AT.date().isoformat()}"
DATASETS = {"volumes": "snapshotAt", "usage": "surveyedAt"}
LATE_SUFFIX = "-last-hour"


def _uri(path: Path) -> str:
    return "file://" + quote(str(path), safe="/=")  # as Hadoop's Path writes it: '=' kept


def cut_last_hour(dataset: Path, column: str, holding: Path) -> None:
    """Move the rows after CUT out of the last date's files into files of their own, kept in
    ``holding`` until the hour is 'ingested'."""
    holding.mkdir(parents=True, exist_ok=True)
    for path in sorted((dataset / LAST_DATE).glob("*.parquet")):
        table = pq.read_table(path)
        late = pc.greater(
            table.column(column), pa.scalar(CUT, type=table.schema.field(column).type)
        )
        if not pc.any(late).as_py():
            continue
        pq.write_table(table.filter(late), holding / f"{path.stem}{LATE_SUFFIX}.parquet")
        pq.write_table(table.filter(pc.invert(late)), path)


def prepare(workdir: Path, brokers: int, volumes_per_broker: int) -> dict[str, Any]:
    """The datasets before the last hour's ingest: written once (and the hour cut out), then
    at every run reset to their logs' first batch and no rollup."""
    fleet = workdir / f"b{brokers}-v{volumes_per_broker}"
    marker = fleet / "written.json"
    if not marker.exists():
        shutil.rmtree(fleet, ignore_errors=True)
        shape = FleetShape(brokers, volumes_per_broker, 1.0, AT)
        written = write_fleet(shape, fleet / "volumes", fleet / "usage")
        for name, column in DATASETS.items():
            cut_last_hour(fleet / name, column, fleet / "last-hour" / name)
            write_sink_log(fleet / name)
        counts = {"volumeRows": written.volume_rows, "usageRows": written.usage_rows}
        marker.write_text(json.dumps(counts | {"writeSeconds": written.seconds}))
    for name in DATASETS:
        dataset, holding = fleet / name, fleet / "last-hour" / name
        for path in (dataset / LAST_DATE).glob(f"*{LATE_SUFFIX}.parquet"):
            path.rename(holding / path.name)
        (dataset / sink_log.LOG_DIR / "1").unlink(missing_ok=True)
        shutil.rmtree(dataset / "_rollup", ignore_errors=True)
    return {"fleet": fleet, **json.loads(marker.read_text())}


def ingest_last_hour(fleet: Path) -> int:
    """Move the last hour's files into the datasets and list them in batch 1 of their logs;
    the rows added."""
    rows = 0
    for name in DATASETS:
        dataset, holding = fleet / name, fleet / "last-hour" / name
        entries = []
        for path in sorted(holding.glob("*.parquet")):
            target = dataset / LAST_DATE / path.name
            path.rename(target)
            rows += pq.read_metadata(target).num_rows
            status = target.stat()
            modified = int(status.st_mtime * 1000)
            entries.append(sink_log.file_entry(_uri(target), status.st_size, modified, 1, 2**25))
        (dataset / sink_log.LOG_DIR / "1").write_text(sink_log.render_log(entries))
    return rows


def timed_refresh(session: Any, fleet: Path) -> dict[str, float]:
    from spark_history.rollup_store import SNAPSHOTS, USAGE, refresh_rollup  # noqa: PLC0415

    seconds = {}
    for name, kind in (("volumes", SNAPSHOTS), ("usage", USAGE)):
        started = time.monotonic()
        result = refresh_rollup(session, str(fleet / name), kind=kind)
        seconds[name] = time.monotonic() - started
        print(f"  {name}: {result.describe()} in {seconds[name]:.1f} s", flush=True)
    return seconds


def fingerprints(session: Any, fleet: Path) -> dict[str, tuple[int, int]]:
    """Per dataset, its stored rollup's row count and the sum of a hash of every row."""
    from pyspark.sql import functions as F  # noqa: N812, PLC0415

    from spark_history.rollup_store import SNAPSHOTS, USAGE, load_rollup  # noqa: PLC0415

    found = {}
    for name, kind in (("volumes", SNAPSHOTS), ("usage", USAGE)):
        raw = session.read.parquet(str(fleet / name)).limit(0)
        stored = load_rollup(session, str(fleet / name), raw, kind=kind)
        row = stored.select(
            F.count(F.lit(1)).alias("rows"),
            F.sum(F.xxhash64(*stored.columns).cast("decimal(38,0)")).alias("hash"),
        ).first()
        assert row is not None
        found[name] = (int(row["rows"]), int(row["hash"]))
    return found


def measure(session: Any, workdir: Path, brokers: int, volumes_per_broker: int) -> dict[str, Any]:
    """Steps 1 to 3 of the module docstring on ``session``; the figures."""
    prepared = prepare(workdir, brokers, volumes_per_broker)
    fleet: Path = prepared["fleet"]
    print("first refresh: both dates computed from the raw rows", flush=True)
    first = timed_refresh(session, fleet)
    added = ingest_last_hour(fleet)
    print(f"the last hour ingested: {added:,} rows in new files", flush=True)
    print("after the hour: the last date extended", flush=True)
    extended = timed_refresh(session, fleet)
    after_extension = fingerprints(session, fleet)
    for name in DATASETS:
        (fleet / name / "_rollup/hourly/_manifests" / f"{LAST_DATE}.json").unlink()
    print("the same, the last date recomputed from all its raw files", flush=True)
    recomputed = timed_refresh(session, fleet)
    after_recompute = fingerprints(session, fleet)
    if after_extension != after_recompute:
        raise SystemExit(f"the rollups differ: {after_extension} != {after_recompute}")
    return {
        "brokers": brokers,
        "volumesPerBroker": volumes_per_broker,
        "cores": session.sparkContext.defaultParallelism,
        "volumeRows": prepared["volumeRows"],
        "usageRows": prepared["usageRows"],
        "lastHourRows": added,
        "rollupRows": {name: rows for name, (rows, _) in after_extension.items()},
        "firstSeconds": first,
        "extendedSeconds": extended,
        "recomputedSeconds": recomputed,
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        f"### {result['brokers']} brokers x {result['volumesPerBroker']} volumes, "
        f"the last of 23 hours of a date appended ({result['cores']} cores, local mode)",
        "",
        "| rollup | extended s | recomputed s | ratio |",
        "|---|---|---|---|",
    ]
    for name in DATASETS:
        extended, recomputed = result["extendedSeconds"][name], result["recomputedSeconds"][name]
        lines.append(
            f"| {name} | {extended:.1f} | {recomputed:.1f} | {recomputed / extended:.1f} |"
        )
    total_e = sum(result["extendedSeconds"].values())
    total_r = sum(result["recomputedSeconds"].values())
    lines.append(f"| both | {total_e:.1f} | {total_r:.1f} | {total_r / total_e:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--brokers", type=int, default=200)
    parser.add_argument("--volumes-per-broker", type=int, default=16)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/vq-rollup-refresh"))
    arguments = parser.parse_args()
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    print(describe_machine(), flush=True)
    session = local_session(arguments.cores, arguments.driver_memory)
    try:
        result = measure(
            session, arguments.workdir, arguments.brokers, arguments.volumes_per_broker
        )
    finally:
        session.stop()
    (arguments.workdir / f"rollup-refresh-b{arguments.brokers}.json").write_text(
        json.dumps(result, indent=1)
    )
    print(report(result))


if __name__ == "__main__":
    main()
