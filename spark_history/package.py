"""Build the zip spark-submit ships to the driver and executors with ``--py-files``.

    python -m spark_history.package DIR        # writes DIR/volume-quota-history.zip

The zip holds the project's packages the job imports: ``spark_history`` itself, ``schemas``
(the wire format), ``consumer`` (the decision rule the replay and the thresholds reuse) and
``volume_quota`` (the command line's parsers and errors). Third-party dependencies (pydantic,
sortedcontainers, numpy, pandas, pyarrow, matplotlib) are not in it: they come from the
Python interpreter the executors run (``spark.pyspark.python``), either one installed on
every node or a packed environment shipped with ``--archives`` (docs/history.md).
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGES: tuple[str, ...] = ("spark_history", "schemas", "consumer", "volume_quota")
ZIP_NAME = "volume-quota-history.zip"
_DATA_SUFFIXES = (".py", ".json", ".xml")


def build_zip(directory: Path) -> Path:
    """Write ``directory/volume-quota-history.zip``; returns its path."""
    root = Path(__file__).resolve().parent.parent
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / ZIP_NAME
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*")):
                if "__pycache__" in path.parts or not path.is_file():
                    continue
                if path.suffix in _DATA_SUFFIXES:
                    archive.write(path, path.relative_to(root).as_posix())
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m spark_history.package DIR", file=sys.stderr)
        return 2
    print(build_zip(Path(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
