"""The Spark local-mode session of the benchmarks that time Spark in one process."""

from __future__ import annotations

from typing import Any


def local_session(cores: int, driver_memory: str) -> Any:
    """A local-mode session on ``cores`` cores: no UI, no progress bars, errors only in the log,
    four shuffle partitions per core."""
    from pyspark.sql import SparkSession  # noqa: PLC0415

    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
