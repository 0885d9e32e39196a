import sys

from volume_quota.cli import main

sys.exit(main())
