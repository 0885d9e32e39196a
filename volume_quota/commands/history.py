"""``volume-quota history``: the Spark history job's actions (ingest, forecast, report).

The actions themselves live with the job in ``spark_history.commands``, which spark-submit runs
too (``spark_history/job.py``); this module only adds them to the main command.
"""

from __future__ import annotations

import argparse

from spark_history.commands import register as register_history


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    register_history(subcommands)
