"""``volume-quota history backtest``: score the forecast against predict_linear on the history.

Spark buckets the snapshots per volume (``spark_buckets``); the pure core
(``rolling_origin``) then scores every forecaster at rolling origins of every volume, in this
process. Nothing heavy is imported before the run function.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_history.backtest_settings import BacktestSettings
from spark_history.errors import HistoryUsageError
from spark_history.settings_flags import add_config_flag, add_options, load_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_history.forecast.backtest.rolling_origin import SummaryRow
    from spark_history.forecast.backtest.volume_forecasters import UsageHistory

_DESCRIPTION = """\
Score fill forecasts on the history itself, with rolling origins: at every origin (every
--origin-step hours once --warmup hours of a volume's history lie behind), each forecaster
sees the history up to the origin only, and what followed scores it. The limit a volume
fills to is its capacity minus its hard limit (the snapshots' hardThresholdBytes).

Forecasters, in the same run:
  linear-6h, linear-72h  Prometheus predict_linear: a least-squares line over the last 6 h
                         (node_exporter's alert) or 72 h, extrapolated from the origin
  forecast               the history job's forecast (spark_history.forecast.trend), its
                         default parameters but --horizon-days, with its calibrated band:
                         split conformal on the level errors of the same forecast at the
                         origins of the other half of the volumes (volumes alternate
                         between two halves), so no band is calibrated on its own volume
  mechanism              with --usage-dataset: what 'history forecast --usage-dataset'
                         answers, from the usage surveyed and the topic configs read up to
                         the origin (each topic at its write rate up to what its retention
                         keeps); the forecast's answer where a volume has no usage then;
                         its band calibrated the same way, on the mechanism's own errors

The history is cut into buckets first (VOLUME_QUOTA_HISTORY_BUCKET or --history-bucket,
default 1h; the maximum of a bucket is what crosses a limit). Every duration here and in the
forecast counts buckets as hours: with a 1m bucket, a cluster run in compressed time (a
minute for an hour) is scored as a real history of the same shape.
"""

_COLUMNS = """\
columns (one line per forecaster and horizon H):
  origins      origins scored (origins where the volume was already over its limit are not)
  crossings    origins where a bucket maximum reached the limit within H
  misses       real crossings within H that the forecaster did not predict within H
  false fills  predicted crossings within H that did not happen, where the history goes on
               past H
  unscored     predicted crossings within H where the history stops before H: unknown
  err p50 %    median of |predicted used bytes - bucket maximum| H after the origin, in
               percent of capacity (--json adds bytes), over the origins whose history
               reaches H ("errors" in --json)
  err p90 %    the same errors' 90th percentile
  band         coverage of the forecaster's band on its crossing time: covering bands /
               bands given (a band covers the real crossing, or with no crossing within H
               reaches past H); "-" when the forecaster gave no band
  open         bands open on their late side: reported, never counted as covering

Every option but the run's paths and Spark's is also VOLUME_QUOTA_<NAME> in the environment
and NAME in the --config TOML file (e.g. horizon_days = 30): flags override the environment,
which overrides the file.
Spark runs in local mode (local[*]) unless --master says otherwise; --conf key=value passes
any Spark setting. Progress goes to stderr. Exit status: 0 on success, 2 for a bad option,
a missing or unreadable input, or no data.
"""


def add_backtest(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    """Add ``backtest`` to the ``history`` command group."""
    from spark_history.commands import _spark_options

    parser = actions.add_parser(
        "backtest",
        help="score the forecast against predict_linear with rolling origins on the history",
        description=_DESCRIPTION,
        epilog=_COLUMNS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _backtest_options(parser)
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_backtest)


def _backtest_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        metavar="URI",
        help="the Parquet dataset written by 'history ingest', or JSONL snapshot values "
        "(a file or a directory of files)",
    )
    add_options(parser, BacktestSettings)
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    add_config_flag(parser)


def run_backtest(arguments: argparse.Namespace) -> int:
    from spark_history.command_runs import (
        _check_input,
        _check_local_input,
        _progress,
        _session,
        _spark_call,
    )
    from spark_history.forecast.backtest.rolling_origin import (
        BacktestConfig,
        score_series,
        summarize,
    )
    from spark_history.forecast.backtest.spark_buckets import bucket_rows, series_by_volume
    from spark_history.forecast.backtest.volume_forecasters import volume_forecasters
    from spark_history.history_input import load_history
    from spark_history.session import step

    settings = load_options(BacktestSettings, arguments)
    config = BacktestConfig(
        origin_step_hours=settings.origin_step,
        warmup_hours=settings.warmup,
        horizon_hours=settings.horizon_hours,
        horizons_hours=settings.scored_horizons(),
    )
    until = settings.at
    _check_local_input(arguments.input)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with step("bucketing"), _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        buckets = _spark_call(lambda: bucket_rows(rows, settings.history_bucket, until).toPandas())
        usage = _usage(session, settings)
    volumes = series_by_volume(buckets)
    if not volumes:
        raise HistoryUsageError(f"no snapshots in {arguments.input}")
    started = time.monotonic()
    every_forecaster = volume_forecasters(volumes, config, usage)
    print(f"[backtest] bands calibrated in {time.monotonic() - started:.1f} s", file=sys.stderr)
    scores = []
    for number, (broker, volume, series) in enumerate(volumes, start=1):
        began = time.monotonic()
        scored = score_series(series, every_forecaster[number - 1], config)
        scores += scored
        origins = len({score.origin for score in scored})
        print(
            f"[backtest] {number}/{len(volumes)} broker {broker} {volume}: {series.index.size} "
            f"buckets, {origins} origins, {time.monotonic() - began:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    rows_out = summarize(scores)
    seconds = time.monotonic() - started
    print(f"[backtest] scored in {seconds:.1f} s", file=sys.stderr, flush=True)
    if arguments.json:
        print(json.dumps(_document(rows_out, len(volumes), settings.history_bucket, seconds)))
    else:
        print(format_table(rows_out))
    return 0


def _usage(session: SparkSession, settings: BacktestSettings) -> UsageHistory | None:
    """The usage dataset rolled up to the backtest's buckets, collected; None without it."""
    from spark_history.command_runs import _spark_call, _usage_dataset
    from spark_history.forecast.backtest.spark_buckets import usage_history

    bucket_seconds = settings.history_bucket
    usage = _usage_dataset(session, settings.usage_dataset, settings.at, bucket_seconds)
    if usage is None:
        return None
    return _spark_call(lambda: usage_history(usage, bucket_seconds, settings.at))


def _document(
    rows: Sequence[SummaryRow], volumes: int, bucket_seconds: float, seconds: float
) -> dict[str, object]:
    return {
        "volumes": volumes,
        "bucketSeconds": bucket_seconds,
        "scoringSeconds": round(seconds, 3),
        "rows": [
            {
                "forecaster": row.forecaster,
                "horizonHours": row.horizon_hours,
                "origins": row.origins,
                "errors": row.errors,
                "crossings": row.crossings,
                "misses": row.misses,
                "falseFills": row.false_fills,
                "unscored": row.unscored,
                "errorP50Bytes": row.error_p50_bytes,
                "errorP90Bytes": row.error_p90_bytes,
                "errorP50Percent": row.error_p50_percent,
                "errorP90Percent": row.error_p90_percent,
                "bands": row.banded,
                "bandsCovering": row.covered,
                "bandsOpen": row.open_bands,
                "bandCoverage": row.coverage,
            }
            for row in rows
        ],
    }


_HEADER = (
    "forecaster",
    "horizon",
    "origins",
    "crossings",
    "misses",
    "false fills",
    "unscored",
    "err p50 %",
    "err p90 %",
    "band",
    "open",
)


def format_table(rows: Sequence[SummaryRow]) -> str:
    """The summary as an aligned text table, one line per forecaster and horizon."""
    lines = [
        [
            row.forecaster,
            f"{row.horizon_hours:g}h",
            str(row.origins),
            str(row.crossings),
            str(row.misses),
            str(row.false_fills),
            str(row.unscored),
            _percent(row.error_p50_percent),
            _percent(row.error_p90_percent),
            "-" if not row.banded else f"{row.covered}/{row.banded}",
            str(row.open_bands),
        ]
        for row in rows
    ]
    widths = [max(len(cells[i]) for cells in [list(_HEADER), *lines]) for i in range(len(_HEADER))]

    def render(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([render(_HEADER), *(render(cells) for cells in lines)])


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
