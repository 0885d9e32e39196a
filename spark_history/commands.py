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

from spark_history.analysis_settings import (
    AnalysisSettings,
    MechanismSettings,
    OverrideDatasetSettings,
    PanelSettings,
    ReplaySettings,
    UsageDatasetSettings,
)
from spark_history.backtest_command import add_backtest
from spark_history.command_runs import run_forecast, run_report
from spark_history.ingest_runs import run_compact, run_ingest
from spark_history.settings_flags import add_config_flag, add_options
from spark_history.source_settings import (
    CompactSettings,
    IngestSettings,
    KafkaSourceSettings,
    OverrideIngestSettings,
    UsageIngestSettings,
)

DESCRIPTION = """\
Mine the history of volume snapshots with Spark: ingest the snapshot topic (or JSONL files)
into a Parquet dataset (and compact its small files), forecast when each volume fills, and
report on limits, growth, data quality and balance.
"""

_SPARK_EPILOG = """\
Every option but the run's paths and Spark's is also VOLUME_QUOTA_<NAME> in the environment
and NAME in the --config TOML file (e.g. horizon_days = 30): flags override the environment,
which overrides the file. Spark runs in local mode (local[*]) unless --master says otherwise;
--conf key=value passes any Spark setting. Progress goes to stderr. Exit status: 0 on success,
2 for a bad option, a missing or unreadable input, or no data.
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
    add_options(parser, AnalysisSettings)


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
        "--bootstrap-servers broker:9093 \\\n      --tls-ca-file ca.pem --tls-cert-file "
        "cert.pem --tls-key-file key.pem --checkpoint ck --output history\n\n" + _SPARK_EPILOG,
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
    add_options(parser, IngestSettings, only=frozenset({"compact_min_files"}))
    kafka = parser.add_argument_group("Kafka (--source kafka)")
    add_options(kafka, KafkaSourceSettings)
    usage = parser.add_argument_group(
        "topic usage (also ingest the sidecars' usage documents into a second dataset)"
    )
    add_options(usage, UsageIngestSettings)
    overrides = parser.add_argument_group(
        "operator overrides (also ingest the override topic's records into a dataset)"
    )
    add_options(overrides, OverrideIngestSettings)
    add_config_flag(parser)
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
    add_options(parser, CompactSettings)
    add_config_flag(parser)
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
    add_options(parser, UsageDatasetSettings)
    add_options(parser, MechanismSettings)
    add_config_flag(parser)
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
    add_options(parser, ReplaySettings)
    add_options(parser, PanelSettings)
    add_options(parser, UsageDatasetSettings)
    overrides = parser.add_argument_group(
        "operator overrides (the limit replay follows them, judged as the decider judges them)"
    )
    add_options(overrides, OverrideDatasetSettings)
    add_config_flag(parser)
    _spark_options(parser, default_master)
    parser.set_defaults(run=run_report)


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


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
        for problem in error.problems or (str(error),):
            print(f"volume-quota: error: {problem}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
