"""The ``volume-quota`` command: one entry point, one subcommand per job.

User mistakes end with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from volume_quota.commands import (
    cluster_agent,
    decide,
    demo,
    evaluate,
    history,
    override,
    publish,
    retire,
    sidecar,
    status,
)
from volume_quota.errors import UsageError

DESCRIPTION = """\
volume-quota keeps every Kafka broker from running out of disk by letting every broker see every
volume in the cluster: each broker's publisher writes its volume usage to a compacted topic, and
each broker's consumer turns all of them into one decision (OPEN, THROTTLE or PAUSE) that the
broker's quota callback applies to producers.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="volume-quota",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subcommands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in (
        evaluate,
        publish,
        decide,
        sidecar,
        cluster_agent,
        status,
        override,
        retire,
        history,
        demo,
    ):
        command.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    try:
        status: int = arguments.run(arguments)
    except UsageError as error:
        for problem in error.problems or (str(error),):
            print(f"volume-quota: error: {problem}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
