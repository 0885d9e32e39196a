"""``volume-quota history ...``: the history job's command group (ingest, compact, forecast,
report).

Registered into the main CLI with :func:`register`; ``spark_history/job.py`` registers the same
subcommands for spark-submit. Nothing heavy is imported here: pyspark, pandas and matplotlib
load inside the run functions, so ``volume-quota --help`` stays fast.
"""

# ruff: noqa: PLC0415 - imports are lazy on purpose: `volume-quota --help` must not load Spark

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from spark_history import usage_options
from spark_history.backtest_command import add_backtest
from spark_history.command_runs import run_compact, run_forecast, run_ingest, run_report
from volume_quota.arguments import positive_number

DESCRIPTION = """\
Mine the history of volume snapshots with Spark: ingest the snapshot topic (or JSONL files)
into a Parquet dataset (and compact its small files), forecast when each volume fills, and
report on limits, growth, data quality and balance.
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
    """The ingest, compact, forecast, report and backtest subcommands (shared with ``job.py``)."""
    _add_ingest(actions, default_master)
    _add_compact(actions, default_master)
    _add_forecast(actions, default_master)
    _add_report(actions, default_master)
    add_backtest(actions, default_master)


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
        metavar="URI",
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
    parser.add_argument(
        "--retired-after-hours",
        type=positive_number,
        default=24.0,
        metavar="HOURS",
        help="a volume without a snapshot for longer than this before --at is flagged "
        "retired and not forecast (default: %(default)g)",
    )
    parser.add_argument(
        "--history-bucket",
        metavar="DURATION",
        help="cut the history into buckets this wide, e.g. 1h or 1m; every duration of the "
        "forecast (days, hours) then counts buckets as hours, so a cluster run in compressed "
        "time is read like real time (default: VOLUME_QUOTA_HISTORY_BUCKET, else 1h)",
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
    parser.add_argument("--input", metavar="URI", help="jsonl: a JSONL file or a directory of them")
    parser.add_argument(
        "--checkpoint",
        required=True,
        metavar="URI",
        help="where progress is kept; one per output dataset and source",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="URI",
        help="the Parquet dataset to append to",
    )
    parser.add_argument(
        "--compact-min-files",
        type=int,
        metavar="N",
        help="after the run, compact every date partition holding at least N files (N >= 2; "
        "default: no compaction); see 'history compact'",
    )
    _kafka_options(parser)
    usage_options.add_usage_ingest_options(parser)
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_ingest)


def _add_compact(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "compact",
        help="merge the small files hourly ingests leave in each date partition",
        description="Rewrite every date partition of the dataset holding at least --min-files "
        "files into few files, and the dataset's _spark_metadata log with them. The new files "
        "are staged and recorded in a journal before any file a reader sees changes, and an "
        "interrupted compaction is finished by the next one: no row is ever lost (a reader "
        "may see some rows twice until then). Do not run it while an ingest writes to the "
        "same dataset: use 'history ingest "
        "--compact-min-files N' to compact right after each ingest instead.",
        epilog="example:\n  volume-quota history compact --dataset hdfs:///history "
        "--min-files 12\n\n" + _SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dataset", required=True, metavar="URI", help="the dataset to compact")
    parser.add_argument(
        "--min-files", type=int, default=2, metavar="N", help="compact the partitions "
        "holding at least N files (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--max-rows-per-file", type=int, default=5_000_000, metavar="ROWS",
        help="split a partition's rows into files of at most ROWS rows (default: %(default)s)",
    )  # fmt: skip
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_compact)


def _add_forecast(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "forecast",
        help="when will each volume fill? one CSV row per volume",
        description="Forecast, per volume, the growth trend (a least-squares line over the "
        "last 72 h) and the hours until full, with a band calibrated on the fleet's own "
        "backtests (split conformal; the reason column names it). hoursToFull is empty "
        "when the line does not reach capacity within the horizon.",
        epilog=_SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _analysis_options(parser)
    parser.add_argument(
        "--output",
        required=True,
        metavar="URI",
        help="the CSV file to write (e.g. "
        "file:///srv/f.csv, hdfs:///reports/f.csv, s3a://bucket/f.csv, or a path)",
    )
    parser.add_argument(
        "--prometheus-textfile",
        metavar="URI",
        help="also write hours to full as Prometheus metrics (node_exporter textfile "
        "format), e.g. /var/lib/node_exporter/textfile/volume_quota.prom",
    )
    usage_options.add_mechanism_options(parser)
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_forecast)


def _add_report(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], default_master: str | None
) -> None:
    parser = actions.add_parser(
        "report",
        help="one HTML report: forecasts, days until full, limit trade-offs, balance",
        description="Write report.html (self-contained, images embedded) and forecast.csv, "
        "thresholds.csv, incidents.csv, weekly_growth.csv, data_quality.csv, balance.csv, "
        "summary.json and hours_to_full.prom into the output directory.",
        epilog=_SPARK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _analysis_options(parser)
    parser.add_argument(
        "--output-dir", required=True, metavar="URI", help="directory for the report's files"
    )
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
    _replay_options(parser)
    parser.add_argument(
        "--max-plotted",
        type=int,
        default=12,
        metavar="N",
        help="plot the N volumes closest to full (default: %(default)s)",
    )
    _panel_options(parser)
    usage_options.add_report_options(parser)
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_report)


def _panel_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--growth-weeks",
        type=int,
        default=4,
        metavar="N",
        help="weeks of growth per broker in the report (reads N+1 weeks; default: %(default)s)",
    )
    parser.add_argument(
        "--max-clock-skew-seconds",
        type=positive_number,
        default=60.0,
        metavar="SECONDS",
        help="flag a broker whose median snapshotAt is further than this from the Kafka "
        "record timestamp of its messages (default: %(default)g)",
    )


def _kafka_options(parser: argparse.ArgumentParser) -> None:
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


def _replay_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--replay-days",
        type=positive_number,
        default=30.0,
        metavar="DAYS",
        help="history replayed for the limits (default: %(default)g)",
    )
    parser.add_argument(
        "--stale-after-minutes",
        type=positive_number,
        default=30.0,
        metavar="MINUTES",
        help="in the replay, a live broker whose newest snapshot is older is unknown "
        "(default: %(default)g; the history is sampled more coarsely than the topic)",
    )
    parser.add_argument(
        "--on-missing",
        choices=("PAUSE", "OPEN"),
        default="PAUSE",
        help="the consumer's action for unknown live brokers, in the replay (default: %(default)s)",
    )


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
