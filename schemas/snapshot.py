"""The volume snapshot: what one broker says about its log volumes, one message per publication.

This module is the single source of truth for the wire format. The JSON Schema in
``schemas/volume-snapshot.schema.json`` is generated from these models (``python -m schemas``) and a
test fails when the two drift.

Unknown fields are ignored so that newer publishers can add fields without breaking older
consumers; an unknown *major* ``schemaVersion`` is rejected because its meaning cannot be guessed.
There is no minor version: an additive change (a new optional field) keeps the major version and
older readers ignore the new field; anything else is a new major version.

Every field is strict (``docs/decision-rule.md``, "The strict wire contract"): no number is read
from a string or a string from a number, byte counts are JSON integers (``1000.0`` and ``1e3`` are
refused), booleans are not numbers, and ``snapshotAt`` is an RFC 3339 string, never epoch seconds.
The JSON text itself is checked before the model sees it (``schemas.json_text``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from schemas.wire_types import Instant, WireModel

SNAPSHOT_SCHEMA_VERSION = 1
"""The major version this code writes and understands."""

MAX_BYTES = 2**63 - 1
"""Byte counts must fit a Java long: the broker side reads them too."""

MAX_BROKER_ID = 2**31 - 1
MAX_VOLUMES_PER_BROKER = 1024
MAX_NAME_LENGTH = 4096

ByteCount = Annotated[int, Field(ge=0, le=MAX_BYTES, strict=True)]


class LimitType(StrEnum):
    """How a limit's ``level`` is read; every type becomes a threshold in free bytes."""

    CONSUMED_SPACE = "ConsumedSpace"
    """level = bytes consumed at which the limit triggers (the legacy style)."""
    MIN_FREE_BYTES = "MinFreeBytes"
    """level = bytes that must stay free."""
    MIN_FREE_PERCENTAGE = "MinFreePercentage"
    """level = percent of the volume's capacity that must stay free (0-100)."""


class ConsumedSpaceLimit(WireModel):
    type: Literal[LimitType.CONSUMED_SPACE]
    level: ByteCount


class MinFreeBytesLimit(WireModel):
    type: Literal[LimitType.MIN_FREE_BYTES]
    level: ByteCount


class MinFreePercentageLimit(WireModel):
    type: Literal[LimitType.MIN_FREE_PERCENTAGE]
    level: Annotated[float, Field(ge=0, le=100, strict=True)]
    """A JSON number (an integer is read as a float); never a string or a boolean."""


Limit = Annotated[
    ConsumedSpaceLimit | MinFreeBytesLimit | MinFreePercentageLimit,
    Field(discriminator="type"),
]
"""A limit definition: ``{"type": ..., "level": ...}``."""


class VolumeUsage(WireModel):
    """One filesystem holding broker data, counted once however many log dirs it holds."""

    volume_name: str = Field(
        alias="volumeName",
        strict=True,
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description="Identifies the volume uniquely on its broker, e.g. /dev/nvme1n1.",
    )
    path: str | None = Field(
        default=None,
        strict=True,
        max_length=MAX_NAME_LENGTH,
        description="The mount point, for operators.",
    )
    capacity: ByteCount = Field(description="Filesystem size in bytes.")
    consumed: ByteCount = Field(
        description="capacity minus the bytes an unprivileged writer can still use (f_bavail)."
    )
    soft_limit: Limit | None = Field(
        default=None, alias="softLimit", description="Overrides the broker-wide soft limit."
    )
    hard_limit: Limit | None = Field(
        default=None, alias="hardLimit", description="Overrides the broker-wide hard limit."
    )

    @property
    def free(self) -> int:
        return self.capacity - self.consumed


SNAPSHOT_SCHEMA_COMMENT = (
    "Integers are JSON integer literals: 1000.0 and 1e3 are refused where an integer is required, "
    "though JSON Schema 2020-12 counts them as integers. Three rules JSON Schema cannot state: "
    "every volume's consumed is at most its capacity, volumeName values are unique within a "
    "snapshot, and the instant of snapshotAt, in UTC, is in the years 1970-2999 like its text. "
    "The JSON text must be UTF-8 without a byte order mark, without NaN or Infinity, without "
    "duplicate member names, with no integer literal over 4300 characters, and nested at most 32 "
    "levels deep."
)


class VolumeSnapshot(WireModel):
    """One broker's volumes at one instant, with the limits that broker believes in."""

    model_config = ConfigDict(json_schema_extra={"$comment": SNAPSHOT_SCHEMA_COMMENT})

    schema_version: int = Field(
        alias="schemaVersion",
        ge=1,
        strict=True,
        description=(
            f"Major version of this format; {SNAPSHOT_SCHEMA_VERSION} is the only one this "
            "reader understands (a larger integer is reported as an unsupported version)."
        ),
        json_schema_extra={"const": SNAPSHOT_SCHEMA_VERSION},
    )
    broker_id: int = Field(alias="brokerId", ge=0, le=MAX_BROKER_ID, strict=True)
    snapshot_at: Instant = Field(
        alias="snapshotAt",
        description="When the volumes were measured (not when the message was sent).",
    )
    soft_limit: Limit = Field(alias="softLimit", description="Broker-wide throttle limit.")
    hard_limit: Limit = Field(alias="hardLimit", description="Broker-wide pause limit.")
    volumes: list[VolumeUsage] = Field(max_length=MAX_VOLUMES_PER_BROKER)

    @field_validator("schema_version")
    @classmethod
    def _known_major_version(cls, version: int) -> int:
        if version != SNAPSHOT_SCHEMA_VERSION:
            raise ValueError(
                f"unsupported schemaVersion {version}: this reader understands "
                f"{SNAPSHOT_SCHEMA_VERSION}"
            )
        return version

    @model_validator(mode="after")
    def _consistent(self) -> VolumeSnapshot:
        # One validator for all volumes: a Python call per volume would halve decoding speed.
        names = set()
        for index, volume in enumerate(self.volumes):
            if volume.consumed > volume.capacity:
                raise ValueError(
                    f"volumes.{index}: consumed ({volume.consumed}) exceeds capacity "
                    f"({volume.capacity}) on volume {volume.volume_name!r}"
                )
            names.add(volume.volume_name)
        if len(names) != len(self.volumes):
            raise ValueError("volumeName values must be unique within a snapshot")
        return self

    def to_json_bytes(self) -> bytes:
        """The message value as published."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()


def snapshot_key(broker_id: int) -> bytes:
    """The message key: the broker id as a decimal string, so compaction keeps one per broker."""
    return str(broker_id).encode()


def broker_id_from_key(key: bytes | None) -> int | None:
    """The broker a key names, or None unless the key is exactly ``snapshot_key`` of it.

    Only the canonical form counts (decimal digits, no sign, no leading zero, no spaces): a
    second spelling such as ``02`` would be a second compaction key for broker 2, so a record
    under it would survive a tombstone and compaction of ``2`` and come back later.
    """
    if key is None or not 0 < len(key) <= 10 or not key.isdigit():
        return None
    broker_id = int(key)
    if broker_id > MAX_BROKER_ID or snapshot_key(broker_id) != key:
        return None
    return broker_id
