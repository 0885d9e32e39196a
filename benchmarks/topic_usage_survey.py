"""Cost of the per-topic survey: ``python -m benchmarks.topic_usage_survey`` (about 1 min).

Generates a log-dir tree of ``--partitions`` (20,000 by default) Kafka partition dirs over 200
topics, each with the files Kafka writes for one segment (``.log`` with 4 KiB of data,
``.index`` and ``.timeindex`` preallocated sparse like Kafka's, ``leader-epoch-checkpoint``,
``partition.metadata``), then times, in the same run and on the same (warm) tree:

- the survey the sidecar runs every ``usage_interval`` (``walk_volume`` + ``summarize_volume``,
  top 20), in this process: CPU seconds (user + system) and wall seconds;
- ``du -s`` of the same tree, the baseline: CPU seconds of the child and wall seconds.

Each is run ``--rounds`` times after one warm-up round; the medians are reported, with the CPU
share of one core the survey costs at a 60 s interval. ``--write-docs`` records the result
under "Topic usage survey" in docs/benchmarks.md (the rest of the file is kept).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.machine import describe_machine
from publisher.topic_usage import summarize_volume
from publisher.topic_usage_walk import walk_volume
from publisher.volumes import Volume

REPOSITORY = Path(__file__).resolve().parents[1]
DOCS = REPOSITORY / "docs" / "benchmarks.md"
SECTION = "## Topic usage survey"
TOPICS = 200
INTERVAL_SECONDS = 60.0
INDEX_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Timing:
    cpu_seconds: float
    wall_seconds: float


def generate_tree(root: Path, partitions: int) -> Path:
    """A Kafka log dir with ``partitions`` partition dirs spread over ``TOPICS`` topics."""
    log_dir = root / "kafka-logs"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text("version=1\nnode.id=0\n")
    data = os.urandom(4096)
    for index in range(partitions):
        partition_dir = log_dir / f"topic-{index % TOPICS:03d}-{index // TOPICS}"
        partition_dir.mkdir()
        (partition_dir / "00000000000000000000.log").write_bytes(data)
        for suffix in (".index", ".timeindex"):
            with (partition_dir / f"00000000000000000000{suffix}").open("wb") as file:
                file.truncate(INDEX_BYTES)
        (partition_dir / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
        (partition_dir / "partition.metadata").write_text("version: 0\ntopic_id: x\n")
    return log_dir


def time_survey(log_dir: Path) -> Timing:
    volume = Volume("/dev/bench", "/", (str(log_dir),))
    cpu, wall = time.process_time(), time.perf_counter()
    summary = summarize_volume(walk_volume(volume), 20)
    timing = Timing(time.process_time() - cpu, time.perf_counter() - wall)
    assert summary.other.topics == TOPICS - 20
    return timing


def time_du(log_dir: Path) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(["du", "-s", str(log_dir)], check=True, capture_output=True)
    elapsed = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(cpu, elapsed)


def ticker_lateness(log_dir: Path | None, rounds: int, seconds: float = 0.0) -> float:
    """The worst lateness, in seconds, of a thread that wakes every 10 ms (as the snapshot
    loop's waits do) while surveys run in another thread of the same process; with no
    ``log_dir``, while this thread sleeps ``seconds`` instead (the baseline)."""
    stop = threading.Event()
    worst = [0.0]

    def tick() -> None:
        while not stop.is_set():
            asked = time.perf_counter()
            time.sleep(0.01)
            worst[0] = max(worst[0], time.perf_counter() - asked - 0.01)

    thread = threading.Thread(target=tick)
    thread.start()
    if log_dir is None:
        time.sleep(seconds)
    else:
        for _ in range(rounds):
            time_survey(log_dir)
    stop.set()
    thread.join()
    return worst[0]


def median(measure: Callable[[Path], Timing], log_dir: Path, rounds: int) -> Timing:
    measure(log_dir)  # warm-up: dentries and inodes in the cache, as every later survey finds
    timings = [measure(log_dir) for _ in range(rounds)]
    return Timing(
        statistics.median(t.cpu_seconds for t in timings),
        statistics.median(t.wall_seconds for t in timings),
    )


def report(
    partitions: int,
    rounds: int,
    survey: Timing,
    du: Timing,
    *,
    load: float,
    lateness: tuple[float, float],
) -> str:
    share = 100 * survey.cpu_seconds / INTERVAL_SECONDS
    return "\n".join(
        [
            SECTION,
            "",
            f"`python -m benchmarks.topic_usage_survey` on {describe_machine()}; load average "
            f"{load:.2f} at the start. A generated log dir of {partitions:,} partition dirs "
            f"over {TOPICS} topics, 5 files each (one 4 KiB segment, two sparse 10 MiB "
            f"indexes, two small metadata files); medians of {rounds} rounds after one "
            "warm-up round, `du -s` of the same tree in the same run as the baseline.",
            "",
            "| Walk | CPU seconds | Wall seconds |",
            "|---|---|---|",
            f"| survey (walk + top 20 per volume) | {survey.cpu_seconds:.3f} | "
            f"{survey.wall_seconds:.3f} |",
            f"| `du -s` | {du.cpu_seconds:.3f} | {du.wall_seconds:.3f} |",
            f"| ratio survey / `du` | {survey.cpu_seconds / max(du.cpu_seconds, 1e-9):.1f} | "
            f"{survey.wall_seconds / max(du.wall_seconds, 1e-9):.1f} |",
            "",
            f"At the default `usage_interval` of 60 s the survey costs {share:.2f} % of one "
            "core. It runs on its own thread: during "
            f"{rounds} more surveys, a thread of the same process waking every 10 ms (as the "
            f"snapshot loop's waits do) woke at worst {lateness[0] * 1000:.0f} ms late; "
            f"{lateness[1] * 1000:.0f} ms late at worst while nothing else ran in the process "
            "for as long (the machine's own noise, same run).",
            "",
        ]
    )


def write_docs(section: str) -> None:
    existing = DOCS.read_text()
    start = existing.find(SECTION)
    if start < 0:
        DOCS.write_text(existing.rstrip("\n") + "\n\n" + section)
        return
    following = existing.find("\n## ", start + len(SECTION))
    end = len(existing) if following < 0 else following + 1
    DOCS.write_text(existing[:start] + section + ("\n" + existing[end:] if following >= 0 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write-docs", action="store_true", help="record in docs/benchmarks.md")
    arguments = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="vq-usage-bench-") as root:
        started = time.perf_counter()
        log_dir = generate_tree(Path(root), arguments.partitions)
        print(f"generated in {time.perf_counter() - started:.1f} s")
        survey = median(time_survey, log_dir, arguments.rounds)
        du = median(time_du, log_dir, arguments.rounds)
        began = time.perf_counter()
        during = ticker_lateness(log_dir, arguments.rounds)
        idle = ticker_lateness(None, 0, time.perf_counter() - began)
        lateness = (during, idle)
    section = report(
        arguments.partitions, arguments.rounds, survey, du, load=load, lateness=lateness
    )
    print(section)
    if arguments.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()
