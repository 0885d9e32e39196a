"""The live view: brokers x volumes, the decision and its reason, producer rates, narration.

:func:`render` is pure (a :class:`View` in, a rich renderable out); the runner redraws it in
place with ``rich.live.Live``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from consumer.reasons import human_bytes
from consumer.status_report import VolumeStatus
from consumer.topic_growth import TOPICS_INTRO, topics_text
from schemas.decision import DecisionReason, QuotaDecision, QuotaState
from volume_quota.demo.rates import RATE_WINDOW_S, human_rate, sparkline

STATE_STYLES = {
    QuotaState.OPEN: "bold green",
    QuotaState.THROTTLE: "bold yellow",
    QuotaState.PAUSE: "bold red",
}


@dataclass(frozen=True)
class ProducerView:
    name: str
    broker: int
    rate: float
    history: list[float]


@dataclass(frozen=True)
class View:
    """Everything one frame shows."""

    elapsed: float
    phase: str
    narration: str
    decision: QuotaDecision | None
    brokers_agreeing: int
    broker_count: int
    volumes: list[VolumeStatus]
    producers: list[ProducerView]
    base_rate: float
    pause_rate: float
    filesystem_note: str
    log_file: str
    filled_bytes: int = 0
    status_command: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def render(view: View) -> RenderableType:
    header = Text.assemble(
        ("volume-quota demo", "bold"),
        f"  {view.elapsed:5.0f} s  phase ",
        (view.phase, "bold"),
        f"   log: {view.log_file}",
    )
    parts: list[RenderableType] = [header, Text(view.filesystem_note, style="dim")]
    if view.status_command:
        parts.append(Text(f"every topic: {view.status_command}", style="dim"))
    parts += [_volumes_table(view), _decision_panel(view)]
    if view.producers:
        parts.append(_producers_table(view))
    parts.append(Panel(Text(view.narration), title="what is happening", border_style="cyan"))
    if view.timings:
        steps = "   ".join(f"{name} {seconds:.1f} s" for name, seconds in view.timings.items())
        parts.append(Text(f"took: {steps}", style="dim"))
    return Group(*parts)


def _state_text(state: QuotaState) -> Text:
    return Text(state.value, style=STATE_STYLES[state])


def _volumes_table(view: View) -> Table:
    table = Table(title="brokers x volumes (from the snapshot topic)", expand=False)
    for column in ("broker", "volume", "free", "throttle at", "pause at", "state", "age"):
        table.add_column(column, justify="right" if column != "volume" else "left")
    for row in sorted(view.volumes, key=lambda row: row.broker_id):
        table.add_row(
            str(row.broker_id),
            row.volume_name,
            human_bytes(row.free_bytes),
            human_bytes(row.soft_threshold_bytes),
            human_bytes(row.hard_threshold_bytes),
            _state_text(row.state),
            f"{row.snapshot_age_seconds:.0f} s",
        )
    if not view.volumes:
        table.add_row("-", "waiting for the first snapshots", "", "", "", "", "")
    return table


def _decision_panel(view: View) -> Panel:
    decision = view.decision
    if decision is None:
        return Panel("no decision file yet", title="cluster decision")
    line = Text.assemble(
        _state_text(decision.state),
        f"  throttle factor {decision.throttle_factor:.3f}",
        f"   (the same on {view.brokers_agreeing} of {view.broker_count} brokers' decision files)",
    )
    reason = decision.reasons[0].detail if decision.reasons else "every volume is inside its limits"
    reason = reason.split(TOPICS_INTRO)[0]  # named on a line of their own
    filling = next((r for r in decision.reasons if r.top_topics), None)
    if filling is not None:
        reason += f"\n{_filling_line(filling)}"
    if view.filled_bytes:
        reason += f"\nbulk load written so far: {human_bytes(view.filled_bytes)}"
    return Panel(Group(line, Text(reason, style="dim")), title="cluster decision")


def _filling_line(reason: DecisionReason) -> str:
    """The topics growing fastest on the volume that drove the decision, from its reason."""
    return (
        f"filling broker {reason.broker_id}'s {reason.volume_name}: "
        f"{topics_text(reason.top_topics or [])}"
    )


def _producers_table(view: View) -> Table:
    table = Table(
        title=f"producers (delivered, {RATE_WINDOW_S:.0f} s windows; base quota "
        f"{human_rate(view.base_rate)}, pause floor {human_rate(view.pause_rate)} per broker)",
        expand=False,
    )
    for column in ("principal", "writes to", "rate", "% of base", "history"):
        table.add_column(column, justify="left" if column in ("principal", "history") else "right")
    for producer in view.producers:
        table.add_row(
            f"User:{producer.name}",
            f"broker {producer.broker}",
            human_rate(producer.rate),
            f"{100 * producer.rate / view.base_rate:.0f} %",
            Text(sparkline(producer.history, 1.2 * view.base_rate, width=40), style="cyan"),
        )
    return table
