"""The demo's main loop: every half second, observe (decision files, producer rates, the
snapshot topic), advance the story, act (start the bulk load, free the space), report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consumer.reasons import human_bytes
from consumer.status_report import VolumeStatus, cluster_status
from schemas.decision import QuotaDecision
from volume_quota.demo import plan
from volume_quota.demo.clients import (
    BulkLoader,
    DemoProducer,
    SnapshotWatcher,
    Worker,
    delete_all_records,
    free_bytes,
)
from volume_quota.demo.output import JsonLines, Output
from volume_quota.demo.rates import human_rate
from volume_quota.demo.screen import ProducerView, View
from volume_quota.demo.sidecars import SidecarProcess, check_sidecars, read_decision
from volume_quota.demo.story import Action, Observation, Story, narration

if TYPE_CHECKING:
    from local_cluster import LocalKafkaCluster

TICK_S = 0.5
HOLD_AFTER_DONE_S = 5.0
_HISTORY = 60


@dataclass
class Scene:
    """What the runner set up, handed to the loop."""

    cluster: LocalKafkaCluster
    scenario: str
    duration: float | None
    limits: plan.DemoLimits
    decision_files: list[Path]
    watcher: SnapshotWatcher
    breaching_dir: str
    shared_filesystem: bool
    log_file: str
    workers: list[Worker]
    sidecars: list[SidecarProcess]
    producers: list[DemoProducer] = field(default_factory=list)
    loader: BulkLoader | None = None
    history: dict[str, list[float]] = field(default_factory=dict)
    decisions_seen: list[str] = field(default_factory=list)
    status_command: str = ""


def filesystem_note(scene: Scene) -> str:
    limits, broker = scene.limits, scene.limits.breaching_broker
    tight = (
        f"Broker {broker} has the tight limits: throttle below "
        f"{human_bytes(limits.tight.soft_free)} free, pause below "
        f"{human_bytes(limits.tight.hard_free)} "
        f"({human_bytes(limits.free_at_start)} was free at start)"
    )
    others = f"; the others throttle below {human_bytes(plan.OTHER_SOFT_FREE)} free."
    if scene.scenario != "fill":
        tight = (
            f"Every broker throttles below {human_bytes(plan.OTHER_SOFT_FREE)} free and pauses "
            f"below {human_bytes(plan.OTHER_HARD_FREE)}"
        )
        others = "; nothing writes in watch-only mode."
    if scene.shared_filesystem:
        return (
            f"All {len(scene.decision_files)} brokers' log dirs share one filesystem, so every "
            f"broker sees the same free space. {tight}{others}"
        )
    return f"Each broker has its own volume. {tight}{others}"


def _start_producers(scene: Scene) -> None:
    for producer_plan in plan.plan_producers(len(scene.decision_files)):
        producer = DemoProducer(
            producer_plan.name,
            scene.cluster.client_config(producer_plan.name),
            plan.DEMO_TOPIC,
            producer_plan.partition,
            plan.BASE_RATE,
        )
        scene.workers.append(producer)
        scene.producers.append(producer)
        scene.history[producer.name] = []
        producer.start()


def _act(scene: Scene, action: Action) -> None:
    if action is Action.START_FILL:

        def should_stop(written: int) -> bool:
            return plan.fill_should_stop(scene.limits, free_bytes(scene.breaching_dir), written)

        scene.loader = BulkLoader(
            scene.cluster.client_config(plan.LOADER),
            plan.DEMO_TOPIC,
            plan.loader_partition(len(scene.decision_files)),
            plan.FILL_RATE,
            should_stop,
        )
        scene.workers.append(scene.loader)
        scene.loader.start()
    elif action is Action.FREE_SPACE:
        if scene.loader is not None:
            scene.loader.stop()
        partitions = len(plan.topic_assignment(len(scene.decision_files)))
        delete_all_records(scene.cluster.client_config("admin"), plan.DEMO_TOPIC, partitions)


def _volumes(scene: Scene, decision: QuotaDecision | None) -> list[VolumeStatus]:
    if decision is None:
        return []
    with scene.watcher.lock:
        return cluster_status(scene.watcher.state, decision, datetime.now(UTC)).volumes


def _view(scene: Scene, story: Story | None, tick: Tick) -> View:
    at, decisions, first = tick.at, tick.decisions, tick.first
    phase = story.phase if story else None
    factor = first.throttle_factor if first is not None else 1.0
    return View(
        elapsed=at,
        phase=phase.value if phase else "watch only",
        narration=narration(phase, scene.limits.breaching_broker, factor)
        if phase
        else "Watch only (--scenario none): nothing writes; the decision stays OPEN.",
        decision=first,
        brokers_agreeing=sum(
            1 for d in decisions if d is not None and first is not None and d.state is first.state
        ),
        broker_count=len(decisions),
        volumes=_volumes(scene, first),
        producers=[
            ProducerView(
                p.name,
                _broker_of(p.name, scene),
                tick.rates[p.name],
                scene.history[p.name],
            )
            for p in scene.producers
        ],
        base_rate=plan.BASE_RATE,
        pause_rate=plan.PAUSE_RATE,
        filesystem_note=filesystem_note(scene),
        log_file=scene.log_file,
        status_command=scene.status_command,
        filled_bytes=scene.loader.written if scene.loader else 0,
        timings=dict(story.timings) if story else {},
    )


def _broker_of(name: str, scene: Scene) -> int:
    plans = plan.plan_producers(len(scene.decision_files))
    return next(p.broker for p in plans if p.name == name)


@dataclass(frozen=True)
class Tick:
    """One look at the cluster: when, every broker's decision file, every producer's rate."""

    at: float
    decisions: list[QuotaDecision | None]
    rates: dict[str, float]

    @property
    def first(self) -> QuotaDecision | None:
        return self.decisions[0]


def _look(scene: Scene, started: float) -> Tick:
    check_sidecars(scene.sidecars)
    now = time.monotonic()
    return Tick(
        at=now - started,
        decisions=[read_decision(path) for path in scene.decision_files],
        rates={p.name: p.meter.rate(now) for p in scene.producers},
    )


def run_scene(scene: Scene, output: Output) -> int:
    """Run until the story ends (fill) or --duration passes; 0 unless a phase failed."""
    output.event(
        "notice",
        text=filesystem_note(scene),
        limits=_limits_fields(scene),
        statusCommand=scene.status_command,
    )
    story = Story(pause_rate=plan.PAUSE_RATE) if scene.scenario == "fill" else None
    if story is not None:
        _start_producers(scene)
        output.event("phase", phase=story.phase.value, text=narration(story.phase, 0, 1.0))
    started = time.monotonic()
    next_sample = 0.0
    done_at: float | None = None
    hold = 0.0 if isinstance(output, JsonLines) else HOLD_AFTER_DONE_S
    while True:
        tick = _look(scene, started)
        _note_decision(scene, output, tick.decisions)
        if story is not None and done_at is None:
            done_at = _advance(scene, story, output, tick)
        if tick.at >= next_sample:
            next_sample += 1.0
            _sample(scene, output, story, tick)
        output.frame(partial(_view, scene, story, tick))
        if scene.duration is not None and tick.at >= scene.duration:
            break
        if done_at is not None and tick.at - done_at >= hold:
            break
        time.sleep(TICK_S)
    if story is not None:
        _summary(scene, story, output)
        return 0 if story.failure is None else 1
    return 0


def _advance(scene: Scene, story: Story, output: Output, tick: Tick) -> float | None:
    first = tick.first
    before = story.phase
    factor = first.throttle_factor if first else 1.0
    actions = story.advance(
        Observation(
            at=tick.at,
            decision=first.state if first else None,
            factor=factor,
            rates=tick.rates,
            fill_done=scene.loader is not None and scene.loader.done.is_set(),
        )
    )
    if story.phase is not before:
        text = narration(story.phase, scene.limits.breaching_broker, factor)
        took = story.timings.get(before.value)
        output.event("phase", phase=story.phase.value, previous=before.value, took=took, text=text)
    for action in actions:
        _act(scene, action)
        output.event("action", action=action.value)
    return tick.at if Action.FINISH in actions else None


def _note_decision(scene: Scene, output: Output, decisions: list[QuotaDecision | None]) -> None:
    first = decisions[0]
    state = first.state.value if first else "missing"
    if scene.decisions_seen and scene.decisions_seen[-1] == state:
        return
    scene.decisions_seen.append(state)
    output.event(
        "decision",
        state=state,
        factor=first.throttle_factor if first else None,
        brokers=[d.state.value if d else "missing" for d in decisions],
        reason=first.reasons[0].detail if first and first.reasons else None,
    )


def _sample(scene: Scene, output: Output, story: Story | None, tick: Tick) -> None:
    rates = tick.rates
    for name, rate in rates.items():
        scene.history[name] = [*scene.history[name], rate][-_HISTORY:]
    first = tick.first
    output.event(
        "sample",
        phase=story.phase.value if story else None,
        decision=first.state.value if first else None,
        factor=first.throttle_factor if first else None,
        brokers=[d.state.value if d else "missing" for d in tick.decisions],
        rates={name: round(rate) for name, rate in rates.items()},
        freeBytes=free_bytes(scene.breaching_dir),
        filledBytes=scene.loader.written if scene.loader else 0,
        topics=filling_topics(first),
    )


def filling_topics(decision: QuotaDecision | None) -> list[str]:
    """The topics the decision's reasons name as growing fastest on a volume past a limit."""
    if decision is None:
        return []
    return [topic.topic for reason in decision.reasons for topic in reason.top_topics or []]


def _limits_fields(scene: Scene) -> dict[str, Any]:
    limits = scene.limits
    return {
        "breachingBroker": limits.breaching_broker,
        "sharedFilesystem": scene.shared_filesystem,
        "freeAtStart": limits.free_at_start,
        "softFree": limits.tight.soft_free,
        "hardFree": limits.tight.hard_free,
        "fillBudget": limits.fill_budget,
        "baseRate": plan.BASE_RATE,
        "pauseRate": plan.PAUSE_RATE,
    }


def _summary(scene: Scene, story: Story, output: Output) -> None:
    result = "ok" if story.succeeded else ("failed" if story.failure else "incomplete")
    lines = [f"result: {result}" + (f" ({story.failure})" if story.failure else "")]
    lines += [f"  {name}: {seconds:.1f} s" for name, seconds in story.timings.items()]
    for label, rates in (
        ("OPEN rates", story.base_rates),
        ("paused rates", story.paused_rates),
        ("recovered rates", story.recovered_rates),
    ):
        if rates:
            shown = ", ".join(f"{name} {human_rate(rate)}" for name, rate in rates.items())
            lines.append(f"  {label}: {shown}")
    output.event(
        "summary",
        result=result,
        failure=story.failure,
        timings=story.timings,
        decisions=scene.decisions_seen,
        baseRates=story.base_rates,
        pausedRates=story.paused_rates,
        recoveredRates=story.recovered_rates,
        lowestThrottleFactor=story.lowest_factor,
        failedRecords=sum(producer.failures for producer in scene.producers),
        pauseRate=plan.PAUSE_RATE,
        text="\n".join(lines),
    )
