"""When will a volume fill? The history job's forecast.

- ``vocabulary``: its parameters, the trends it names, its result row.
- The trend, where no per-topic usage exists: ``robust_trend`` (the 72 h line and its slope
  interval), ``trend`` (one volume's fill time and band), ``envelope`` (a volume's hourly
  envelope to its forecast row), on Spark (``spark_trend``) or in one process (``pandas_trend``).
- The mechanism, where the usage history has the volume's topics: ``mechanism`` (each topic's
  path under its retention, summed per volume), on Spark (``spark_mechanism``).
- ``choice``: one forecast per volume, the mechanism's where it answers, the trend's elsewhere.
- ``backtest``: rolling-origin scores of the forecasters, and ``conformal_bands``, the bands
  calibrated on those scores; ``predict_linear`` is the baseline to beat.
"""
