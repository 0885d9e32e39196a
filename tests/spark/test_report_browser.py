"""The report in a real browser: headless Chromium (Debian's package) renders it, every image
loads, and a screenshot is kept as an artifact (``build/test-artifacts/history-report/``, or
``$VQ_TEST_ARTIFACTS/history-report/``).

``tests/spark/install_chromium.sh`` installs Chromium (``tests/run.sh`` calls it). The image
check runs on a copy of the report with a small script appended that, once the page has
loaded, writes how many images decoded into the DOM, which ``--dump-dom`` then prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_history import synthetic
from spark_history.commands import main
from spark_history.synthetic_jsonl import write_jsonl

pytestmark = pytest.mark.spark

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
_PROBE = """<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const loaded = images.filter((image) => image.complete && image.naturalWidth > 0).length;
  const probe = document.createElement("div");
  probe.id = "image-probe";
  probe.textContent = `images ${images.length} loaded ${loaded}`;
  document.body.appendChild(probe);
  for (const id of ["capacity-totals", "backtest"]) {
    let element = document.getElementById(id).nextElementSibling;
    while (element && element.tagName !== "TABLE" && element.tagName !== "H2") {
      element = element.nextElementSibling;
    }
    const rows = element && element.tagName === "TABLE" ? element.tBodies[0].rows : [];
    const firsts = Array.from(rows, (row) => row.cells[0].innerText.trim());
    const sentence = document.getElementById(`${id === "backtest" ? id : "capacity"}-sentence`);
    const line = document.createElement("div");
    line.id = `${id}-probe`;
    line.textContent = `${id} rows ${rows.length} [${firsts.join("|")}] says ${sentence.innerText}`;
    document.body.appendChild(line);
  }
});
</script>"""


def _artifacts() -> Path:
    default = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
    root = Path(os.environ.get("VQ_TEST_ARTIFACTS", default))
    target = root / "history-report"
    target.mkdir(parents=True, exist_ok=True)
    return target


def _chromium(profile: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    assert binary, "chromium is not installed: run tests/spark/install_chromium.sh"
    return subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_report_renders_in_chromium_with_every_image(
    spark: SparkSession, tmp_path: Path
) -> None:
    # 15 days: two whole weeks, so the weekly growth figure has a point per broker.
    config = synthetic.HistoryConfig(history_hours=15 * 24, interval_seconds=900)
    source = tmp_path / "snapshots.jsonl"
    traces = synthetic.make_traces(3, 8, config)
    write_jsonl(synthetic.history_frame(traces, 3, config), source)
    out = tmp_path / "report"
    argv = ["report", "--input", str(source), "--at", config.at.isoformat()]
    argv += ["--output-dir", out.as_uri(), "--max-plotted", "3", "--master", "local[2]"]
    assert main([*argv, "--growth-weeks", "1"]) == 0
    report = (out / "report.html").read_text()
    expected = len(re.findall(r"<img ", report))
    assert expected >= 6  # days to full, three usage plots, weekly growth, trade-off or balance
    assert "<img alt='weekly growth per broker'" in report

    probed = tmp_path / "probed.html"
    probed.write_text(report.replace("</body>", _PROBE + "</body>"))
    dom = _chromium(
        tmp_path / "profile-dom", "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f"images {expected} loaded {expected}" in dom.stdout, dom.stdout[-500:]
    assert "Threshold advice" in dom.stdout
    assert "Weekly growth per broker" in dom.stdout
    # The fleet first, then the 2 brokers (4 volumes each); 3 forecasters at the backtest's
    # 4 horizons.
    capacity = re.search(r"capacity-totals rows (\d+) \[([^\]]*)\] says ([^<]*)", dom.stdout)
    assert capacity, dom.stdout[-2000:]
    assert capacity.group(1) == "3"
    assert capacity.group(2).split("|")[0] == "fleet"
    assert sorted(capacity.group(2).split("|")[1:]) == ["broker 0", "broker 1"]
    assert re.match(r"The fleet is \d+ % full", capacity.group(3))
    backtest = re.search(r"backtest rows (\d+) \[([^\]]*)\] says ([^<]*)", dom.stdout)
    assert backtest, dom.stdout[-2000:]
    assert backtest.group(1) == "12"
    assert set(backtest.group(2).split("|")) == {"linear-6h", "linear-72h", "forecast"}
    assert re.search(r"^On this history, .* (does better|do equally well)", backtest.group(3))

    screenshot = _artifacts() / "report.png"
    screenshot.unlink(missing_ok=True)
    shot = _chromium(
        tmp_path / "profile-shot",
        f"--screenshot={screenshot}",
        "--window-size=1200,4000",
        (out / "report.html").as_uri(),
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    assert screenshot.stat().st_size > 50_000  # a rendered page, not a blank one
