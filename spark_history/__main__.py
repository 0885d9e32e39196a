"""``python -m spark_history``: the history actions without the rest of ``volume-quota``."""

from __future__ import annotations

import sys

from spark_history.commands import main

sys.exit(main())
