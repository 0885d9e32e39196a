"""The demo's limits maths and settings (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volume_quota.config.commands import StatusSettings
from volume_quota.config.sources import load
from volume_quota.demo import plan
from volume_quota.demo.plan import GIB, MIB


def test_a_filesystem_with_less_than_2_gib_free_is_refused_in_one_line() -> None:
    with pytest.raises(plan.NotEnoughSpaceError) as refused:
        plan.plan_limits(2 * GIB - 1, broker_count=3)
    message = str(refused.value)
    assert "\n" not in message
    assert "2.0 GiB" in message
    assert "--dir" in message


def test_the_last_broker_gets_limits_relative_to_the_free_space_at_start() -> None:
    free = 50 * GIB
    limits = plan.plan_limits(free, broker_count=3)
    assert limits.breaching_broker == 2
    assert limits.tight.soft_free == free - plan.SOFT_GAP
    assert limits.tight.hard_free == free - plan.HARD_GAP
    assert limits.tight.soft_limit == f"MinFreeBytes:{free - plan.SOFT_GAP}"
    for loose in limits.brokers[:2]:
        assert (loose.soft_free, loose.hard_free) == (512 * MIB, 256 * MIB)


def test_the_smallest_accepted_filesystem_still_keeps_a_gib_free_after_the_fill() -> None:
    free = plan.MIN_FREE_TO_START
    limits = plan.plan_limits(free, broker_count=1)
    assert limits.breaching_broker == 0
    assert free - limits.fill_budget >= GIB
    # the others' protective limits are never reached by the demo's own writes
    assert free - limits.fill_budget > plan.OTHER_SOFT_FREE


@pytest.mark.parametrize(
    ("free_now", "written", "stops"),
    [
        (10 * GIB - 100 * MIB, 100 * MIB, False),  # still above the hard limit
        (10 * GIB - plan.HARD_GAP - plan.FILL_MARGIN + 1, 600 * MIB, False),
        (10 * GIB - plan.HARD_GAP - plan.FILL_MARGIN, 600 * MIB, True),  # hard limit + margin
        (10 * GIB, plan.HARD_GAP + 2 * plan.FILL_MARGIN, True),  # the budget, whatever is free
    ],
)
def test_the_fill_stops_past_the_hard_limit_or_at_its_budget(
    free_now: int, written: int, stops: bool
) -> None:
    limits = plan.plan_limits(10 * GIB, broker_count=3)
    assert plan.fill_should_stop(limits, free_now, written) is stops


@pytest.mark.parametrize(
    ("brokers", "expected"),
    [(1, [("app-a", 0), ("app-b", 0)]), (3, [("app-a", 0), ("app-b", 1), ("app-c", 2)])],
)
def test_at_least_two_producers_one_per_broker(brokers: int, expected: list[object]) -> None:
    assert [(p.name, p.broker) for p in plan.plan_producers(brokers)] == expected


def test_the_bulk_load_has_its_own_partition_on_the_breaching_broker() -> None:
    assignment = plan.topic_assignment(3)
    assert assignment == [0, 1, 2, 2]
    assert assignment[plan.loader_partition(3)] == 2


def test_callback_properties_exclude_the_bulk_load_and_the_sidecar_only() -> None:
    properties = plan.callback_properties("/tmp/decision.json")
    excluded = properties["volume.quota.excluded.principals"].split(";")
    assert "User:bulk-loader" in excluded
    assert not any(name.startswith("User:app-") for name in excluded)
    assert int(properties["volume.quota.pause.bytes.per.second"]) * 8 == int(
        properties["volume.quota.produce.base.bytes.per.second"]
    )


def test_sidecar_arguments_publish_every_change_of_the_breaching_volume() -> None:
    arguments = plan.sidecar_arguments(2, plan.BrokerLimits(700, 300), "/tmp/d.json")
    assert "--broker-id=2" in arguments
    assert "--soft-limit=MinFreeBytes:700" in arguments
    assert "--hard-limit=MinFreeBytes:300" in arguments
    assert "--change-threshold-percent=0" in arguments


def test_sidecars_survey_their_topics_often_enough_to_name_the_filling_one() -> None:
    arguments = plan.sidecar_arguments(2, plan.BrokerLimits(700, 300), "/tmp/d.json")
    assert f"--usage-interval={plan.USAGE_INTERVAL_S:g}s" in arguments
    assert plan.USAGE_INTERVAL_S <= 5


def test_watch_only_mode_keeps_protective_limits_everywhere_and_writes_nothing() -> None:
    limits = plan.plan_watch_limits(GIB, broker_count=2)  # no room check: nothing is written
    assert limits.brokers == (plan.BrokerLimits(512 * MIB, 256 * MIB),) * 2
    assert limits.fill_budget == 0


def test_the_status_config_connects_status_as_the_demo_admin(tmp_path: Path) -> None:
    text = plan.status_config(
        "127.0.0.1:1,127.0.0.1:2", Path("/d/ca.pem"), Path("/d/cert.pem"), Path("/d/key.pem")
    )
    path = tmp_path / "status.toml"
    path.write_text(text)
    settings = load(StatusSettings, {}, path)
    assert settings.bootstrap_servers == "127.0.0.1:1,127.0.0.1:2"
    assert settings.tls_cert_file == Path("/d/cert.pem")
    assert settings.tls_verify_hostname is False
    assert plan.status_command(path) == f"volume-quota status --topics --config {path}"
