"""``volume-quota evaluate`` end to end: through ``main`` in-process and once as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.snapshot_factory import snapshot_line, volume
from volume_quota.cli import main

AT = "2026-11-22T12:00:30Z"


@pytest.fixture
def snapshots_file(tmp_path: Path) -> Path:
    path = tmp_path / "snapshots.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                snapshot_line(broker_id=0, volumes=[volume("a", 1000, 100)]),
                snapshot_line(broker_id=1, volumes=[volume("a", 1000, 850)]),  # 150 free: 0.5
                snapshot_line(broker_id=2, volumes=[volume("a", 1000, 100)]),
            ]
        )
        + b"\n"
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out else {}), captured.err


def test_throttle_decision_is_printed_as_one_json_object(
    snapshots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, decision, errors = run(capsys, "evaluate", str(snapshots_file), "--at", AT)
    assert status == 0, errors
    assert decision["state"] == "THROTTLE"
    assert decision["throttleFactor"] == pytest.approx(0.5)
    reasons = decision["reasons"]
    assert isinstance(reasons, list)
    assert reasons[0]["brokerId"] == 1


def test_active_broker_without_snapshot_pauses_and_open_ignores_it(
    snapshots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, paused, _ = run(
        capsys, "evaluate", str(snapshots_file), "--at", AT, "--active-brokers", "0,1,2,3"
    )
    assert (paused["state"], paused["causedByMissingData"]) == ("PAUSE", True)
    assert paused["unknownBrokers"] == [3]
    _, ignored, _ = run(
        capsys,
        "evaluate",
        str(snapshots_file),
        "--at",
        AT,
        "--active-brokers",
        "0,1,2,3",
        "--on-missing",
        "OPEN",
    )
    assert ignored["state"] == "THROTTLE"


def test_stale_after_makes_old_snapshots_unknown(
    snapshots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, decision, _ = run(capsys, "evaluate", str(snapshots_file), "--at", AT, "--stale-after", "10")
    assert decision["state"] == "PAUSE"
    assert decision["unknownBrokers"] == [0, 1, 2]


def test_bad_line_is_reported_with_its_number_and_its_broker_counts_as_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.jsonl"
    bad = snapshot_line(broker_id=5).replace(b'"consumed": 0', b'"consumed": 5000')
    path.write_bytes(snapshot_line(broker_id=0) + b"\n" + bad + b"\n")
    status, decision, errors = run(capsys, "evaluate", str(path), "--at", AT)
    assert status == 0
    assert f"{path}:2: skipped: invalid_field" in errors
    assert decision["unknownBrokers"] == [5]
    assert decision["state"] == "PAUSE"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "/no/such/file.jsonl"], "cannot read /no/such/file.jsonl"),
        (["evaluate", "FILE", "--at", "2026-11-22T12:00:00"], "has no offset"),
        (["evaluate", "FILE", "--at", "noon"], "not an ISO 8601 time"),
        (["evaluate", "FILE", "--active-brokers", "0,x"], "'x' is not a broker id"),
        (["evaluate", "FILE", "--stale-after", "-3"], "stale_after (--stale-after"),
        (["evaluate", "FILE", "--on-missing", "MAYBE"], "should be 'PAUSE' or 'OPEN'"),
        (["evaluate", "FILE", "--max-reasons", "0"], "'0' is not a whole number of at least 1"),
    ],
)
def test_user_mistakes_exit_2_with_one_clear_line(
    snapshots_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    argv = [str(snapshots_file) if part == "FILE" else part for part in argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = int(exit_.code or 0)
    errors = capsys.readouterr().err
    assert status == 2
    assert message in errors
    assert "Traceback" not in errors


def test_directory_instead_of_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_installed_command_reads_standard_input_and_explains_itself(snapshots_file: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "volume_quota", "evaluate", "-", "--at", AT],
        input=snapshots_file.read_bytes(),
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "THROTTLE"
    help_text = subprocess.run(
        [sys.executable, "-m", "volume_quota", "evaluate", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    for option in ("--active-brokers", "--at", "--stale-after", "--on-missing", "example"):
        assert option in help_text
