"""Rolling-origin backtests: forecast at past instants of a volume's history and score the
forecast against what followed (``rolling_origin``), for the forecasters of ``forecasters`` and
``mechanism_forecaster``, with the history cut into buckets on Spark (``spark_buckets``)."""
