"""The one error type the command line turns into one line on stderr and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake by the user (bad option, unreadable file): one clear line, exit status 2."""
