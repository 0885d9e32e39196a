"""The broker's GC log fits its emptyDir with room to spare.

kafka-server-start.sh runs kafka-run-class.sh with `EXTRA_ARGS` (default `-name kafkaServer
-loggc`); with `-loggc` and no `KAFKA_GC_LOG_OPTS`, kafka-run-class.sh logs GC to
`$LOG_DIR/kafkaServer-gc.log` with `filecount=10,filesize=100M` (JDK 9+). The JVM keeps
`filecount` rotated files next to the current one, each a little over `filesize` when it is
rotated (run below with a real JVM). The log dir is an emptyDir with a `sizeLimit`: once the
files exceed it the kubelet evicts the pod, so the broker must stay well under it.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.chart.chart_tools import (
    SHIPPED_VALUES,
    HelmError,
    Manifest,
    container,
    env_values,
    find,
    render,
)

KAFKA_DEFAULT_EXTRA_ARGS = "-name kafkaServer -loggc"
UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
QUANTITY_UNITS = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "": 1}
XLOG = re.compile(r"-Xlog:gc[^\s]*:file=(?P<file>[^:\s]+):[^:\s]*:(?P<options>\S+)")


@dataclass(frozen=True)
class GcLog:
    file: Path
    file_count: int
    file_size: int

    def worst_case_bytes(self) -> int:
        # filecount rotated files plus the current one; a file is rotated once a write takes it
        # past filesize, so allow one GC event (a few KiB at most) over each.
        return (self.file_count + 1) * (self.file_size + 64 * 1024)


def effective_gc_log(env: dict[str, str]) -> GcLog | None:
    """What kafka-server-start.sh and kafka-run-class.sh make of the container's environment."""
    options = env.get("KAFKA_GC_LOG_OPTS", "")
    extra_args = shlex.split(env.get("EXTRA_ARGS", KAFKA_DEFAULT_EXTRA_ARGS))
    if not options:
        if "-loggc" not in extra_args:
            return None
        name = extra_args[extra_args.index("-name") + 1] if "-name" in extra_args else ""
        options = (
            f"-Xlog:gc*:file={env['LOG_DIR']}/{name}-gc.log:time,tags:filecount=10,filesize=100M"
        )
    match = XLOG.search(options)
    assert match is not None, f"GC logging not to a file, or not understood: {options}"
    settings = dict(item.split("=", 1) for item in match["options"].split(","))
    # The JVM's defaults when left out: 5 files of 20M.
    size = re.fullmatch(r"(\d+)([kKmMgG]?)", settings.get("filesize", "20M"))
    assert size is not None, settings
    return GcLog(
        file=Path(match["file"]),
        file_count=int(settings.get("filecount", "5")),
        file_size=int(size[1]) * UNITS[size[2].lower()],
    )


def _quantity(text: str) -> int:
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|)", text)
    assert match is not None, text
    return int(match[1]) * QUANTITY_UNITS[match[2]]


def _size_limit_of(spec: Manifest, kafka: Manifest, path: Path) -> int:
    mount = max(
        (m for m in kafka["volumeMounts"] if path.is_relative_to(m["mountPath"])),
        key=lambda m: len(m["mountPath"]),
    )
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert "emptyDir" in volume, f"{path} is on {volume}"
    return _quantity(volume["emptyDir"]["sizeLimit"])


@pytest.mark.parametrize(
    "values",
    [pytest.param([], id="default")]
    + [pytest.param([path], id=path.name) for path in SHIPPED_VALUES if "attach" not in path.name],
)
def test_the_gc_log_stays_under_half_of_its_volume(values: list[Path]) -> None:
    manifests = render(values)
    spec = find(manifests, "StatefulSet")["spec"]["template"]["spec"]
    kafka = container(spec, "kafka")
    gc_log = effective_gc_log(env_values(kafka))
    assert gc_log is not None
    limit = _size_limit_of(spec, kafka, gc_log.file)
    assert gc_log.worst_case_bytes() <= limit // 2, (
        f"{gc_log.file_count + 1} GC log files of {gc_log.file_size} bytes on an emptyDir of "
        f"{limit} bytes"
    )


def test_kafkas_own_gc_log_would_not_fit() -> None:
    default = effective_gc_log({"LOG_DIR": "/var/log/kafka"})
    assert default == GcLog(Path("/var/log/kafka/kafkaServer-gc.log"), 10, 100 * 1024**2)
    assert default.worst_case_bytes() > _quantity("1Gi")


def test_the_chart_refuses_a_gc_log_that_would_not_fit() -> None:
    with pytest.raises(HelmError, match=r"kafka\.gcLog"):
        render(settings={"kafka.gcLog.fileCount": "20", "kafka.gcLog.fileSizeMiB": "100"})


def test_the_jvm_keeps_filecount_rotated_files_and_the_current_one(tmp_path: Path) -> None:
    """The rendered options, run by a real JVM with a small filesize and a log dir of ours."""
    java = shutil.which("java")
    assert java is not None, "java (17) not found"
    kafka = container(pod_spec_of(render()), "kafka")
    options = env_values(kafka)["KAFKA_GC_LOG_OPTS"]
    rendered = effective_gc_log(env_values(kafka))
    assert rendered is not None
    log = tmp_path / "logs" / rendered.file.name
    log.parent.mkdir()
    small = re.sub(r"filesize=\w+", "filesize=2k", options.replace(str(rendered.file), str(log)))
    source = tmp_path / "Churn.java"
    source.write_text(
        "public class Churn { public static void main(String[] a) {"
        " for (int i = 0; i < 400; i++) { byte[] b = new byte[1 << 20]; System.gc(); } } }\n"
    )
    completed = subprocess.run(
        [java, "-Xmx64m", *shlex.split(small), str(source)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    files = sorted(path.name for path in log.parent.iterdir())
    rotated = [f"{log.name}.{index}" for index in range(rendered.file_count)]
    assert files == sorted([log.name, *rotated]), files
    assert max(path.stat().st_size for path in log.parent.iterdir()) < 2048 + 64 * 1024


def pod_spec_of(manifests: list[Manifest]) -> Manifest:
    spec: Manifest = find(manifests, "StatefulSet")["spec"]["template"]["spec"]
    return spec
