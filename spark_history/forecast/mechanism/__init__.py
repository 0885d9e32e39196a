"""The mechanism forecast: when a volume fills, from what Kafka's retention does to each topic.

Pure numpy, no Spark (``spark_history.forecast.spark_mechanism`` runs it per volume).
``ingest_rate`` estimates a topic's write rate from its bytes on the volume; ``topic_config``
reads the configs the usage document carries; ``topic_path`` caps each topic at its retention bound
(``consumer.retention_outlook``, ``consumer.upload_backlog``); ``volume_path`` sums the topics
and finds when the volume crosses its hard limit; ``prevention`` solves for the retention that
keeps it under; ``projection`` puts them together. See docs/history.md, "The mechanism
forecast".
"""
