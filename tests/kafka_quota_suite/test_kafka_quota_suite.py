"""Kafka's own quota integration tests, run with volume-quota's callback on every broker.

``run-kafka-quota-tests.sh`` runs Kafka's ``ClientIdQuotaTest``, ``UserQuotaTest``,
``UserClientIdQuotaTest`` and ``RequestQuotaTest`` (the test jar from Maven Central, assertions
unchanged) through subclasses that install ``VolumeQuotaCallback`` with an OPEN decision. An
OPEN decision must leave every operator quota (user, client id, user + client id, request
time) exactly as Kafka applies it without the callback. This module checks the JUnit console
launcher's summary and that every test ran with the callback in force.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real_broker, pytest.mark.timeout(1500)]

SCRIPT = Path(__file__).with_name("run-kafka-quota-tests.sh")
CALLBACK_CONFIGURED = re.compile(r"volume-quota callback #\d+ configured with engine #\d+")
_SUMMARY_LINE = re.compile(r"^\[\s*(\d+) tests (\w+)\s*\]$", re.MULTILINE)
_COUNTS = ("found", "started", "successful", "skipped", "aborted", "failed")


@dataclass(frozen=True)
class LauncherSummary:
    """The test counts of the JUnit console launcher's closing summary."""

    found: int
    started: int
    successful: int
    skipped: int
    aborted: int
    failed: int


def parse_summary(console: str) -> LauncherSummary:
    """Read the ``[  N tests <count>  ]`` lines; every count must be there exactly once."""
    counts: dict[str, int] = {}
    for number, name in _SUMMARY_LINE.findall(console):
        if name in counts:
            raise AssertionError(f"the launcher's summary has 'tests {name}' twice")
        counts[name] = int(number)
    missing = [name for name in _COUNTS if name not in counts]
    if missing:
        raise AssertionError(f"no launcher summary (missing: {', '.join(missing)})")
    return LauncherSummary(**{name: counts[name] for name in _COUNTS})


def failures(console: str, context: int = 4) -> str:
    """The lines of the launcher's tree that mark a failed test (``✘``), each with the lines
    that follow it (the exception), for the assertion message."""
    lines = console.splitlines()
    marked = [index for index, line in enumerate(lines) if "✘" in line]
    return "\n".join("\n".join(lines[index : index + context + 1]) for index in marked)


def assert_every_test_passed(summary: LauncherSummary, console: str = "") -> None:
    """Tests were found, and every one of them ran and passed: none failed, skipped or aborted."""
    assert summary.found > 0, "the launcher found no test"
    assert summary.failed == 0, (
        f"{summary.failed} of {summary.found} Kafka quota tests failed:\n{failures(console)}"
    )
    assert summary.skipped == 0, f"{summary.skipped} Kafka quota tests were skipped"
    assert summary.aborted == 0, f"{summary.aborted} Kafka quota tests were aborted"
    assert summary.started == summary.found == summary.successful, summary


_MARKER = re.compile(r"^callback-in-force state=(\w+) brokers=[\d,]+ test=(.+)$", re.MULTILINE)


def marked_tests(markers: str, state: str) -> set[str]:
    """The tests whose brokers all reported ``state`` from the callback's own metric."""
    return {test for found, test in _MARKER.findall(markers) if found == state}


PASSING = """
Test run finished after 301234 ms
[         9 containers found      ]
[         0 containers failed     ]
[         7 tests found           ]
[         0 tests skipped         ]
[         7 tests started         ]
[         0 tests aborted         ]
[         7 tests successful      ]
[         0 tests failed          ]
"""


def test_a_summary_of_passing_tests_is_accepted() -> None:
    summary = parse_summary(PASSING)
    assert summary == LauncherSummary(
        found=7, started=7, successful=7, skipped=0, aborted=0, failed=0
    )
    assert_every_test_passed(summary)


@pytest.mark.parametrize(
    "summary",
    [
        # the callback ignoring operators' quotas: every setUp fails
        LauncherSummary(found=10, started=10, successful=0, skipped=0, aborted=0, failed=10),
        LauncherSummary(found=7, started=6, successful=6, skipped=1, aborted=0, failed=0),
        LauncherSummary(found=7, started=7, successful=6, skipped=0, aborted=1, failed=0),
        LauncherSummary(found=0, started=0, successful=0, skipped=0, aborted=0, failed=0),
    ],
)
def test_a_summary_with_any_test_not_passed_is_refused(summary: LauncherSummary) -> None:
    with pytest.raises(AssertionError):
        assert_every_test_passed(summary)


def test_a_failure_names_the_failed_test_and_its_exception() -> None:
    console = (
        "├─ VolumeQuotaClientIdQuotaTest ✔\n"
        "│  ├─ testQuotaOverrideDelete(String, String) ✔\n"
        "│  └─ testThrottledProducerConsumer(String, String) ✘ expected: <true> but was: <false>\n"
        "│        org.opentest4j.AssertionFailedError: Throttle time metrics not updated\n"
        "│          at kafka.api.BaseQuotaTest.verifyThrottleTimeMetric(BaseQuotaTest.scala:330)\n"
    )
    summary = LauncherSummary(found=2, started=2, successful=1, skipped=0, aborted=0, failed=1)
    with pytest.raises(AssertionError, match=r"(?s)1 of 2.*testThrottledProducerConsumer.*not upd"):
        assert_every_test_passed(summary, console)


def test_markers_are_counted_per_test_and_state() -> None:
    markers = (
        "callback-in-force state=OPEN brokers=0,1 test=A.t1()\n"
        "callback-in-force state=OPEN brokers=0 test=B.t2()\n"
        "callback-in-force state=PAUSE brokers=0,1 test=A.t1()\n"
    )
    assert marked_tests(markers, "OPEN") == {"A.t1()", "B.t2()"}
    assert marked_tests(markers, "PAUSE") == {"A.t1()"}
    assert marked_tests("", "OPEN") == set()


def test_output_without_a_summary_is_refused() -> None:
    with pytest.raises(AssertionError, match="no launcher summary"):
        parse_summary("Exception in thread main java.lang.NoClassDefFoundError: kafka/api/X\n")


def test_kafka_quota_tests_pass_unchanged_with_the_callback_installed(
    plugin_jar: Path, tmp_path: Path
) -> None:
    # A copy: a rebuild of the jar during the run must not change it under the brokers' feet.
    jar = shutil.copy(plugin_jar, tmp_path / plugin_jar.name)
    environment = {
        **os.environ,
        "VOLUME_QUOTA_PLUGIN_JAR": str(jar),
        "KAFKA_QUOTA_SUITE_OUT": str(tmp_path),
    }
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1400,
        check=False,
    )
    report = result.stderr[-6000:]
    console = (tmp_path / "console.txt").read_text(encoding="utf-8", errors="replace")
    summary = parse_summary(console)
    assert_every_test_passed(summary, console)
    assert result.returncode == 0, report

    markers = (tmp_path / "markers.txt").read_text(encoding="utf-8")
    tests_open = marked_tests(markers, "OPEN")
    assert len(tests_open) == summary.found, (
        f"{len(tests_open)} of {summary.found} tests saw VolumeQuotaCallback in force:\n{markers}"
    )
    assert marked_tests(markers, "PAUSE"), "no test saw a PAUSE decision"
    broker_log = (tmp_path / "brokers.log").read_text(encoding="utf-8", errors="replace")
    assert CALLBACK_CONFIGURED.search(broker_log), "no broker logged the callback's configuration"
