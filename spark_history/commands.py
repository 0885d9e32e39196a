"""``volume-quota history ...``: the history job's command group (ingest, forecast, report).

Registered into the main CLI with :func:`register`; ``spark_history/job.py`` registers the same
subcommands for spark-submit. Nothing heavy is imported here: pyspark, pandas and matplotlib
load inside the run functions, so ``volume-quota --help`` stays fast.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from spark_history.errors import HistoryUsageError
from volume_quota.arguments import iso_instant, positive_number

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_history.envelope_forecast import ForecastParams
    from spark_history.session import StageProgress
    from spark_history.thresholds import TuningParams

DESCRIPTION = """\
Mine the history of volume snapshots with Spark: ingest the snapshot topic (or JSONL files)
into a Parquet dataset, forecast when each volume fills, and report on limits and balance.
"""

_SPARK_EPILOG = """\
Spark runs in local mode (local[*]) unless --master says otherwise; --conf key=value passes
any Spark setting. Progress goes to stderr. Exit status: 0 on success, 2 for a bad option,
a missing or unreadable input, or no data.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``history`` command group to ``volume-quota``."""
    parser = subcommands.add_parser(
        "history",
        help="forecast volume fill times and tune limits from the snapshot history (Spark)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(title="history commands", metavar="ACTION", required=True)
    add_history_actions(actions, default_master="local[*]")


def add_history_actions(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    """The ingest, forecast and report subcommands (shared with ``job.py``)."""
    _add_ingest(actions, default_master)
    _add_forecast(actions, default_master)
    _add_report(actions, default_master)


def _spark_options(parser: argparse.ArgumentParser, default_master: str | None) -> None:
    group = parser.add_argument_group("Spark")
    group.add_argument(
        "--master",
        default=default_master,
        metavar="URL",
        help="Spark master (default: %(default)s)",
    )
    group.add_argument(
        "--conf",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=VALUE",
        help="a Spark setting; repeatable",
    )


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        type=Path,
        metavar="PATH",
        help="the Parquet dataset written by 'history ingest', or JSONL "
        "snapshot values (a file or a directory of files)",
    )
    parser.add_argument(
        "--at",
        # Checked in the run functions, not by argparse: a bad time is one error line, not a
        # usage dump followed by the error.
        metavar="TIME",
        help="evaluate as of this ISO 8601 time with an offset, e.g. "
        "2026-11-22T12:00:00Z (default: now)",
    )
    parser.add_argument(
        "--horizon-days",
        type=positive_number,
        default=60.0,
        metavar="DAYS",
        help="no fill time is given past this horizon (default: %(default)g)",
    )
    parser.add_argument(
        "--lookback-days",
        type=positive_number,
        default=7.0,
        metavar="DAYS",
        help="history used by the forecast (default: %(default)g)",
    )


def _add_ingest(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "ingest",
        help="append new snapshots (Kafka topic or JSONL) to the Parquet history",
        description="Append every snapshot message not ingested before to the Parquet "
        "dataset, one row per volume, partitioned by UTC date. The checkpoint remembers what "
        "was read: re-running never duplicates rows. Tombstones and invalid messages are "
        "skipped and counted.",
        epilog="examples:\n  volume-quota history ingest --source jsonl --input snaps.jsonl "
        "--checkpoint ck --output history\n  volume-quota history ingest --source kafka "
        "--bootstrap broker:9093 --topic __volume_usage \\\n      --ssl-ca ca.pem --ssl-cert "
        "cert.pem --ssl-key key.pem --checkpoint ck --output history\n\n" + _SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--source", required=True, choices=("kafka", "jsonl"))
    parser.add_argument(
        "--input", type=Path, metavar="PATH", help="jsonl: a JSONL file or a directory of them"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        type=Path,
        metavar="DIR",
        help="where progress is kept; one per output dataset and source",
    )
    parser.add_argument(
        "--output",
        required=True,
        type=Path,
        metavar="DATASET",
        help="the Parquet dataset to append to",
    )
    kafka = parser.add_argument_group("Kafka (--source kafka)")
    kafka.add_argument("--bootstrap", metavar="HOST:PORT,...")
    kafka.add_argument("--topic", metavar="NAME", help="the snapshot topic")
    kafka.add_argument("--ssl-ca", type=Path, metavar="PEM", help="CA bundle for the brokers")
    kafka.add_argument("--ssl-cert", type=Path, metavar="PEM", help="client certificate")
    kafka.add_argument("--ssl-key", type=Path, metavar="PEM", help="client private key")
    kafka.add_argument("--ssl-key-password", metavar="SECRET")
    kafka.add_argument(
        "--ssl-keystore",
        type=Path,
        metavar="FILE",
        help="JKS or PKCS12 keystore instead of --ssl-cert/--ssl-key",
    )
    kafka.add_argument("--ssl-keystore-password", metavar="SECRET")
    kafka.add_argument(
        "--ssl-truststore",
        type=Path,
        metavar="FILE",
        help="JKS or PKCS12 truststore instead of --ssl-ca",
    )
    kafka.add_argument("--ssl-truststore-password", metavar="SECRET")
    kafka.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=VALUE",
        help="passed to Spark's Kafka source as is, e.g. "
        "kafka.ssl.endpoint.identification.algorithm= or "
        "maxOffsetsPerTrigger=100000; repeatable",
    )
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_ingest)


def _add_forecast(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "forecast",
        help="when will each volume fill? one CSV row per volume",
        description="Forecast, per volume, the growth trend and the hours until full with an "
        "uncertainty band. hoursToFull is empty when the volume is not forecast to fill "
        "within the horizon (plateaued by retention, flat, shrinking, or too slow).",
        epilog=_SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _analysis_options(parser)
    parser.add_argument("--output", required=True, type=Path, metavar="FILE.csv")
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_forecast)


def _add_report(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "report",
        help="one HTML report: forecasts, days until full, limit trade-offs, balance",
        description="Write report.html (self-contained, images embedded) and forecast.csv, "
        "thresholds.csv, balance.csv and summary.json into the output directory.",
        epilog=_SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _analysis_options(parser)
    parser.add_argument("--output-dir", required=True, type=Path, metavar="DIR")
    parser.add_argument(
        "--soft-grid",
        type=_percent_list,
        metavar="P,P,...",
        help="candidate soft limits, MinFreePercentage (default: 5,7.5,10,12.5,15,20,25,30)",
    )
    parser.add_argument(
        "--hard-grid",
        type=_percent_list,
        metavar="P,P,...",
        help="candidate hard limits, MinFreePercentage (default: 2,3,5,7.5,10)",
    )
    parser.add_argument(
        "--min-warning-hours",
        type=positive_number,
        default=6.0,
        metavar="HOURS",
        help="warning wanted between the soft and the hard limit (default: %(default)g)",
    )
    parser.add_argument(
        "--max-plotted",
        type=int,
        default=12,
        metavar="N",
        help="plot the N volumes closest to full (default: %(default)s)",
    )
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_report)


def run_ingest(arguments: argparse.Namespace) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource
    from spark_history.kafka_tls import TlsFiles, kafka_tls_options

    if arguments.source == "jsonl":
        if arguments.input is None:
            raise HistoryUsageError("--source jsonl needs --input PATH")
        if not arguments.input.exists():
            raise HistoryUsageError(f"input {arguments.input} does not exist")
        source: JsonlSource | KafkaSource = JsonlSource(arguments.input)
        return _ingest(arguments, source, jars=False)
    if not arguments.bootstrap or not arguments.topic:
        raise HistoryUsageError("--source kafka needs --bootstrap and --topic")
    tls = TlsFiles(
        ca=arguments.ssl_ca,
        cert=arguments.ssl_cert,
        key=arguments.ssl_key,
        key_password=arguments.ssl_key_password,
        keystore=arguments.ssl_keystore,
        keystore_password=arguments.ssl_keystore_password,
        truststore=arguments.ssl_truststore,
        truststore_password=arguments.ssl_truststore_password,
    )
    with kafka_tls_options(tls) as tls_options:
        options = {**tls_options, **dict(arguments.kafka_option)}
        return _ingest(
            arguments, KafkaSource(arguments.bootstrap, arguments.topic, options), jars=True
        )


def _ingest(arguments: argparse.Namespace, source: object, jars: bool) -> int:
    from spark_history.ingest import JsonlSource, KafkaSource, run_ingest
    from spark_history.session import step

    assert isinstance(source, JsonlSource | KafkaSource)
    session = _session(arguments, kafka=jars)
    with step("ingest"), _progress(session):
        counts = _spark_call(
            lambda: run_ingest(session, source, arguments.checkpoint, arguments.output)
        )
    print(f"ingested {counts.describe()}")
    return 0


def run_forecast(arguments: argparse.Namespace) -> int:
    from spark_history.forecast import forecast_volumes
    from spark_history.forecast_frame import FORECAST_COLUMNS
    from spark_history.history_input import load_history
    from spark_history.session import step

    _check_input(arguments.input)
    at = _evaluation_time(arguments.at)
    params = _forecast_params(arguments)
    session = _session(arguments)
    with step("forecast"), _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input))
        table = _spark_call(lambda: forecast_volumes(rows, at, params).toPandas())
    if table.empty:
        raise HistoryUsageError(
            f"no snapshots in {arguments.input} in the "
            f"{arguments.lookback_days:g} days before {at.isoformat()}"
        )
    table = table.sort_values(
        ["hoursToFull", "usedPercent"], ascending=[True, False], na_position="last"
    )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    table[list(FORECAST_COLUMNS)].to_csv(arguments.output, index=False)
    filling = int(table["hoursToFull"].notna().sum())
    print(
        f"wrote {arguments.output}: {len(table)} volumes, {filling} forecast to fill within "
        f"{arguments.horizon_days:g} days"
    )
    return 0


def run_report(arguments: argparse.Namespace) -> int:
    from spark_history.history_input import load_history
    from spark_history.report import write_report

    _check_input(arguments.input)
    if arguments.max_plotted < 1:
        raise HistoryUsageError("--max-plotted must be at least 1")
    at = _evaluation_time(arguments.at)
    session = _session(arguments)
    with _progress(session):
        rows = _spark_call(lambda: load_history(session, arguments.input).cache())
        if _spark_call(lambda: rows.where(rows.snapshotAt <= at).limit(1).count()) == 0:
            raise HistoryUsageError(f"no snapshots in {arguments.input} before {at.isoformat()}")
        files = _spark_call(
            lambda: write_report(
                rows,
                at,
                arguments.output_dir,
                forecast_params=_forecast_params(arguments),
                tuning=_tuning_params(arguments),
                max_plotted=arguments.max_plotted,
            )
        )
    print(f"wrote {files.html} (and forecast.csv, thresholds.csv, balance.csv, summary.json)")
    return 0


def _forecast_params(arguments: argparse.Namespace) -> ForecastParams:
    from spark_history.envelope_forecast import ForecastParams

    return ForecastParams(
        lookback_hours=arguments.lookback_days * 24.0, horizon_hours=arguments.horizon_days * 24.0
    )


def _tuning_params(arguments: argparse.Namespace) -> TuningParams:
    from spark_history.thresholds import DEFAULT_HARD_GRID, DEFAULT_SOFT_GRID, TuningParams

    params = TuningParams(
        soft_grid=arguments.soft_grid or DEFAULT_SOFT_GRID,
        hard_grid=arguments.hard_grid or DEFAULT_HARD_GRID,
        min_warning_hours=arguments.min_warning_hours,
    )
    if not params.candidates():
        raise HistoryUsageError("no candidate: every soft limit must exceed some hard limit")
    return params


def _evaluation_time(text: str | None) -> datetime:
    """``--at`` as an aware datetime (now when absent); a bad value is a usage error."""
    if text is None:
        return datetime.now(UTC)
    try:
        return iso_instant(text)
    except argparse.ArgumentTypeError as error:
        raise HistoryUsageError(f"--at: {error}") from None


def _check_input(path: Path) -> None:
    if not path.exists():
        raise HistoryUsageError(f"input {path} does not exist")


def _session(arguments: argparse.Namespace, kafka: bool = False) -> SparkSession:
    from spark_history.connector import ensure_connector_jars
    from spark_history.session import SessionSettings, build_session

    conf = dict(arguments.conf)
    jars = []
    # Under spark-submit (its JVM started this Python, PYSPARK_GATEWAY_PORT is set) the
    # classpath is fixed already: the connector comes from spark-submit's --jars/--packages.
    under_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    wants_connector = "spark.jars" not in conf and "spark.jars.packages" not in conf
    if kafka and wants_connector and not under_spark_submit:
        jars = ensure_connector_jars()
    settings = SessionSettings(master=arguments.master, conf=conf, jars=jars)
    return build_session(settings)


def _progress(session: SparkSession) -> StageProgress:
    from spark_history.session import StageProgress

    return StageProgress(session)


_T = TypeVar("_T")


def _spark_call(call: Callable[[], _T]) -> _T:
    """Run ``call``; Spark's complaints about the input become one-line usage errors."""
    from pyspark.errors import AnalysisException

    try:
        return call()
    except AnalysisException as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise HistoryUsageError(f"Spark cannot read the input: {first_line[:300]}") from None


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


def _percent_list(text: str) -> list[float]:
    values = []
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not a percentage") from None
        if not 0 <= value <= 100:
            raise argparse.ArgumentTypeError(f"{item!r} is not between 0 and 100")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("the list is empty")
    return values


def main(
    argv: Sequence[str] | None = None,
    default_master: str | None = "local[*]",
    prog: str = "volume-quota history",
) -> int:
    """Run the history actions standalone (``python -m spark_history.commands``, ``job.py``)."""
    from volume_quota.errors import UsageError

    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    actions = parser.add_subparsers(title="history commands", metavar="ACTION", required=True)
    add_history_actions(actions, default_master=default_master)
    arguments = parser.parse_args(argv)
    try:
        status: int = arguments.run(arguments)
    except UsageError as error:
        print(f"volume-quota: error: {error}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
