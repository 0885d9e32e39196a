"""Where the demo reports: a live screen redrawn in place, or one JSON object per line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Protocol

from rich.console import Console
from rich.live import Live

from volume_quota.demo.screen import View, render


class Output(Protocol):
    def event(self, kind: str, **fields: Any) -> None:
        """A phase change, a decision change, a sample, the start or the summary."""

    def frame(self, view_of: Callable[[], View]) -> None:
        """Redraw the screen (built lazily: machine output does not need it)."""

    def close(self) -> None: ...


class JsonLines:
    """``--json-lines``: every event as one JSON object on stdout, no screen."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    def event(self, kind: str, **fields: Any) -> None:
        record = {"event": kind, "t": round(self._clock(), 2), **fields}
        sys.stdout.write(json.dumps(record, sort_keys=False) + "\n")
        sys.stdout.flush()

    def frame(self, view_of: Callable[[], View]) -> None:
        return None

    def close(self) -> None:
        return None


_SHOWN_EVENTS = {"started", "phase", "summary", "notice", "error", "interrupted", "stopped"}


class LiveScreen:
    """One view redrawn in place; the start, phase changes and the summary are also printed
    above it, so they stay in the terminal's scrollback after the demo ends."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._live: Live | None = None

    def event(self, kind: str, **fields: Any) -> None:
        if kind not in _SHOWN_EVENTS:
            return
        text = fields.get("text")
        if text:
            self.console.print(text, highlight=False)

    def frame(self, view_of: Callable[[], View]) -> None:
        renderable = render(view_of())
        if self._live is None:
            self._live = Live(renderable, console=self.console, auto_refresh=False)
            self._live.start()
        self._live.update(renderable, refresh=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
