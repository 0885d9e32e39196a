"""The demo's I/O shell: start the cluster, sidecars and clients; tear everything down.

Everything lives in one temporary directory (Kafka's data, certificates, decision files, the
log file); leaving :func:`run_demo` in any way, Ctrl-C included, stops every process and
removes that directory.
"""

# ruff: noqa: PLC0415 - local_cluster (a checkout's test cluster) is imported only when run

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from volume_quota.demo import plan
from volume_quota.demo.clients import SnapshotWatcher, Worker, create_demo_topic, free_bytes
from volume_quota.demo.loop import Scene, run_scene
from volume_quota.demo.output import JsonLines, LiveScreen, Output
from volume_quota.demo.sidecars import SidecarProcess, check_sidecars, read_decision, stop_all
from volume_quota.demo.volumes import TmpfsVolumes

if TYPE_CHECKING:
    from local_cluster import LocalKafkaCluster

SIDECAR_READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DemoOptions:
    brokers: int
    scenario: str
    duration: float | None
    parent_dir: Path | None
    json_lines: bool
    log_file: Path | None
    plugin_jar: Path
    tmpfs: bool = False


@dataclass
class _Resources:
    """What has been started so far, so that teardown stops exactly that."""

    cluster: LocalKafkaCluster | None = None
    volumes: TmpfsVolumes | None = None
    sidecars: list[SidecarProcess] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_demo(options: DemoOptions) -> int:
    """Exit status: 0 (story complete or watch-only ended), 1 (a phase failed), 130 (Ctrl-C)."""
    parent = options.parent_dir or Path(tempfile.gettempdir())
    if options.scenario == "fill" and not options.tmpfs:
        plan.check_room(free_bytes(str(parent)))
    workdir = Path(tempfile.mkdtemp(prefix="volume-quota-demo-", dir=parent))
    log_file = options.log_file or workdir / "demo.log"
    started = time.monotonic()
    output: Output = (
        JsonLines(lambda: time.monotonic() - started) if options.json_lines else LiveScreen()
    )
    resources = _Resources()
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)
    with _logging_to(log_file):
        try:
            output.event(
                "started",
                dir=str(workdir),
                logFile=str(log_file),
                pid=os.getpid(),
                text=f"volume-quota demo: logs go to {log_file}; starting {options.brokers} "
                f"Kafka brokers under {workdir} (about 40 s) ...",
            )
            return _run(options, workdir, log_file, output, resources)
        except KeyboardInterrupt:
            output.event("interrupted", text="interrupted: stopping everything ...")
            return 130
        except Exception as error:  # one clear line on screen, the traceback in the log
            logging.getLogger(__name__).exception("the demo failed")
            output.event("error", message=str(error), text=f"the demo failed: {error}")
            return 1
        finally:
            for number in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not skip this
                signal.signal(number, signal.SIG_IGN)
            try:
                output.close()
                _teardown(resources)
                shutil.rmtree(workdir, ignore_errors=True)
                kept = f"; the log is kept in {log_file}" if options.log_file else ""
                output.event(
                    "stopped",
                    removed=str(workdir),
                    text=f"stopped every broker and sidecar and removed {workdir}{kept}",
                )
            finally:
                signal.signal(signal.SIGTERM, previous_sigterm)
                signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def _logging_to(log_file: Path) -> Iterator[None]:
    """Every log record of this process goes to the file, none to the terminal."""
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    saved = root.level, list(root.handlers)
    for existing in saved[1]:
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()
        for existing in saved[1]:
            root.addHandler(existing)
        root.setLevel(saved[0])
        logging.captureWarnings(False)


def _teardown(resources: _Resources) -> None:
    for worker in resources.workers:
        worker.stop(timeout_s=5)
    stop_all(resources.sidecars)
    if resources.cluster is not None:
        resources.cluster.stop()
    if resources.volumes is not None:
        resources.volumes.unmount()


def _run(
    options: DemoOptions, workdir: Path, log_file: Path, output: Output, resources: _Resources
) -> int:
    from local_cluster import SNAPSHOT_TOPIC, LocalKafkaCluster, grant_sidecar_acls

    decisions = [workdir / f"decision-{index}.json" for index in range(options.brokers)]
    log_dirs = None
    if options.tmpfs:
        resources.volumes = TmpfsVolumes(workdir, options.brokers)
        log_dirs = resources.volumes.mount()
    resources.cluster = cluster = LocalKafkaCluster(
        workdir / "kafka",
        broker_count=options.brokers,
        log_dirs=log_dirs,
        per_broker_properties=[plan.callback_properties(str(path)) for path in decisions],
        extra_classpath=[options.plugin_jar],
    )
    cluster.start()
    grant_sidecar_acls(cluster)
    _grant_demo_acls(cluster, options.brokers)
    create_demo_topic(
        cluster.client_config("admin"), plan.DEMO_TOPIC, plan.topic_assignment(options.brokers)
    )
    breaching_dir = cluster.broker_files(options.brokers - 1).data_dirs[0]
    planner = plan.plan_limits if options.scenario == "fill" else plan.plan_watch_limits
    limits = planner(free_bytes(str(breaching_dir)), options.brokers)
    for index, decision_file in enumerate(decisions):
        resources.sidecars.append(
            _sidecar(cluster, index, limits.brokers[index], decision_file, log_file)
        )
        resources.sidecars[-1].start()
    _wait_until_open(resources.sidecars)
    watcher = SnapshotWatcher(cluster.client_config("publisher"), SNAPSHOT_TOPIC, options.brokers)
    resources.workers.append(watcher)
    watcher.start()
    scene = Scene(
        cluster=cluster,
        scenario=options.scenario,
        duration=options.duration,
        limits=limits,
        decision_files=decisions,
        watcher=watcher,
        breaching_dir=str(breaching_dir),
        shared_filesystem=_shared(cluster, options.brokers),
        log_file=str(log_file),
        workers=resources.workers,
        sidecars=resources.sidecars,
        status_command=plan.status_command(_status_config(cluster, workdir)),
    )
    return run_scene(scene, output)


def _grant_demo_acls(cluster: LocalKafkaCluster, broker_count: int) -> None:
    """Each producer principal, and the bulk load, may WRITE the demo topic and nothing else;
    the sidecars (``User:publisher``) may also READ the usage topic they publish, so that their
    deciders name the topic filling a volume."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from local_cluster.acls import PUBLISHER_PRINCIPAL, USAGE_TOPIC, allow, create_acls

    names = [producer.name for producer in plan.plan_producers(broker_count)] + [plan.LOADER]
    for name in names:
        cluster.pki.issue(name)
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            plan.DEMO_TOPIC,
            ResourcePatternType.LITERAL,
            f"User:{name}",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        )
        for name in names
    ]
    bindings += allow(
        ResourceType.TOPIC,
        USAGE_TOPIC,
        PUBLISHER_PRINCIPAL,
        AclOperation.READ,
        AclOperation.DESCRIBE,
    )
    create_acls(cluster, bindings)


def _status_config(cluster: LocalKafkaCluster, workdir: Path) -> Path:
    """The ``--config`` file of the status command shown on the screen."""
    admin = cluster.identity_files("admin")
    path = workdir / "status.toml"
    path.write_text(plan.status_config(cluster.bootstrap_servers, admin.ca, admin.cert, admin.key))
    return path


def _sidecar(
    cluster: LocalKafkaCluster,
    index: int,
    limits: plan.BrokerLimits,
    decision_file: Path,
    log_file: Path,
) -> SidecarProcess:
    identity = cluster.identity_files("publisher")
    log_dirs = ",".join(str(path) for path in cluster.broker_files(index).data_dirs)
    arguments = [
        *plan.sidecar_arguments(index, limits, str(decision_file)),
        f"--log-dirs={log_dirs}",
        f"--bootstrap-servers={cluster.bootstrap_servers}",
        f"--tls-ca-file={identity.ca}",
        f"--tls-cert-file={identity.cert}",
        f"--tls-key-file={identity.key}",
    ]
    return SidecarProcess(arguments, decision_file, log_file, decision_file.parent)


def _wait_until_open(sidecars: list[SidecarProcess]) -> None:
    from schemas.decision import QuotaState

    deadline = time.monotonic() + SIDECAR_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        check_sidecars(sidecars)
        decisions = [read_decision(sidecar.decision_file) for sidecar in sidecars]
        if all(d is not None and d.state is QuotaState.OPEN for d in decisions):
            return
        time.sleep(0.25)
    raise RuntimeError(
        f"the sidecars did not decide OPEN within {SIDECAR_READY_TIMEOUT_S:.0f} s; see the log"
    )


def _shared(cluster: LocalKafkaCluster, broker_count: int) -> bool:
    devices = {
        path.stat().st_dev
        for index in range(broker_count)
        for path in cluster.broker_files(index).data_dirs
    }
    return len(devices) == 1
