"""``python -m local_cluster``: see :mod:`local_cluster.cli`."""

import sys

from local_cluster.cli import main

sys.exit(main())
