"""``volume-quota retire``: forget a decommissioned broker by writing its tombstone."""

from __future__ import annotations

import argparse
import sys

from volume_quota.config import PublishSettings, settings_from_arguments
from volume_quota.config.commands import ConnectedSettings
from volume_quota.config.flags import add_config_flag, add_setting_flags
from volume_quota.logging_setup import configure_logging, get_logger
from volume_quota.one_shot import PublicationFailedError, retire_broker

DESCRIPTION = """\
Write a tombstone (a null value) for --broker-id to the snapshot topic. Consumers drop that
broker's last snapshot at once, so a broker removed while past a limit stops holding the cluster
in THROTTLE or PAUSE, and compaction later deletes its key. Stop the broker's publisher first:
a running publisher would publish again on its next heartbeat.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "retire",
        help="write a tombstone for a decommissioned broker",
        description=DESCRIPTION,
        epilog="exit status: 0 when the tombstone was written, 1 when Kafka did not take it, "
        "2 for bad configuration.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_flag(parser)
    add_setting_flags(parser, ConnectedSettings)
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(PublishSettings, arguments)
    configure_logging(settings.log_level)
    try:
        broker_id = retire_broker(settings)
    except PublicationFailedError as error:
        print(f"volume-quota: retire failed: {error}", file=sys.stderr)
        return 1
    get_logger("volume_quota.retire").info(
        "broker retired", broker_id=broker_id, topic=settings.topic
    )
    return 0
