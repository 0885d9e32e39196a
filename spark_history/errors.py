"""The one exception type the history commands turn into a one-line error and exit status 2."""

from __future__ import annotations

from volume_quota.errors import UsageError


class HistoryUsageError(UsageError):
    """A mistake the user can fix (missing path, bad time, no data): one line, exit 2.

    A ``UsageError`` so that ``volume-quota``'s entry point reports it like every other
    command's mistakes.
    """
