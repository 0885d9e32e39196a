"""``volume-quota demo``: watch volume-quota slow, pause and release producers on a real cluster.

The logic lives in :mod:`volume_quota.demo`; this module only parses the command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from volume_quota.arguments import positive_seconds
from volume_quota.errors import UsageError

REPOSITORY = Path(__file__).resolve().parents[2]
PLUGIN_JAR = REPOSITORY / "deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar"

DESCRIPTION = """\
Watch volume-quota do its job, on real Kafka brokers started on 127.0.0.1 (Maven Central jars,
KRaft, mTLS, ACLs, the quota callback loaded) with one `volume-quota sidecar` per broker:

  OPEN      producers (one per principal) write at the base quota; their rates are measured
  FILL      a bulk load writes Kafka records into the last broker's log dir
  THROTTLE  past its soft limit: the factor falls and every producer slows, on every broker
  PAUSE     past its hard limit: producers drop to the pause floor (never zero)
  RECOVERY  DeleteRecords frees the space: OPEN again, rates come back

Without root all brokers share your filesystem; the limits are set relative to the free space
at start (a few hundred MiB of records move the decision) and the demo refuses to start with
less than 2 GiB free. Everything (data, certificates, logs) lives in one temporary directory,
removed on exit or Ctrl-C. --scenario none only starts the cluster and watches; as root,
--tmpfs gives every broker a volume of its own instead.
"""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "demo",
        help="a local cluster whose producers slow, pause and recover as a volume fills",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default: 3)")
    parser.add_argument(
        "--scenario",
        choices=("fill", "none"),
        default="fill",
        help="fill: the scripted story (default); none: start the cluster and watch only",
    )
    parser.add_argument(
        "--duration", type=positive_seconds, help="stop after this many seconds (default: never)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help="where to create the demo's temporary directory (default: the system's temp dir)",
    )
    parser.add_argument(
        "--tmpfs",
        action="store_true",
        help="root only: give each broker a tmpfs volume of its own (default: your filesystem)",
    )
    parser.add_argument(
        "--json-lines",
        action="store_true",
        help="print one JSON object per event, phase and sample instead of the live screen",
    )
    parser.add_argument(
        "--log-file",
        type=Path,
        help="write the log here and keep it (default: demo.log in the removed temporary dir)",
    )
    parser.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    if not 1 <= arguments.brokers <= 5:
        raise UsageError("--brokers must be between 1 and 5")
    if not PLUGIN_JAR.exists():
        raise UsageError(
            f"the quota callback is not built: run `mvn -q -B package` in deploy/broker-plugin "
            f"(expected {PLUGIN_JAR})"
        )
    try:
        import local_cluster  # noqa: F401, PLC0415 - a checkout's test cluster, only when run
    except ImportError:
        raise UsageError(
            "the demo needs the local Kafka cluster of a volume-quota checkout: "
            "pip install -e deploy/local (README.md's first command does it)"
        ) from None
    from volume_quota.demo.plan import NotEnoughSpaceError  # noqa: PLC0415 - rich loads only when run
    from volume_quota.demo.runner import DemoOptions, run_demo  # noqa: PLC0415
    from volume_quota.demo.volumes import TmpfsVolumes  # noqa: PLC0415

    refusal = TmpfsVolumes.check_allowed() if arguments.tmpfs else None
    if refusal is not None:
        raise UsageError(refusal)

    options = DemoOptions(
        brokers=arguments.brokers,
        scenario=arguments.scenario,
        duration=arguments.duration,
        parent_dir=arguments.dir,
        json_lines=arguments.json_lines,
        log_file=arguments.log_file,
        plugin_jar=PLUGIN_JAR,
        tmpfs=arguments.tmpfs,
    )
    try:
        return run_demo(options)
    except NotEnoughSpaceError as error:
        raise UsageError(str(error)) from None
