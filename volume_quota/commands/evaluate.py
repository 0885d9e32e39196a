"""``volume-quota evaluate``: what would the brokers do with these snapshots?"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from consumer.cluster_state import ClusterState
from consumer.policy import DEFAULT_MAX_REASONS
from consumer.stream_replay import replay_snapshot_lines
from volume_quota.arguments import broker_id_list, iso_instant, positive_integer
from volume_quota.config.concerns import PolicySettings
from volume_quota.config.flags import add_setting_flags
from volume_quota.config.sources import load
from volume_quota.errors import UsageError

DESCRIPTION = """\
Replay snapshot messages and print the cluster decision as one JSON object: state
(OPEN | THROTTLE | PAUSE), throttleFactor (0..1, the multiplier on every producer's base quota)
and the reasons (which broker and volume drove it, by how much).

FILE holds snapshot values, one JSON object per line, in stream order (as read from the
snapshot topic); '-' reads standard input. For each broker the snapshot with the latest
snapshotAt wins. A bad line is reported on stderr with its line number and does not stop the
evaluation: that broker counts as unknown unless another line vouches for it.
"""

EPILOG = """\
examples:
  volume-quota evaluate snapshots.jsonl
  volume-quota evaluate snapshots.jsonl --active-brokers 0,1,2 \\
      --at 2026-11-22T12:00:00Z --stale-after 60 --on-missing PAUSE

exit status: 0 when a decision was printed (whatever its state), 2 for a bad option or an
unreadable file.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "evaluate",
        help="compute the cluster decision from a file of snapshots",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="JSONL file of snapshot values, or '-'")
    parser.add_argument(
        "--active-brokers",
        type=broker_id_list,
        metavar="IDS",
        help="comma-separated ids of the live brokers, e.g. 0,1,2 (default: every broker named "
        "in FILE); a live broker without a fresh valid snapshot is unknown",
    )
    parser.add_argument(
        "--at",
        type=iso_instant,
        metavar="TIME",
        help="evaluate at this ISO 8601 time with an offset, e.g. 2026-11-22T12:00:00Z "
        "(default: now)",
    )
    add_setting_flags(parser, PolicySettings)
    parser.add_argument(
        "--max-reasons",
        type=positive_integer,
        default=DEFAULT_MAX_REASONS,
        metavar="N",
        help="list at most N reasons (default: %(default)s)",
    )
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    flags = {name: getattr(arguments, name) for name in PolicySettings.model_fields}
    policy = load(PolicySettings, flags).decision_policy(max_reasons=arguments.max_reasons)
    state = ClusterState(policy)
    with _open_input(arguments.file) as stream:
        try:
            replay = replay_snapshot_lines(stream, state)
        except OSError as error:
            raise UsageError(f"cannot read {arguments.file}: {error.strerror or error}") from None
    for rejected in replay.rejected:
        print(
            f"{arguments.file}:{rejected.line_number}: skipped: {rejected.rejection.describe()}",
            file=sys.stderr,
        )
    live = arguments.active_brokers if arguments.active_brokers is not None else replay.brokers_seen
    state.set_live_brokers(live)
    at = arguments.at or datetime.now(UTC)
    decision = state.decide(at)
    print(decision.model_dump_json(by_alias=True, exclude_none=True, indent=2))
    return 0


def _open_input(name: str) -> BinaryIO:
    if name == "-":
        return sys.stdin.buffer
    path = Path(name)
    try:
        return path.open("rb")
    except OSError as error:
        raise UsageError(f"cannot read {name}: {error.strerror or error}") from None
