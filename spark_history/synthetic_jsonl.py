"""Writing synthetic history as JSONL snapshot values, fast enough for benchmark sizes."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import numpy as np
import pandas as pd

from schemas.snapshot import SNAPSHOT_SCHEMA_VERSION, LimitType


def write_jsonl(
    frame: pd.DataFrame, path: Path, soft_percent: float = 10.0, hard_percent: float = 5.0
) -> int:
    """Write ``frame`` as JSONL snapshot values (one broker snapshot per line); returns lines.

    The same messages as :func:`snapshot_messages`, built with column-wise string operations:
    the benchmarks write tens of millions of volume rows and a per-row ``json.dumps`` would
    take longer than the Spark job being measured.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = frame.sort_values(["snapshotAt", "brokerId", "volumeName"], kind="stable")
    names = ordered["volumeName"].map(_json_string_cache(ordered["volumeName"]))
    paths = ordered["path"].map(_json_string_cache(ordered["path"]))
    fragments = (
        '{"volumeName":'
        + names
        + ',"path":'
        + paths
        + ',"capacity":'
        + _decimal(ordered["capacity"])
        + ',"consumed":'
        + _decimal(ordered["consumed"])
        + "}"
    )
    lines = _snapshot_lines(ordered, fragments, soft_percent, hard_percent)
    with path.open("w", encoding="utf-8") as stream:
        for chunk_start in range(0, len(lines), 100_000):
            stream.write("\n".join(lines.iloc[chunk_start : chunk_start + 100_000]))
            stream.write("\n")
    return len(lines)


def _snapshot_lines(
    ordered: pd.DataFrame, fragments: pd.Series, soft_percent: float, hard_percent: float
) -> pd.Series:
    """One JSON snapshot per (instant, broker) run of ``ordered`` rows, from volume fragments."""
    # Rows are sorted by (instant, broker): each snapshot is a contiguous run of rows.
    instants = (
        ordered["snapshotAt"]
        .dt.tz_convert(UTC)
        .dt.tz_localize(None)
        .to_numpy()
        .astype("datetime64[ms]")
    )
    brokers = ordered["brokerId"].to_numpy()
    starts = np.flatnonzero(
        np.concatenate(([True], (instants[1:] != instants[:-1]) | (brokers[1:] != brokers[:-1])))
    )
    ends = np.append(starts[1:], len(ordered))
    pieces = fragments.to_numpy()
    volumes = pd.Series(
        [",".join(pieces[start:end]) for start, end in zip(starts, ends, strict=True)]
    )
    stamps = pd.Series(np.datetime_as_string(instants[starts], unit="ms")) + "Z"
    broker_text = _decimal(pd.Series(brokers[starts]))
    limits = json.dumps(
        {
            "softLimit": {"type": LimitType.MIN_FREE_PERCENTAGE.value, "level": soft_percent},
            "hardLimit": {"type": LimitType.MIN_FREE_PERCENTAGE.value, "level": hard_percent},
        },
        separators=(",", ":"),
    )[1:-1]
    lines: pd.Series = (
        f'{{"schemaVersion":{SNAPSHOT_SCHEMA_VERSION},"brokerId":'
        + broker_text
        + ',"snapshotAt":"'
        + stamps
        + '",'
        + limits
        + ',"volumes":['
        + volumes
        + "]}"
    )
    return lines


def _decimal(column: pd.Series) -> pd.Series:
    """Integers as decimal text (numpy's ``astype(str)`` is an order of magnitude slower)."""
    return pd.Series([str(value) for value in column.to_numpy().tolist()], index=column.index)


def _json_string_cache(column: pd.Series) -> dict[object, str]:
    return {value: json.dumps(str(value)) for value in column.unique()}
