"""``volume-quota status``: which topics fill a volume, and whether retention will stop them (pure).

The usage topic (``schemas.usage``) is read like the snapshot topic: every record's signature is
checked under the snapshot signature policy (``snapshot_signatures``), ``decode_usage`` judges
the value, a tombstone forgets its broker, and the last document of each broker counts. What is
refused is counted by reason, never used.

For each volume shown (those in THROTTLE or PAUSE; every volume with ``--topics``), its largest
topics as the broker's sidecar measured them: bytes, share of the volume's capacity, growth over
15 min and 24 h with the span each covers, and the retention outlook
(``consumer.retention_outlook``) from the topic's configs, which the command reads itself; for a
tiered topic whose segments wait for the remote store, its upload backlog
(``consumer.upload_backlog``), and the volume's total over the topics shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from pydantic import Field

from consumer.reasons import human_bytes
from consumer.retention_outlook import (
    OutlookKind,
    TopicOnVolume,
    retention_config,
    retention_outlook,
)
from consumer.signatures import SignatureMode, SignatureTrust, check_signature
from consumer.upload_backlog import upload_backlog_bytes
from schemas.decision import QuotaState
from schemas.decode import decode_usage
from schemas.snapshot import broker_id_from_key
from schemas.usage import Growth, TopicUsage, TopicUsageDocument, VolumeTopics
from schemas.wire_types import WireModel

NOT_AUTHORIZED = "not authorized to describe configs"
TopicConfigs = Mapping[str, Mapping[str, str | None] | str]
"""Per topic: its configs (name -> value), or why they are not known."""


class UsageCollection:
    """The last usage document of each broker, from the records of the usage topic in order."""

    def __init__(
        self, mode: SignatureMode = SignatureMode.ACCEPT, trust: SignatureTrust | None = None
    ) -> None:
        self._mode = mode
        self._trust = trust
        self.documents: dict[int, TopicUsageDocument] = {}
        self.refused: Counter[str] = Counter()
        """Records not used, by reason (``decode_usage``'s, or ``signature_<outcome>``)."""
        self.unverified: Counter[str] = Counter()
        """Records used although their signature check failed (``snapshot_signatures=warn``)."""

    def apply(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        now: datetime,
    ) -> None:
        if self._mode is not SignatureMode.ACCEPT and self._trust is not None:
            check = check_signature(key, value, headers, self._trust, now)
            if not check.trusted:
                reason = f"signature_{check.outcome.value}"
                if self._mode is SignatureMode.REQUIRE:
                    self.refused[reason] += 1
                    return
                self.unverified[reason] += 1
        if value is None:
            broker_id = broker_id_from_key(key)
            if broker_id is None:
                self.refused["invalid_key"] += 1
            else:
                self.documents.pop(broker_id, None)
            return
        decoded = decode_usage(value, key)
        if isinstance(decoded, TopicUsageDocument):
            self.documents[decoded.broker_id] = decoded
        else:
            self.refused[decoded.reason.value] += 1


class VolumeRow(Protocol):
    """What a row of ``consumer.status_report`` says of a volume."""

    @property
    def broker_id(self) -> int: ...
    @property
    def volume_name(self) -> str: ...
    @property
    def capacity_bytes(self) -> int: ...
    @property
    def free_bytes(self) -> int: ...
    @property
    def state(self) -> QuotaState: ...


class GrowthStatus(WireModel):
    bytes: int
    seconds: float


class RetentionStatus(WireModel):
    outlook: str = Field(description="bounded, steady, unbounded or unknown")
    bound_bytes: int | None = Field(None, alias="boundBytes")
    detail: str
    fits_in_free_space: bool | None = Field(
        None,
        alias="fitsInFreeSpace",
        description="Whether what retention still lets the topic add fits in the volume's free "
        "space (false when unbounded; absent when not known).",
    )


class TopicStatus(WireModel):
    topic: str
    bytes: int
    partitions: int
    share_percent: float = Field(alias="sharePercent")
    growth_15m: GrowthStatus | None = Field(None, alias="growth15m")
    growth_24h: GrowthStatus | None = Field(None, alias="growth24h")
    retention: RetentionStatus
    upload_backlog_bytes: int | None = Field(
        None,
        alias="uploadBacklogBytes",
        description="Tiered topics: bytes beyond what local retention keeps, waiting for the "
        "remote store (0 when none or not tiered; absent when not known).",
    )


class VolumeTopicsStatus(WireModel):
    broker_id: int = Field(alias="brokerId")
    volume_name: str = Field(alias="volumeName")
    state: str
    surveyed_at: datetime | None = Field(None, alias="surveyedAt")
    usage_age_seconds: float | None = Field(None, alias="usageAgeSeconds")
    topics: list[TopicStatus] = Field(default_factory=list)
    other_topics: int = Field(0, alias="otherTopics")
    other_bytes: int = Field(0, alias="otherBytes")
    unattributed_bytes: int = Field(0, alias="unattributedBytes")
    upload_backlog_bytes: int = Field(
        0,
        alias="uploadBacklogBytes",
        description="The upload backlog of the topics shown, summed.",
    )
    problem: str | None = None


def _shown(rows: Sequence[VolumeRow], every_volume: bool) -> list[VolumeRow]:
    return [row for row in rows if every_volume or row.state is not QuotaState.OPEN]


def _usage_volume(
    documents: Mapping[int, TopicUsageDocument], row: VolumeRow
) -> tuple[TopicUsageDocument, VolumeTopics] | None:
    document = documents.get(row.broker_id)
    if document is None:
        return None
    for entry in document.volumes:
        if entry.volume_name == row.volume_name:
            return document, entry
    return None


def topics_to_describe(
    rows: Sequence[VolumeRow],
    documents: Mapping[int, TopicUsageDocument],
    *,
    every_volume: bool,
    top: int,
) -> list[str]:
    """The topics whose configs the shown rows need, sorted: one DescribeConfigs call."""
    names: set[str] = set()
    for row in _shown(rows, every_volume):
        found = _usage_volume(documents, row)
        if found is not None:
            names.update(topic.topic for topic in found[1].topics[:top])
    return sorted(names)


def _growth(growth: Growth | None) -> GrowthStatus | None:
    return None if growth is None else GrowthStatus(bytes=growth.bytes, seconds=growth.seconds)


def _rate(topic: TopicUsage) -> float | None:
    """Bytes per second over the longest span measured."""
    for growth in (topic.growth_24h, topic.growth_15m):
        if growth is not None and growth.seconds > 0:
            return growth.bytes / growth.seconds
    return None


def _retention(
    topic: TopicUsage, configs: Mapping[str, str | None] | str | None, free: int
) -> RetentionStatus:
    if configs is None:
        return RetentionStatus(outlook="unknown", detail="configs not read")
    if isinstance(configs, str):
        return RetentionStatus(outlook="unknown", detail=configs)
    try:
        config = retention_config(configs)
    except ValueError as error:
        return RetentionStatus(outlook="unknown", detail=f"unreadable config: {error}")
    outlook = retention_outlook(
        TopicOnVolume(
            bytes=topic.bytes,
            partitions=topic.partitions,
            growth_bytes_per_second=_rate(topic),
            active_segment_bytes=topic.active_segment_bytes,
        ),
        config,
    )
    fits: bool | None = None
    if outlook.kind is OutlookKind.UNBOUNDED:
        fits = False
    elif outlook.bound_bytes is not None:
        fits = outlook.bound_bytes - topic.bytes <= free
    return RetentionStatus(
        outlook=outlook.kind.value,
        bound_bytes=outlook.bound_bytes,
        detail=outlook.detail,
        fits_in_free_space=fits,
    )


def topic_upload_backlog(
    topic: TopicUsage, configs: Mapping[str, str | None] | str | None
) -> int | None:
    """The topic's upload backlog on its volume (``consumer.upload_backlog``) from its configs;
    None when the configs or the growth are not known."""
    if configs is None or isinstance(configs, str):
        return None
    try:
        config = retention_config(configs)
    except ValueError:
        return None
    return upload_backlog_bytes(
        config,
        bytes_on_volume=topic.bytes,
        transient_bytes=topic.transient_bytes,
        partitions=topic.partitions,
        growth_bytes_per_second=_rate(topic),
        active_segment_bytes=topic.active_segment_bytes,
    )


def volume_topics(
    rows: Sequence[VolumeRow],
    documents: Mapping[int, TopicUsageDocument],
    configs: TopicConfigs,
    now: datetime,
    *,
    every_volume: bool,
    top: int,
) -> list[VolumeTopicsStatus]:
    """The top ``top`` topics of each shown volume, in the rows' order (worst first)."""
    shown = []
    for row in _shown(rows, every_volume):
        found = _usage_volume(documents, row)
        base = {"broker_id": row.broker_id, "volume_name": row.volume_name}
        state = row.state.value
        if found is None:
            shown.append(
                VolumeTopicsStatus(
                    **base,
                    state=state,
                    problem="no topic usage published for this volume (is the sidecar or the "
                    "cluster agent publishing usage, and may this identity read the usage "
                    "topic?)",
                )
            )
            continue
        document, entry = found
        capacity = row.capacity_bytes
        topics = [
            TopicStatus(
                topic=topic.topic,
                bytes=topic.bytes,
                partitions=topic.partitions,
                share_percent=100.0 * topic.bytes / capacity if capacity else 0.0,
                growth_15m=_growth(topic.growth_15m),
                growth_24h=_growth(topic.growth_24h),
                retention=_retention(topic, configs.get(topic.topic), row.free_bytes),
                upload_backlog_bytes=topic_upload_backlog(topic, configs.get(topic.topic)),
            )
            for topic in entry.topics[:top]
        ]
        left_out = entry.topics[top:]
        shown.append(
            VolumeTopicsStatus(
                **base,
                state=state,
                surveyed_at=document.surveyed_at,
                usage_age_seconds=(now - document.surveyed_at).total_seconds(),
                topics=topics,
                other_topics=entry.other.topics + len(left_out),
                other_bytes=entry.other.bytes + sum(topic.bytes for topic in left_out),
                unattributed_bytes=entry.unattributed_bytes,
                upload_backlog_bytes=sum(topic.upload_backlog_bytes or 0 for topic in topics),
            )
        )
    return shown


TOPIC_COLUMNS = ("TOPIC", "BYTES", "SHARE", "GROWTH 15M", "GROWTH 24H", "RETENTION")
BACKLOG_COLUMN = "UPLOAD BACKLOG"
"""Shown (before RETENTION) only on a volume where a topic has an upload backlog."""


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _growth_cell(growth: GrowthStatus | None) -> str:
    if growth is None:
        return "-"
    sign = "-" if growth.bytes < 0 else "+"
    return f"{sign}{human_bytes(abs(growth.bytes))}/{_span(growth.seconds)}"


def _retention_cell(retention: RetentionStatus) -> str:
    if retention.outlook == "unknown":
        return f"retention: unknown ({retention.detail})"
    text = retention.outlook
    if retention.bound_bytes is not None:
        text += f" at {human_bytes(retention.bound_bytes)}"
    if retention.fits_in_free_space is True:
        text += " (fits in free space)"
    elif retention.fits_in_free_space is False and retention.outlook != "unbounded":
        text += " (MORE THAN THE FREE SPACE)"
    return f"{text}: {retention.detail}"


def _backlog_cell(backlog: int | None) -> str:
    if backlog is None:
        return "?"
    return human_bytes(backlog) if backlog > 0 else "-"


def render_volume_topics(entries: Sequence[VolumeTopicsStatus]) -> str:
    """One small table per shown volume."""
    parts = []
    for entry in entries:
        title = f"top topics of broker {entry.broker_id} volume {entry.volume_name} ({entry.state})"
        if entry.problem is not None:
            parts.append(
                f"no topic usage published for broker {entry.broker_id} volume "
                f"{entry.volume_name} ({entry.state}): {entry.problem}"
            )
            continue
        age = entry.usage_age_seconds
        title += f", surveyed {_span(max(age, 0.0))} ago:" if age is not None else ":"
        backlog = entry.upload_backlog_bytes > 0
        columns = list(TOPIC_COLUMNS)
        if backlog:
            columns.insert(-1, BACKLOG_COLUMN)
        lines: list[list[str]] = [columns]
        for topic in entry.topics:
            cells = [
                topic.topic,
                human_bytes(topic.bytes),
                f"{topic.share_percent:.1f}%",
                _growth_cell(topic.growth_15m),
                _growth_cell(topic.growth_24h),
                _retention_cell(topic.retention),
            ]
            if backlog:
                cells.insert(-1, _backlog_cell(topic.upload_backlog_bytes))
            lines.append(cells)
        widths = [max(len(line[column]) for line in lines) for column in range(len(columns))]
        table = [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in lines
        ]
        footer = (
            f"  other: {entry.other_topics} topics, {human_bytes(entry.other_bytes)}; "
            f"not in any topic: {human_bytes(entry.unattributed_bytes)}"
        )
        if backlog:
            footer += (
                f"\n  upload backlog: {human_bytes(entry.upload_backlog_bytes)} that local "
                "retention cannot free until the remote store takes them"
            )
        parts.append("\n".join([title, *table, footer]))
    return "\n\n".join(parts)
