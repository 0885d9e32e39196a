"""Mining the snapshot history on Spark: capacity forecasts and threshold tuning."""
