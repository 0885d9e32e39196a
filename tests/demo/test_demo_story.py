"""README's first command, end to end: the scripted demo on real brokers, from its JSON lines.

Real parts only: a 3-node Kafka cluster (mTLS, ACLs) with the quota callback loaded, one
`volume-quota sidecar` process per broker, producers writing real records. As root the demo's
directory sits on a tmpfs of its own, so that other writers on the machine (CI runs in parallel)
cannot move the shared free space the demo's limits are relative to.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.demo.demo_process import (
    demo_command,
    demo_filesystem,
    descendants,
    in_order,
    of_kind,
    parse_events,
    processes_mentioning,
)
from volume_quota.demo.plan import BASE_RATE, DEMO_TOPIC, PAUSE_RATE

pytestmark = pytest.mark.real_broker

STORY_TIMEOUT_S = 240


def test_the_scripted_demo_fills_throttles_pauses_and_recovers(tmp_path: Path) -> None:
    with demo_filesystem(tmp_path / "fs") as parent:
        started = time.monotonic()
        result = subprocess.run(
            demo_command(parent, tmp_path / "demo.log"),
            capture_output=True,
            text=True,
            timeout=STORY_TIMEOUT_S,
            check=False,
        )
        took = time.monotonic() - started
        log = (tmp_path / "demo.log").read_text()[-4000:]
        assert result.returncode == 0, f"{result.stderr[-2000:]}\n--- log:\n{log}"
        assert result.stderr == "", "nothing but the events may reach the terminal"
        assert list(parent.iterdir()) == [], "the demo's directory must be gone"
    events = parse_events(result.stdout)
    summary = of_kind(events, "summary")[-1]
    assert summary["result"] == "ok", summary
    assert summary["failedRecords"] == 0
    decisions = [event["state"] for event in of_kind(events, "decision")]
    assert in_order(decisions, ["OPEN", "THROTTLE", "PAUSE", "OPEN"]), decisions
    assert decisions[0] == "OPEN", decisions
    assert decisions[-1] == "OPEN", decisions

    agreed = [set(sample["brokers"]) for sample in of_kind(events, "sample")]
    everywhere = {states.pop() for states in agreed if len(states) == 1}
    assert everywhere >= {"OPEN", "THROTTLE", "PAUSE"}, "every broker's decision file agrees"

    phases = [event["phase"] for event in of_kind(events, "phase")]
    assert phases == ["OPEN", "FILL", "THROTTLE", "PAUSE", "RECOVERY", "DONE"]
    base, paused, back = summary["baseRates"], summary["pausedRates"], summary["recoveredRates"]
    assert len(base) >= 2
    for name, rate in base.items():
        assert 0.7 * BASE_RATE <= rate <= 1.3 * BASE_RATE, (name, rate)
        assert paused[name] < 2.5 * PAUSE_RATE, (name, paused[name])
        assert back[name] >= 0.9 * rate, (name, back[name], rate)

    past_limits = [s for s in of_kind(events, "sample") if s["decision"] in ("THROTTLE", "PAUSE")]
    named = {name for sample in past_limits for name in sample["topics"]}
    assert DEMO_TOPIC in named, "the decision names the topic filling broker 2's volume"

    throttled = [s for s in of_kind(events, "sample") if s["decision"] == "THROTTLE"]
    factors = [s["factor"] for s in throttled if s["phase"] == "THROTTLE"]
    assert factors[0] > 0.6, "the factor falls through the THROTTLE zone"
    assert factors[-1] < 0.3, "the factor falls through the THROTTLE zone"
    for name, rate in base.items():  # the producers' rates fall with it, on every broker
        assert min(s["rates"][name] for s in throttled) < 0.5 * rate, name
    print(f"demo took {took:.0f} s; phases {summary['timings']}")


def test_ctrl_c_in_the_pause_phase_leaves_no_process_directory_or_data(tmp_path: Path) -> None:
    with demo_filesystem(tmp_path / "fs") as parent:
        demo = subprocess.Popen(
            demo_command(parent, tmp_path / "demo.log"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # only the demo gets the SIGINT, as a hard case
        )
        assert demo.stdout is not None
        lines, workdir, children, status_command = [], None, [], None
        deadline = time.monotonic() + STORY_TIMEOUT_S
        for line in demo.stdout:
            lines.append(line)
            events = parse_events(line)
            if events and events[0]["event"] == "started":
                workdir = events[0]["dir"]
            if events and events[0]["event"] == "notice":
                status_command = events[0]["statusCommand"]
            if events and events[0].get("phase") == "PAUSE":
                break
            assert time.monotonic() < deadline, "no PAUSE phase in time"
        else:
            pytest.fail("the demo ended before PAUSE:\n" + "".join(lines[-20:]))
        assert workdir is not None
        assert status_command is not None
        _the_status_command_names_the_filling_topic(status_command)
        children = descendants(demo.pid)
        assert len(children) >= 6, "three brokers and three sidecars"
        assert Path(workdir).exists()
        demo.send_signal(signal.SIGINT)
        _, stderr = demo.communicate(timeout=120)
        assert demo.returncode == 130, stderr[-2000:]
        assert stderr == ""
        _gone, alive = psutil.wait_procs(children, timeout=5)
        assert alive == [], [p.pid for p in alive]
        assert processes_mentioning(workdir) == []
        assert not Path(workdir).exists()
        assert list(parent.iterdir()) == [], "no demo data may remain"


def _the_status_command_names_the_filling_topic(command: str) -> None:
    """README's "Which topic is filling the disk?": the command the demo shows, run as shown."""
    assert command.startswith("volume-quota status --topics --config "), command
    result = subprocess.run(
        shlex.split(command), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    paused = result.stdout.split("top topics of broker 2 ")[1].split("\n\n")[0]
    assert "(PAUSE)" in paused.splitlines()[0], paused
    first = paused.splitlines()[2]
    assert first.startswith(f"{DEMO_TOPIC} "), paused
    assert re.search(r" \+[0-9.]+ MiB/[0-9]+s ", first), paused
