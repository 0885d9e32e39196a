"""spark-submit entry point: ``spark-submit spark_history/job.py forecast --input ... ``.

On a cluster, ship the project's code with ``--py-files`` (``python -m spark_history.package
DIR`` builds the zip) and point ``spark.pyspark.python`` at an interpreter with the
dependencies (docs/history.md, "On a cluster").

The same ingest, forecast and report actions as ``volume-quota history``, with no master
forced: spark-submit's ``--master`` and ``--conf`` (or the cluster's defaults) apply. For the
Kafka source, pass the connector with ``--jars`` (or give its Maven coordinates with
``--packages``): under spark-submit the classpath is fixed before Python starts, so the job
does not fetch it itself. Example, with the jars ``volume-quota history ingest`` cached:

    spark-submit --master local[2] \
        --jars "$(ls ~/.cache/volume-quota/spark-kafka-4.0.0/*.jar | paste -sd,)" \
        spark_history/job.py ingest --source kafka --bootstrap-servers ... --topic ... \
        --checkpoint ck --output history
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    try:
        import spark_history  # noqa: F401 - shipped with --py-files, or installed
    except ImportError:
        # Run as a file from a checkout without --py-files: use the checkout's packages.
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_history.commands import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], default_master=None, prog="job.py"))
