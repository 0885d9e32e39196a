"""``volume-quota history backtest``: score the forecast against predict_linear on the history.

Spark buckets the snapshots per volume (``backtest_spark``); the pure core
(``backtest``) then scores every forecaster at rolling origins of every volume, in this
process. Nothing heavy is imported before the run function.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_history.errors import HistoryUsageError
from volume_quota.arguments import positive_number

if TYPE_CHECKING:
    from spark_history.backtest import SummaryRow

DEFAULT_HORIZONS = "6,24,72,168"

_DESCRIPTION = """\
Score fill forecasts on the history itself, with rolling origins: at every origin (every
--origin-step hours once --warmup hours of a volume's history lie behind), each forecaster
sees the history up to the origin only, and what followed scores it. The limit a volume
fills to is its capacity minus its hard limit (the snapshots' hardThresholdBytes).

Forecasters, in the same run:
  linear-6h, linear-72h  Prometheus predict_linear: a least-squares line over the last 6 h
                         (node_exporter's alert) or 72 h, extrapolated from the origin
  forecast               the history job's forecast (spark_history.trend_forecast), its
                         default parameters but --horizon-days, with its calibrated band:
                         split conformal on the level errors of the same forecast at the
                         origins of the other half of the volumes (volumes alternate
                         between two halves), so no band is calibrated on its own volume

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
    parser.add_argument(
        "--at",
        metavar="TIME",
        help="score the history up to this ISO 8601 time only (default: all of it)",
    )
    parser.add_argument(
        "--origin-step",
        default="6",
        metavar="HOURS",
        help="hours between origins (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        default="24",
        metavar="HOURS",
        help="history a volume needs before its first origin (default: %(default)s)",
    )
    parser.add_argument(
        "--horizon-days",
        default="7",
        metavar="DAYS",
        help="the forecasters predict crossings within this horizon (default: %(default)s)",
    )
    parser.add_argument(
        "--horizons",
        default=DEFAULT_HORIZONS,
        metavar="H,H,...",
        help="the horizons scored, in hours, each within --horizon-days (default: %(default)s)",
    )
    parser.add_argument(
        "--history-bucket",
        metavar="DURATION",
        help="bucket width, e.g. 1h or 1m (default: VOLUME_QUOTA_HISTORY_BUCKET, else 1h)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")


def _whole_hours(option: str, text: str, scale: float = 1.0) -> float:
    """A positive whole number of hours (``text`` times ``scale``); one usage line if not.

    Checked here, not by argparse: a bad value is one error line, not a usage dump."""
    try:
        value = positive_number(text) * scale
    except argparse.ArgumentTypeError as error:
        raise HistoryUsageError(f"{option}: {error}") from None
    if not value.is_integer():
        raise HistoryUsageError(f"{option}: {text!r} is not a whole number of hours")
    return value


def _horizons(text: str, horizon_hours: float) -> tuple[float, ...]:
    values = []
    for part in text.split(","):
        item = part.strip()
        try:
            value = float(item)
        except ValueError:
            raise HistoryUsageError(f"--horizons: {item!r} is not a number of hours") from None
        if not (math.isfinite(value) and value > 0 and value.is_integer()):
            raise HistoryUsageError(f"--horizons: {item!r} is not a whole number of hours")
        if value > horizon_hours:
            raise HistoryUsageError(
                f"--horizons: {item} h is not within --horizon-days ({horizon_hours:g} h)"
            )
        values.append(value)
    return tuple(sorted(set(values)))


def run_backtest(arguments: argparse.Namespace) -> int:
    from spark_history.backtest import BacktestConfig, score_series, summarize
    from spark_history.backtest_forecasters import cross_fitted, default_forecasters
    from spark_history.backtest_spark import bucket_rows, series_by_volume
    from spark_history.command_runs import (
        _check_input,
        _check_local_input,
        _evaluation_time,
        _progress,
        _session,
        _spark_call,
    )
    from spark_history.history_input import load_history
    from spark_history.history_settings import load_history as load_settings
    from spark_history.session import step

    settings = load_settings(history_bucket=arguments.history_bucket)
    horizon_hours = _whole_hours("--horizon-days", arguments.horizon_days, 24.0)
    config = BacktestConfig(
        origin_step_hours=_whole_hours("--origin-step", arguments.origin_step),
        warmup_hours=_whole_hours("--warmup", arguments.warmup),
        horizon_hours=horizon_hours,
        horizons_hours=_horizons(arguments.horizons, horizon_hours),
    )
    until = None if arguments.at is None else _evaluation_time(arguments.at)
    _check_local_input(arguments.input)
    session = _session(arguments)
    _check_input(session, arguments.input)
    with step("bucketing"), _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        buckets = _spark_call(lambda: bucket_rows(rows, settings.history_bucket, until).toPandas())
    volumes = series_by_volume(buckets)
    if not volumes:
        raise HistoryUsageError(f"no snapshots in {arguments.input}")
    started = time.monotonic()
    calibrations = cross_fitted([series for _, _, series in volumes], config)
    print(f"[backtest] band calibrated in {time.monotonic() - started:.1f} s", file=sys.stderr)
    scores = []
    for number, (broker, volume, series) in enumerate(volumes, start=1):
        began = time.monotonic()
        forecasters = default_forecasters(config, calibrations[number - 1])
        scored = score_series(series, forecasters, config)
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
