"""The decider follows the usage topic to name the topics filling a volume: where, and how old a
document may be."""

from __future__ import annotations

from volume_quota.config import DecideSettings
from volume_quota.config.commands import SidecarSettings
from volume_quota.config.sources import load
from volume_quota.daemons.decider import usage_stale_after

CONNECTION = {"bootstrap_servers": "127.0.0.1:9093"}


def test_a_decider_reads_the_usage_topic_and_trusts_three_default_intervals() -> None:
    settings = load(DecideSettings, {**CONNECTION, "usage_topic": "usage-elsewhere"})
    assert settings.usage_topic == "usage-elsewhere"
    assert usage_stale_after(settings) == 180.0


def test_a_sidecar_trusts_three_of_its_own_usage_intervals() -> None:
    settings = load(SidecarSettings, {**CONNECTION, "broker_id": 2, "usage_interval": 5})
    assert usage_stale_after(settings) == 15.0
