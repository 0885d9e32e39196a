"""``volume-quota override``: force OPEN or PAUSE on every broker for a bounded time."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.x509.oid import NameOID

from schemas.decision import QuotaState
from schemas.override import MAX_OVERRIDE_SECONDS, QuotaOverride
from volume_quota.config import settings_from_arguments
from volume_quota.config.commands import ConnectedSettings
from volume_quota.config.flags import add_config_flag, add_setting_flags
from volume_quota.durations import parse_duration
from volume_quota.errors import UsageError
from volume_quota.logging_setup import configure_logging
from volume_quota.one_shot import PublicationFailedError, write_override

DESCRIPTION = f"""\
An emergency switch that needs no restart: every decider reads the override from its own
compacted topic (--override-topic) within seconds and decides its state for every producer
until it expires (at most {MAX_OVERRIDE_SECONDS // 3600} h) or is cleared. Decisions say so in
their first reason, `volume-quota status` shows it, and each decider logs it and exports
volume_quota_override_active. Grant WRITE on the override topic to operators only.

The record (and the tombstone of --clear) is signed with the key of --tls-cert-file. Deciders
check it against their override_signers: with override_signatures=require an override not
signed by one of them is refused and never takes effect (status lists it), with warn it takes
effect marked unverified. Its setBy is the identity that matched (e.g. CN=alice), whatever the
record says. Its setAt is now: a decider refuses one further than override_max_clock_skew from
the record's Kafka timestamp, so this machine's clock must be right. A missing topic is created
compacted with message.timestamp.type=LogAppendTime (the broker's clock).
"""

EPILOG = """\
examples:
  volume-quota override --state OPEN --for 30m --reason "false alarm on broker 3, ticket 123" \\
      --bootstrap-servers kafka:9091 --tls-ca-file ca.crt \\
      --tls-cert-file operator.crt --tls-key-file operator.key
  volume-quota override --clear ...

exit status: 0 when written, 1 when Kafka did not take it, 2 for a bad option or configuration.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "override",
        help="force OPEN or PAUSE across the cluster for a bounded time (or --clear it)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--state", choices=("OPEN", "PAUSE"), help="the state to force")
    action.add_argument("--clear", action="store_true", help="end the override now")
    parser.add_argument(
        "--for", dest="duration", metavar="DURATION", help="how long, e.g. 30m (at most 24h)"
    )
    parser.add_argument("--reason", help="why: shown in every decision and log line")
    add_config_flag(parser)
    add_setting_flags(parser, ConnectedSettings)
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    settings = settings_from_arguments(ConnectedSettings, arguments)
    configure_logging(settings.log_level)
    override = None if arguments.clear else _override(arguments, settings)
    if settings.client_tls_files() is None:
        print(
            "volume-quota: warning: no --tls-cert-file, so the override is not signed: deciders "
            "with override_signatures=require refuse it",
            file=sys.stderr,
        )
    try:
        write_override(settings, None if override is None else override.to_json_bytes())
    except PublicationFailedError as error:
        print(f"volume-quota: override not written: {error}", file=sys.stderr)
        return 1
    print("override cleared" if override is None else override.to_json_bytes().decode())
    return 0


def _override(arguments: argparse.Namespace, settings: ConnectedSettings) -> QuotaOverride:
    problems = []
    if arguments.duration is None:
        problems.append("--for is required with --state (e.g. --for 30m)")
    if not arguments.reason or not arguments.reason.strip():
        problems.append("--reason is required with --state: every decision will show it")
    if problems:
        raise UsageError(*problems)
    try:
        seconds = parse_duration(arguments.duration)
    except ValueError as error:
        raise UsageError(f"--for: {error}") from None
    if not 0 < seconds <= MAX_OVERRIDE_SECONDS:
        raise UsageError(f"--for must be more than 0 and at most {MAX_OVERRIDE_SECONDS // 3600}h")
    now = datetime.now(UTC)
    return QuotaOverride(
        state=QuotaState(arguments.state),
        reason=arguments.reason.strip(),
        set_by=_operator(settings),
        set_at=now,
        expires_at=now + timedelta(seconds=seconds),
    )


def _operator(settings: ConnectedSettings) -> str:
    """Who sets it: the common name of the client certificate the command connects with, else
    (SASL_SSL without a certificate) the SCRAM user name."""
    files = settings.client_tls_files()
    if files is None:
        return settings.sasl_username or "unknown"
    certificate = x509.load_pem_x509_certificate(files.certificate_file.read_bytes())
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else certificate.subject.rfc4514_string()
