"""The Spark suite's local session, for the benchmarks' tests that read what they write."""

from tests.spark.conftest import spark

__all__ = ["spark"]
