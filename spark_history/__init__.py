"""Mining the snapshot history on Spark: fill forecasts, threshold tuning and balance.

``commands`` is the ``volume-quota history`` command group (``job.py`` for spark-submit);
``ingest`` + ``snapshot_rows`` keep the Parquet history; ``spark_trend`` / ``trend``,
``thresholds`` / ``decision_replay`` and ``balance`` are the analyses; ``usage_ingest`` +
``usage_documents`` keep the topic usage history and ``spark_mechanism`` runs the pure
``mechanism`` forecast on it; ``report`` writes the HTML report; ``synthetic`` makes
histories with known truth. See docs/history.md.
"""
