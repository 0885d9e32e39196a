"""Mining the snapshot history on Spark: fill forecasts, threshold tuning and balance.

``commands`` is the ``volume-quota history`` command group (``job.py`` for spark-submit);
``ingest`` + ``snapshot_rows`` keep the Parquet history; ``forecast`` / ``trend_forecast``,
``thresholds`` / ``decision_replay`` and ``balance`` are the analyses; ``usage_ingest`` +
``usage_documents`` keep the topic usage history and ``usage_forecast`` runs the pure
``mechanism`` forecast on it; ``report`` writes the HTML report; ``synthetic`` makes
histories with known truth. See docs/history.md.
"""
