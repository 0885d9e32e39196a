"""One local Spark session for the whole Spark suite, and a builder of hand-made history rows.

local[2] with two shuffle partitions and no UI: the suite runs on a 2-core machine in a few
minutes, and starting the JVM once (not per test) is most of that saving.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_history.session import SESSION_DEFAULTS, SessionSettings, build_session
from spark_history.snapshot_rows import VOLUME_ROW_COLUMNS

RowsFactory = Callable[[pd.DataFrame], DataFrame]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    conf = {
        **SESSION_DEFAULTS,
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
    }
    session = build_session(SessionSettings(master="local[2]", conf=conf))
    yield session
    session.stop()


@pytest.fixture
def make_rows(spark: SparkSession) -> RowsFactory:
    """A Spark DataFrame with the dataset's columns from a pandas frame of the same columns."""

    def build(frame: pd.DataFrame) -> DataFrame:
        typed = frame.astype(
            {
                "brokerId": "int32",
                "capacity": "int64",
                "consumed": "int64",
                "free": "int64",
                "volumeName": object,
                "path": object,
                "softLimitType": object,
                "hardLimitType": object,
            }
        )
        return spark.createDataFrame(typed[list(VOLUME_ROW_COLUMNS)])

    return build
