"""What machine a benchmark ran on, for the record in docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe_machine() -> str:
    cpu_model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    memory = "unknown RAM"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        total_kib = int(meminfo.read_text().split()[1])
        memory = f"{total_kib / 1024 / 1024:.0f} GiB RAM"
    return (
        f"{os.cpu_count()} cores ({cpu_model}), {memory}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}"
    )
