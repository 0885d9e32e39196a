"""deploy/systemd: the sidecar's unit passes `systemd-analyze verify` without a single warning,
is hardened (`systemd-analyze security`), and its settings file names real settings.

`verify` insists that ExecStart's program exists, so the unit is checked as a copy whose
ExecStart points at a stand-in with the same arguments; every other line is the shipped one.
The checks are shown to fail on broken copies of the unit.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "deploy" / "systemd"
SIDECAR_UNIT = UNITS / "volume-quota-sidecar.service"
SETTINGS_FILE = UNITS / "sidecar.env"
BROKER_DROP_IN = UNITS / "kafka.service.d" / "volume-quota.conf"
SYSTEMD_ANALYZE = Path("/usr/bin/systemd-analyze")
INSTALLED_COMMAND = "/opt/volume-quota/venv/bin/volume-quota"
# systemd-analyze security: 0 (locked down) .. 10 (exposed); ours is about 1.4.
MAX_EXPOSURE = 2.0


def _directives(text: str) -> dict[str, list[str]]:
    """``Key=value`` lines by key (repeatable keys keep every value), comments dropped."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", ";", "[")):
            key, _, value = stripped.partition("=")
            found.setdefault(key, []).append(value)
    return found


def _testable_copy(text: str, directory: Path, name: str = SIDECAR_UNIT.name) -> Path:
    """The unit with ExecStart's program replaced by an executable stand-in in ``directory``."""
    stand_in = directory / "volume-quota"
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    assert f"ExecStart={INSTALLED_COMMAND} " in text
    unit = directory / name
    unit.write_text(text.replace(f"ExecStart={INSTALLED_COMMAND} ", f"ExecStart={stand_in} "))
    return unit


def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE.is_file(), "systemd-analyze is needed: apt-get install systemd"
    return subprocess.run(
        [str(SYSTEMD_ANALYZE), "verify", str(unit)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=unit.parent,
    )


def _problems(unit: Path) -> str:
    """Everything ``verify`` complains about; empty for a clean unit. It exits 0 on warnings
    such as an unknown key or an unparsable value ("..., ignoring"), so its output counts."""
    completed = _verify(unit)
    return (
        f"exit {completed.returncode}: {completed.stderr}"
        if (completed.returncode or completed.stderr.strip() or completed.stdout.strip())
        else ""
    )


def test_the_sidecar_unit_verifies_cleanly(tmp_path: Path) -> None:
    assert _problems(_testable_copy(SIDECAR_UNIT.read_text(), tmp_path)) == ""


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("NoNewPrivileges=yes", "NoNewPrivilege=yes", "Unknown key"),
        ("Restart=always", "Restart=sometimes", "Failed to parse"),
        ("[Service]", "[Servce]", "Unknown section"),
        ("RestrictAddressFamilies=AF_INET", "RestrictAddressFamilies=AF_NOPE", "AF_NOPE"),
    ],
)
def test_the_check_fails_on_a_broken_unit(
    old: str, new: str, complaint: str, tmp_path: Path
) -> None:
    text = SIDECAR_UNIT.read_text()
    assert old in text
    problems = _problems(_testable_copy(text.replace(old, new, 1), tmp_path))
    assert complaint in problems


def test_a_missing_program_fails_the_check(tmp_path: Path) -> None:
    unit = tmp_path / SIDECAR_UNIT.name
    unit.write_text(SIDECAR_UNIT.read_text())  # ExecStart's program is not installed here
    assert f"Command {INSTALLED_COMMAND} is not executable" in _problems(unit)


def _exposure(unit: Path) -> float:
    completed = subprocess.run(
        [str(SYSTEMD_ANALYZE), "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=unit.parent,
    )
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", completed.stdout)
    assert match is not None, completed.stdout + completed.stderr
    return float(match[1])


def test_the_sidecar_is_hardened(tmp_path: Path) -> None:
    assert _exposure(_testable_copy(SIDECAR_UNIT.read_text(), tmp_path)) <= MAX_EXPOSURE


def test_the_hardening_score_would_notice_missing_hardening(tmp_path: Path) -> None:
    bare = "\n".join(
        line
        for line in SIDECAR_UNIT.read_text().splitlines()
        if line.startswith(("[", "ExecStart=", "Type=", "Description=", "WantedBy="))
    )
    assert _exposure(_testable_copy(bare + "\n", tmp_path)) > MAX_EXPOSURE


def test_the_service_restarts_and_reads_its_settings_file() -> None:
    unit = _directives(SIDECAR_UNIT.read_text())
    assert unit["ExecStart"] == [f"{INSTALLED_COMMAND} sidecar"]
    assert unit["EnvironmentFile"] == ["/etc/volume-quota/sidecar.env"]
    assert unit["Restart"] == ["always"]
    assert unit["StartLimitIntervalSec"] == ["0"]
    assert unit["User"] == ["volume-quota"]
    assert unit["NoNewPrivileges"] == ["yes"]
    assert unit["ProtectSystem"] == ["strict"]
    assert unit["CapabilityBoundingSet"] == [""]


def test_the_decision_file_is_where_the_sidecar_may_write_and_the_broker_reads() -> None:
    unit = _directives(SIDECAR_UNIT.read_text())
    settings = _directives(SETTINGS_FILE.read_text())
    [runtime_directory] = unit["RuntimeDirectory"]
    [decision_file] = settings["VOLUME_QUOTA_DECISION_FILE"]
    # ProtectSystem=strict: the runtime directory is the only writable place.
    assert Path(decision_file).parent == Path("/run") / runtime_directory
    assert f"volume.quota.decision.path={decision_file}" in BROKER_DROP_IN.read_text()
    assert unit["Group"] == ["kafka"]  # the broker's group may read it (RuntimeDirectoryMode)
    assert unit["RuntimeDirectoryMode"] == ["0750"]


def test_the_settings_file_names_only_settings_the_sidecar_knows() -> None:
    documented = set(
        re.findall(r"`(VOLUME_QUOTA_[A-Z_]+)`", (REPO / "docs" / "publisher.md").read_text())
    )
    assert "VOLUME_QUOTA_BOOTSTRAP_SERVERS" in documented
    text = SETTINGS_FILE.read_text()
    used = set(_directives(text)) | set(re.findall(r"^# (VOLUME_QUOTA_[A-Z_]+)=", text, re.M))
    assert used, "no settings"
    assert used <= documented, sorted(used - documented)
    for key, values in _directives(text).items():
        assert len(values) == 1, key
        assert not values[0].startswith(("'", '"')), f"{key}: EnvironmentFile keeps quotes"


def test_the_broker_drop_in_puts_the_callback_jar_on_the_classpath() -> None:
    drop_in = _directives(BROKER_DROP_IN.read_text())
    assert drop_in["Wants"] == ["volume-quota-sidecar.service"]
    assert drop_in["Environment"] == ["CLASSPATH=/opt/volume-quota/volume-quota-broker-plugin.jar"]
