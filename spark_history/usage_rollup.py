"""The hourly rollup of the usage history: the rows of it that an hourly analysis can tell apart.

The usage history holds a ``topic`` row per broker, volume, topic and survey (a survey a minute:
a 1,000-broker fleet of 16 volumes with a dozen topics each is about 350 M rows a day). Every
analysis of it reads hourly buckets of each series and only two rows of a bucket:

- the bucket's **newest survey** of each (broker, volume, kind, topic): the backtest's and the
  mechanism's bucket (``spark_buckets.usage_buckets``), and the last bytes a window saw
  (``spark_mechanism.topic_series``);
- its **oldest survey**: the first bytes a window saw (``topic_series``);
- per topic, the bucket's **newest config read** (``usage_buckets``, ``newest_configs``).

So the rollup is those rows and nothing else, in the usage dataset's own columns: a usage
history thinned to at most two surveys per series and hour and a config read per topic and
hour. Every reader reads it as it reads the raw history, and gets the same answer wherever its
buckets and windows are whole clock hours (``hourly_rollup.serves``), as it does for the
snapshot rollup.

**The hour.** Right-closed, as the snapshot rollup's (``hourly_rollup.hour_end``): a survey at
``t`` is in the hour ending at ``ceil(t / 1 h)``; a config read by its ``configReadAt``.
**Partials.** Rows are kept per ``date`` partition (the UTC day of ``surveyedAt``), so each date
of the rollup comes from one date of the raw history: an hour split between two dates keeps the
oldest and newest of each part, among which are the hour's own.

Pure transformations on DataFrames; where the rollup is stored is ``rollup_store``'s.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

from spark_history.forecast.backtest.spark_buckets import newest_values
from spark_history.hourly_rollup import hour_end
from spark_history.usage_documents import CONFIG, CONFIG_VALUE_COLUMNS, OTHER, TOPIC

SURVEY_KEYS: tuple[str, ...] = ("brokerId", "volumeName", "kind", "topic", "date")
"""A survey series (with its hour): ``topic`` and ``other`` rows."""
CONFIG_KEYS: tuple[str, ...] = ("kind", "topic", "date")
"""A topic's config reads (with their hour): ``config`` rows, whichever broker published them."""
CONFIG_FIELDS: tuple[str, ...] = ("configReadAt", *CONFIG_VALUE_COLUMNS)
"""The columns only a ``config`` row fills."""


def usage_rollup(rows: DataFrame) -> DataFrame:
    """The usage rows (the dataset's columns, ``date`` included) an hourly analysis reads: per
    survey series, date and hour the oldest and the newest survey; per topic, date and hour
    the newest config read. Same columns and order as ``rows``."""
    columns = rows.columns
    surveys = _ends(rows.where(F.col("kind").isin(TOPIC, OTHER)), "surveyedAt")
    configs = _newest_reads(rows.where(F.col("kind") == CONFIG))
    return surveys.select(*columns).unionByName(configs.select(*columns))


def extend_usage_rollup(rollup: DataFrame, rows: DataFrame) -> DataFrame:
    """The rollup of the raw rows ``rollup`` was computed from and of ``rows``, from ``rollup``
    and ``rows`` alone: an hour's oldest and newest surveys (and newest config read) over both
    are among the rollup's and ``rows``', so the rollup of their union is that rollup."""
    return usage_rollup(rollup.select(*rows.columns).unionByName(rows))


def _ends(surveys: DataFrame, order: str) -> DataFrame:
    """The oldest and the newest row of every series and hour (one row when they are one).

    One ``min_by`` and one ``max_by`` per fixed-width column (Spark hash-aggregates them; a
    struct's would sort every row), the config columns, null on a survey, left out."""
    values = [name for name in surveys.columns if name not in (*SURVEY_KEYS, *CONFIG_FIELDS, order)]
    hourly = surveys.withColumn("hourEnd", hour_end(F.col(order)))
    ends = hourly.groupBy(*SURVEY_KEYS, "hourEnd").agg(
        F.min(order).alias(f"first_{order}"),
        F.max(order).alias(f"last_{order}"),
        *(F.min_by(name, order).alias(f"first_{name}") for name in values),
        *(F.max_by(name, order).alias(f"last_{name}") for name in values),
    )
    first, last = (_struct(side, (order, *values)) for side in ("first", "last"))
    differ = F.col(f"first_{order}") < F.col(f"last_{order}")
    both = F.when(differ, F.array(first, last)).otherwise(F.array(last))
    kept = ends.select(*SURVEY_KEYS, F.explode(both).alias("kept")).select(*SURVEY_KEYS, "kept.*")
    return kept.select(
        "*",
        *(F.lit(None).cast(surveys.schema[name].dataType).alias(name) for name in CONFIG_FIELDS),
    )


def _struct(side: str, names: tuple[str, ...]) -> Column:
    return F.struct(*(F.col(f"{side}_{name}").alias(name) for name in names))


def _newest_reads(configs: DataFrame) -> DataFrame:
    """Per topic, date and hour of ``configReadAt``, the newest read's row."""
    values = tuple(name for name in configs.columns if name not in CONFIG_KEYS)
    hourly = configs.withColumn("hourEnd", hour_end(F.col("configReadAt")))
    return hourly.groupBy(*CONFIG_KEYS, "hourEnd").agg(*newest_values(values, "configReadAt"))
