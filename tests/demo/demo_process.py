"""Run `volume-quota demo --json-lines` as a subprocess and read its events (test helper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

Event = dict[str, Any]


@contextmanager
def demo_filesystem(directory: Path, size: str = "3g") -> Iterator[Path]:
    """A filesystem of the demo's own (tmpfs, as root) so that no other writer on the machine
    moves its free space; without root, ``directory`` itself on the machine's disk."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        yield directory
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                   check=True)  # fmt: skip
    try:
        yield directory
    finally:
        subprocess.run(["umount", "--lazy", str(directory)], check=False)


def demo_command(parent: Path, log_file: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "volume_quota",
        "demo",
        "--json-lines",
        f"--dir={parent}",
        f"--log-file={log_file}",
        *extra,
    ]


def parse_events(stdout: str) -> list[Event]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def of_kind(events: list[Event], kind: str) -> list[Event]:
    return [event for event in events if event["event"] == kind]


def in_order(seen: list[str], expected: list[str]) -> bool:
    """Whether ``expected`` appears in ``seen`` as a subsequence."""
    remaining = iter(seen)
    return all(any(state == wanted for state in remaining) for wanted in expected)


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (e.g. the demo's directory)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            line = " ".join(process.info["cmdline"] or [])
        except psutil.Error:
            continue
        if text in line:
            found.append(line[:200])
    return found
