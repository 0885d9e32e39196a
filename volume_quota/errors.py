"""The one error type the command line turns into lines on stderr and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake by the user (bad option, unreadable file): one clear line per problem, exit 2."""

    def __init__(self, *problems: str) -> None:
        super().__init__(*problems)
        self.problems: tuple[str, ...] = problems

    def __str__(self) -> str:
        return "\n".join(self.problems)
