"""The live view renders every part the issue asks for (pure: a View in, text out)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

from rich.console import Console

from consumer.status_report import VolumeStatus
from schemas.decision import (
    DecisionReason,
    QuotaDecision,
    QuotaState,
    ReasonKind,
    ReasonTopic,
)
from volume_quota.demo.loop import filling_topics
from volume_quota.demo.output import JsonLines, LiveScreen
from volume_quota.demo.screen import ProducerView, View, render

MIB = 1024 * 1024
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


def decision() -> QuotaDecision:
    return QuotaDecision(
        decided_at=NOW,
        valid_until=NOW + timedelta(seconds=10),
        state=QuotaState.THROTTLE,
        throttle_factor=0.42,
        caused_by_missing_data=False,
        reasons=[
            DecisionReason(
                kind=ReasonKind.LIMIT,
                broker_id=2,
                state=QuotaState.THROTTLE,
                throttle_factor=0.42,
                volume_name="/dev/vda",
                top_topics=[
                    ReasonTopic(
                        topic="volume-quota-demo",
                        growth_bytes=300 * MIB,
                        growth_seconds=40,
                        bytes=900 * MIB,
                    ),
                    ReasonTopic(topic="clicks", growth_bytes=MIB, growth_seconds=40, bytes=MIB),
                ],
                detail="broker 2 volume /dev/vda: between the soft and the hard limit: top "
                "growth volume-quota-demo +300.0 MiB/40s (900.0 MiB), clicks +1.0 MiB/40s "
                "(1.0 MiB)",
            )
        ],
    )


def volume(broker: int, state: QuotaState) -> VolumeStatus:
    return VolumeStatus(
        broker_id=broker,
        broker_live=True,
        volume_name="/dev/vda",
        capacity_bytes=100 * 1024 * MIB,
        free_bytes=3 * 1024 * MIB,
        free_percent=3.0,
        soft_threshold_bytes=3.2 * 1024 * MIB,
        hard_threshold_bytes=2.8 * 1024 * MIB,
        state=state,
        throttle_factor=0.42 if state is QuotaState.THROTTLE else 1.0,
        snapshot_age_seconds=1.0,
    )


def view(**overrides: object) -> View:
    fields: dict[str, object] = {
        "elapsed": 61.0,
        "phase": "THROTTLE",
        "narration": "THROTTLE: broker 2 is past its soft limit.",
        "decision": decision(),
        "brokers_agreeing": 3,
        "broker_count": 3,
        "volumes": [volume(2, QuotaState.THROTTLE), volume(0, QuotaState.OPEN)],
        "producers": [ProducerView("app-a", 0, 0.5 * MIB, [MIB, 0.75 * MIB, 0.5 * MIB])],
        "base_rate": MIB,
        "pause_rate": 128 * 1024,
        "filesystem_note": "All 3 brokers' log dirs share one filesystem.",
        "log_file": "/tmp/volume-quota-demo-x/demo.log",
        "status_command": "volume-quota status --topics --config /tmp/volume-quota-demo-x/s.toml",
        "filled_bytes": 200 * MIB,
        "timings": {"OPEN": 20.0, "FILL": 9.5},
    }
    fields.update(overrides)
    return View(**fields)  # type: ignore[arg-type]


def text_of(frame: View) -> str:
    console = Console(file=io.StringIO(), width=140, record=True, color_system=None)
    console.print(render(frame))
    return console.export_text()


def test_a_frame_shows_volumes_decision_rates_narration_and_timings() -> None:
    text = text_of(view())
    assert "THROTTLE  throttle factor 0.420" in text
    assert "the same on 3 of 3 brokers' decision files" in text
    assert "broker 2 volume /dev/vda: between the soft and the hard limit" in text
    assert (
        "filling broker 2's /dev/vda: volume-quota-demo +300.0 MiB/40s (900.0 MiB), "
        "clicks +1.0 MiB/40s (1.0 MiB)"
    ) in text
    assert text.count("+300.0 MiB/40s") == 1  # named once, on its own line
    assert "3.2 GiB" in text
    assert "2.8 GiB" in text
    assert "User:app-a" in text
    assert "512 KiB/s" in text
    assert "50 %" in text
    assert "▇▅▃" in text  # the sparkline: 1, 0.75 and 0.5 of base (top 1.2 x base)
    assert "share one filesystem" in text
    assert "THROTTLE: broker 2 is past its soft limit." in text
    assert "OPEN 20.0 s" in text
    assert "FILL 9.5 s" in text
    assert "bulk load written so far: 200.0 MiB" in text
    assert "log: /tmp/volume-quota-demo-x/demo.log" in text
    status = "volume-quota status --topics --config /tmp/volume-quota-demo-x/s.toml"
    assert f"every topic: {status}" in text
    assert text.index("0 │ /dev/vda") < text.index("2 │ /dev/vda")  # brokers in order


def test_watch_only_frames_have_no_producer_table_and_wait_for_snapshots() -> None:
    text = text_of(view(producers=[], volumes=[], decision=None, timings={}))
    assert "principal" not in text
    assert "waiting for the first snapshots" in text
    assert "no decision file yet" in text


def test_json_lines_are_one_object_per_line_with_the_time(capsys: object) -> None:
    output = JsonLines(lambda: 12.345)
    output.event("phase", phase="PAUSE", text="PAUSE: ...")
    output.frame(view)  # machine output has no screen
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    lines = captured.out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"event": "phase", "t": 12.35, "phase": "PAUSE", "text": "PAUSE: ..."}
    ]


def test_the_live_screen_prints_only_the_story_events_above_the_view() -> None:
    buffer = io.StringIO()
    screen = LiveScreen(Console(file=buffer, width=120, color_system=None))
    screen.event("sample", text="not shown")
    screen.event("phase", text="PAUSE: shown")
    screen.frame(view)
    screen.close()
    screen.event("error", text="the demo failed: broker 1 did not serve")
    assert "not shown" not in buffer.getvalue()
    assert "PAUSE: shown" in buffer.getvalue()
    assert "the demo failed: broker 1 did not serve" in buffer.getvalue()
    assert "User:app-a" in buffer.getvalue()


def test_json_samples_name_the_topics_the_decision_names() -> None:
    assert filling_topics(decision()) == ["volume-quota-demo", "clicks"]
    assert filling_topics(None) == []
