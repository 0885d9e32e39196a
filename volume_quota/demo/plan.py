"""What the scripted demo sets up, as pure functions: limits, quotas, who writes where.

Without root every broker's log dir is on the user's filesystem, so the limits of the breaching
broker are set relative to the free space found at start: a few hundred MiB of Kafka records
move its decision from OPEN through THROTTLE to PAUSE, far from filling the disk. The other
brokers keep protective limits that only a really full disk would reach.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from consumer.reasons import human_bytes

MIB = 1024 * 1024
GIB = 1024 * MIB

MIN_FREE_TO_START = 2 * GIB
"""Refuse to start with less free space than this on the demo's filesystem."""
SOFT_GAP = 192 * MIB
"""The breaching broker throttles once this much less is free than at start."""
HARD_GAP = 576 * MIB
"""... and pauses once this much less is free."""
FILL_MARGIN = 64 * MIB
"""The bulk load stops this far past the hard limit (never more than its budget)."""
OTHER_SOFT_FREE = 512 * MIB
OTHER_HARD_FREE = 256 * MIB

BASE_RATE = 1 * MIB
"""volume.quota.produce.base.bytes.per.second: the OPEN quota per principal and broker."""
PAUSE_RATE = 128 * 1024
"""volume.quota.pause.bytes.per.second: the floor, 1/8 of base (three halvings away)."""
FILL_RATE = 16 * MIB
"""Pace of the bulk load: the THROTTLE zone takes about 25 s to cross."""

USAGE_INTERVAL_S = 5
"""How often each sidecar surveys its topics: the filling topic is named within seconds."""

DEMO_TOPIC = "volume-quota-demo"
LOADER = "bulk-loader"
PRODUCER_NAMES = ("app-a", "app-b", "app-c", "app-d", "app-e")
EXCLUDED_PRINCIPALS = ("publisher", "consumer", "admin", LOADER)


class NotEnoughSpaceError(ValueError):
    """The demo's filesystem has too little room to fill a few hundred MiB safely."""


@dataclass(frozen=True)
class BrokerLimits:
    """MinFreeBytes soft and hard limits of one broker's sidecar."""

    soft_free: int
    hard_free: int

    @property
    def soft_limit(self) -> str:
        return f"MinFreeBytes:{self.soft_free}"

    @property
    def hard_limit(self) -> str:
        return f"MinFreeBytes:{self.hard_free}"


@dataclass(frozen=True)
class DemoLimits:
    """Every broker's limits, which broker breaches, and how much the bulk load may write."""

    brokers: tuple[BrokerLimits, ...]
    breaching_broker: int
    free_at_start: int
    fill_budget: int

    @property
    def tight(self) -> BrokerLimits:
        return self.brokers[self.breaching_broker]


def check_room(free_bytes: int) -> None:
    """Raise :class:`NotEnoughSpaceError` (one clear line) when the filesystem is too full."""
    if free_bytes < MIN_FREE_TO_START:
        raise NotEnoughSpaceError(
            f"the demo needs {human_bytes(MIN_FREE_TO_START)} free on its filesystem to fill "
            f"a few hundred MiB safely; only {human_bytes(free_bytes)} is free "
            "(use --dir to put it elsewhere)"
        )


def plan_limits(free_at_start: int, broker_count: int) -> DemoLimits:
    """Tight limits for the last broker, relative to ``free_at_start``; loose ones for others."""
    check_room(free_at_start)
    breaching = broker_count - 1
    tight = BrokerLimits(soft_free=free_at_start - SOFT_GAP, hard_free=free_at_start - HARD_GAP)
    loose = BrokerLimits(soft_free=OTHER_SOFT_FREE, hard_free=OTHER_HARD_FREE)
    return DemoLimits(
        brokers=tuple(tight if index == breaching else loose for index in range(broker_count)),
        breaching_broker=breaching,
        free_at_start=free_at_start,
        fill_budget=HARD_GAP + 2 * FILL_MARGIN,
    )


def plan_watch_limits(free_at_start: int, broker_count: int) -> DemoLimits:
    """Watch-only mode writes nothing: every broker keeps the protective limits."""
    loose = BrokerLimits(soft_free=OTHER_SOFT_FREE, hard_free=OTHER_HARD_FREE)
    return DemoLimits(
        brokers=(loose,) * broker_count,
        breaching_broker=broker_count - 1,
        free_at_start=free_at_start,
        fill_budget=0,
    )


def fill_should_stop(limits: DemoLimits, free_now: int, written: int) -> bool:
    """The bulk load stops at the hard limit plus a margin, and never writes past its budget."""
    return free_now <= limits.tight.hard_free - FILL_MARGIN or written >= limits.fill_budget


@dataclass(frozen=True)
class ProducerPlan:
    """One producer: its principal (certificate CN) and the broker leading its partition."""

    name: str
    partition: int

    @property
    def broker(self) -> int:
        return self.partition  # partition i is led by broker i (replica assignment [[i]])


def plan_producers(broker_count: int) -> tuple[ProducerPlan, ...]:
    """One producer per broker, at least two: the quota is per principal and per broker."""
    count = max(2, broker_count)
    return tuple(
        ProducerPlan(PRODUCER_NAMES[index], index % broker_count) for index in range(count)
    )


def topic_assignment(broker_count: int) -> list[int]:
    """The demo topic's leaders: partition i on broker i for the producers, and one more
    partition on the breaching broker for the bulk load (so it does not queue behind it)."""
    return [*range(broker_count), broker_count - 1]


def loader_partition(broker_count: int) -> int:
    return broker_count


def callback_properties(decision_file: str) -> dict[str, str]:
    """Broker properties: the quota callback (documented keys only) and fast segment cleanup."""
    return {
        "client.quota.callback.class": "io.volumequota.broker.VolumeQuotaCallback",
        "volume.quota.decision.path": decision_file,
        "volume.quota.produce.base.bytes.per.second": str(BASE_RATE),
        "volume.quota.pause.bytes.per.second": str(PAUSE_RATE),
        "volume.quota.excluded.principals": ";".join(
            f"User:{name}" for name in EXCLUDED_PRINCIPALS
        ),
        "volume.quota.on.missing": "PAUSE",
        "volume.quota.reload.interval.ms": "250",
        # Segments past DeleteRecords' new log start offset leave the disk within seconds.
        "log.retention.check.interval.ms": "1000",
        "log.segment.delete.delay.ms": "1000",
    }


def status_config(bootstrap_servers: str, ca: Path, cert: Path, key: Path) -> str:
    """A ``--config`` TOML file that connects ``volume-quota status`` to the demo cluster (as its
    admin, who may describe every topic's retention)."""
    values = {
        "bootstrap_servers": bootstrap_servers,
        "tls_ca_file": str(ca),
        "tls_cert_file": str(cert),
        "tls_key_file": str(key),
    }
    lines = [f"{name} = {json.dumps(value)}" for name, value in values.items()]
    return "\n".join([*lines, "tls_verify_hostname = false", ""])


def status_command(config_file: Path) -> str:
    """What to run, beside the demo, to see which topics fill each volume."""
    return f"volume-quota status --topics --config {config_file}"


def sidecar_arguments(broker_id: int, limits: BrokerLimits, decision_file: str) -> list[str]:
    """`volume-quota sidecar` flags that are the same on every machine (no addresses, no TLS)."""
    return [
        f"--broker-id={broker_id}",
        f"--soft-limit={limits.soft_limit}",
        f"--hard-limit={limits.hard_limit}",
        f"--decision-file={decision_file}",
        "--sample-interval=1s",
        "--heartbeat-interval=2s",
        f"--usage-interval={USAGE_INTERVAL_S}s",
        "--change-threshold-percent=0",
        "--stale-after=10s",
        "--decision-valid-for=10s",
        "--readiness-max-age=10s",
        "--live-broker-refresh-interval=1s",
        "--metrics-host=127.0.0.1",
        "--metrics-port=0",
        "--no-tls-verify-hostname",
    ]
