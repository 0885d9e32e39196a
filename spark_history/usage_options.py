"""The options of the topic usage history on ``history ingest`` and ``history forecast``
(``commands.py``); checked in ``command_runs.py``. Nothing heavy is imported here."""

from __future__ import annotations

import argparse

from schemas.usage import DEFAULT_USAGE_TOPIC


def add_usage_ingest_options(parser: argparse.ArgumentParser) -> None:
    usage = parser.add_argument_group(
        "topic usage (also ingest the sidecars' usage documents into a second dataset)"
    )
    usage.add_argument(
        "--usage-output",
        metavar="URI",
        help="the usage Parquet dataset to append to (default: usage is not ingested)",
    )
    usage.add_argument(
        "--usage-checkpoint",
        metavar="URI",
        help="where the usage ingest keeps its progress (required with --usage-output; not "
        "the snapshot checkpoint)",
    )
    usage.add_argument(
        "--usage-topic",
        default=DEFAULT_USAGE_TOPIC,
        metavar="NAME",
        help="kafka: the usage topic (default: %(default)s)",
    )
    usage.add_argument(
        "--usage-input",
        metavar="URI",
        help="jsonl: a JSONL file or a directory of them holding usage documents",
    )


def add_usage_dataset_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--usage-dataset",
        metavar="URI",
        help=f"the usage dataset written by 'history ingest --usage-output': {what}",
    )


def add_mechanism_options(parser: argparse.ArgumentParser) -> None:
    add_usage_dataset_option(
        parser, "also forecast each volume from its topics' retention (the mechanism forecast)"
    )
    parser.add_argument(
        "--mechanism-output",
        metavar="URI",
        help="the CSV file for the mechanism forecast, one row per volume with usage in the "
        "lookback window (required with --usage-dataset)",
    )


def add_report_options(parser: argparse.ArgumentParser) -> None:
    add_usage_dataset_option(
        parser, "also show the topics that grew the fleet and the volumes they fill"
    )
