"""The hot path: a parsed snapshot document checked by hand, then built without re-validation.

``VolumeSnapshot.model_validate_json`` builds one pydantic model per volume and limit, each with
its own field-set object, and that allocation (and the garbage collector's work on it) costs more
than the parse (``docs/benchmarks.md``). These few functions check exactly the rules of
``schemas.snapshot`` on the document ``schemas.json_text`` parsed, and build each model only once
its checks passed, as ``model_construct`` does (``_construct``: the same four attributes, without
``model_construct``'s per-field loop, which cost 5 us per volume). Identical limits share one
immutable model, and models of one shape share one field set.

They must never differ from the model: ``tests/schemas/test_differential.py`` holds them to the
same verdict and the same models on a generated corpus. A failed check raises ``FieldError``
(or ``UnsupportedVersionError``, or ``TextLimitError`` for an ignored member over a limit).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from schemas.json_text import text_limit_problem
from schemas.snapshot import (
    MAX_BROKER_ID,
    MAX_BYTES,
    MAX_NAME_LENGTH,
    MAX_VOLUMES_PER_BROKER,
    SNAPSHOT_SCHEMA_VERSION,
    ConsumedSpaceLimit,
    LimitType,
    MinFreeBytesLimit,
    MinFreePercentageLimit,
    VolumeSnapshot,
    VolumeUsage,
)
from schemas.wire_types import instant_in_range, is_rfc3339_text

WireLimit = ConsumedSpaceLimit | MinFreeBytesLimit | MinFreePercentageLimit
_Model = TypeVar("_Model", bound=BaseModel)

_LIMIT_MODELS: dict[str, tuple[type[WireLimit], LimitType]] = {
    LimitType.CONSUMED_SPACE.value: (ConsumedSpaceLimit, LimitType.CONSUMED_SPACE),
    LimitType.MIN_FREE_BYTES.value: (MinFreeBytesLimit, LimitType.MIN_FREE_BYTES),
    LimitType.MIN_FREE_PERCENTAGE.value: (MinFreePercentageLimit, LimitType.MIN_FREE_PERCENTAGE),
}
_PERCENTAGE = LimitType.MIN_FREE_PERCENTAGE.value
_SNAPSHOT_KEYS = frozenset(
    {"schemaVersion", "brokerId", "snapshotAt", "softLimit", "hardLimit", "volumes"}
)
_VOLUME_KEYS = frozenset({"volumeName", "path", "capacity", "consumed", "softLimit", "hardLimit"})
_LIMIT_KEYS = frozenset({"type", "level"})
_OPTIONAL_VOLUME_FIELDS = {"path": "path", "softLimit": "soft_limit", "hardLimit": "hard_limit"}
_VOLUME_FIELD_SETS: dict[tuple[str, ...], set[str]] = {}
_LIMIT_CACHE: dict[tuple[str, int | float], WireLimit] = {}
_LIMIT_CACHE_SIZE = 4096

_set_attribute = object.__setattr__
_new_volume = VolumeUsage.__new__


def _construct(model: type[_Model], values: dict[str, Any], fields_set: set[str]) -> _Model:
    """What ``model.model_construct(fields_set, **values)`` returns when ``values`` names every
    field (no default to fill) and the model has no private attribute nor extra field."""
    instance = model.__new__(model)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", fields_set)
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


class FieldError(ValueError):
    """A field breaks the contract: ``location`` is its dotted path on the wire."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location


class UnsupportedVersionError(ValueError):
    """``schemaVersion`` is an integer above the one this reader understands."""


class TextLimitError(ValueError):
    """An ignored (unknown) member breaks a limit of the JSON text (``text_limit_problem``)."""


def build_snapshot(document: Any) -> VolumeSnapshot:
    """The snapshot ``document`` describes, checked as ``VolumeSnapshot`` would check it."""
    if type(document) is not dict:
        raise FieldError("value", "must be a JSON object")
    version = document.get("schemaVersion")
    if type(version) is int and version > SNAPSHOT_SCHEMA_VERSION:
        raise UnsupportedVersionError(
            f"schemaVersion {version}: this reader understands {SNAPSHOT_SCHEMA_VERSION}"
        )
    if type(version) is not int or version != SNAPSHOT_SCHEMA_VERSION:
        raise FieldError("schemaVersion", f"must be the integer {SNAPSHOT_SCHEMA_VERSION}")
    broker_id = document.get("brokerId")
    if type(broker_id) is not int or not 0 <= broker_id <= MAX_BROKER_ID:
        raise FieldError("brokerId", f"must be an integer from 0 to {MAX_BROKER_ID}")
    values = {
        "schema_version": version,
        "broker_id": broker_id,
        "snapshot_at": _instant(document.get("snapshotAt")),
        "soft_limit": _limit(document.get("softLimit"), "softLimit", 2),
        "hard_limit": _limit(document.get("hardLimit"), "hardLimit", 2),
        "volumes": _volumes(document.get("volumes")),
    }
    if len(document) > len(_SNAPSHOT_KEYS):
        _check_ignored_members(document, _SNAPSHOT_KEYS, 2)
    return _construct(VolumeSnapshot, values, set(values))


def _instant(value: object) -> datetime:
    if not is_rfc3339_text(value):
        raise FieldError("snapshotAt", "must be an RFC 3339 date-time string with an offset")
    try:
        moment = datetime.fromisoformat(value)  # type: ignore[arg-type]  # a str: checked above
    except ValueError:
        raise FieldError("snapshotAt", "is not a date and time of the calendar") from None
    if not instant_in_range(moment):
        raise FieldError("snapshotAt", "must be an instant in the years 1970-2999 (UTC)")
    return moment


def _limit(value: object, location: str, depth: int) -> WireLimit:
    """A limit object found at nesting level ``depth``."""
    if type(value) is not dict:
        raise FieldError(location, "must be a limit object")
    kind = value.get("type")
    level = value.get("level")
    if type(kind) is not str or kind not in _LIMIT_MODELS:
        raise FieldError(f"{location}.type", "must be a known limit type")
    if kind == _PERCENTAGE:
        if type(level) is int and 0 <= level <= 100:
            level = float(level)
        elif type(level) is not float or not 0.0 <= level <= 100.0:
            raise FieldError(f"{location}.level", "must be a number from 0 to 100")
    elif type(level) is not int or not 0 <= level <= MAX_BYTES:
        raise FieldError(f"{location}.level", f"must be an integer from 0 to {MAX_BYTES}")
    if len(value) > len(_LIMIT_KEYS):
        _check_ignored_members(value, _LIMIT_KEYS, depth + 1)
    # 0.0 and -0.0 are equal keys but print differently: zero is never shared.
    if not level:
        return _new_limit(kind, level)
    limit = _LIMIT_CACHE.get((kind, level))
    if limit is None:
        if len(_LIMIT_CACHE) >= _LIMIT_CACHE_SIZE:
            _LIMIT_CACHE.clear()
        limit = _LIMIT_CACHE[kind, level] = _new_limit(kind, level)
    return limit


def _new_limit(kind: str, level: int | float) -> WireLimit:
    model, limit_type = _LIMIT_MODELS[kind]
    return _construct(model, {"type": limit_type, "level": level}, {"type", "level"})


def _volumes(value: object) -> list[VolumeUsage]:
    if type(value) is not list or len(value) > MAX_VOLUMES_PER_BROKER:
        raise FieldError("volumes", f"must be an array of at most {MAX_VOLUMES_PER_BROKER}")
    volumes: list[VolumeUsage] = []
    names: set[str] = set()
    # Names bound locally: this loop runs once per volume of every snapshot.
    append, add_name, new, set_attribute = volumes.append, names.add, _new_volume, _set_attribute
    fields_set, model, max_name, max_bytes = _WITH_PATH, VolumeUsage, MAX_NAME_LENGTH, MAX_BYTES
    # The common shape (name, path, capacity, consumed) here; anything else in _volume.
    for index, item in enumerate(value):
        if type(item) is dict and len(item) == 4:
            name = item.get("volumeName")
            path = item.get("path")
            capacity = item.get("capacity")
            consumed = item.get("consumed")
            if (
                type(name) is str
                and type(path) is str
                and type(capacity) is int
                and type(consumed) is int
                and 0 < len(name) <= max_name
                and len(path) <= max_name
                and 0 <= consumed <= capacity <= max_bytes
            ):
                instance = new(model)
                set_attribute(
                    instance,
                    "__dict__",
                    {
                        "volume_name": name,
                        "path": path,
                        "capacity": capacity,
                        "consumed": consumed,
                        "soft_limit": None,
                        "hard_limit": None,
                    },
                )
                set_attribute(instance, "__pydantic_fields_set__", fields_set)
                set_attribute(instance, "__pydantic_extra__", None)
                set_attribute(instance, "__pydantic_private__", None)
                append(instance)
                add_name(name)
                continue
        volume = _volume(item, index)
        append(volume)
        add_name(volume.volume_name)
    if len(names) != len(volumes):
        raise FieldError("volumes", "volumeName values must be unique within a snapshot")
    return volumes


def _volume(value: object, index: int) -> VolumeUsage:
    """Any volume, checked field by field (the general case, and every failing volume)."""
    if type(value) is not dict:
        raise FieldError(f"volumes.{index}", "must be a volume object")
    name = value.get("volumeName")
    capacity = value.get("capacity")
    consumed = value.get("consumed")
    if type(name) is not str or not 0 < len(name) <= MAX_NAME_LENGTH:
        raise FieldError(f"volumes.{index}.volumeName", "must be a string of 1-4096 characters")
    if type(capacity) is not int or not 0 <= capacity <= MAX_BYTES:
        raise FieldError(f"volumes.{index}.capacity", "must be a byte count")
    if type(consumed) is not int or not 0 <= consumed <= capacity:
        raise FieldError(f"volumes.{index}.consumed", "must be a byte count within capacity")
    path = value.get("path")
    if path is not None and (type(path) is not str or len(path) > MAX_NAME_LENGTH):
        raise FieldError(f"volumes.{index}.path", "must be a string or null")
    values: dict[str, Any] = {
        "volume_name": name,
        "path": path,
        "capacity": capacity,
        "consumed": consumed,
        "soft_limit": None,
        "hard_limit": None,
    }
    present = tuple(key for key in _OPTIONAL_VOLUME_FIELDS if key in value)
    if len(value) > 3 + len(present):
        _check_ignored_members(value, _VOLUME_KEYS, 4)
    for key in present[1:] if present[:1] == ("path",) else present:
        if (limit := value[key]) is not None:
            values[_OPTIONAL_VOLUME_FIELDS[key]] = _limit(limit, f"volumes.{index}.{key}", 4)
    return _construct(VolumeUsage, values, _volume_fields_set(present))


def _volume_fields_set(present: tuple[str, ...]) -> set[str]:
    """One field set per shape, shared: pydantic copies a field set before it changes one."""
    fields_set = _VOLUME_FIELD_SETS.get(present)
    if fields_set is None:
        fields = {"volume_name", "capacity", "consumed"}
        fields.update(_OPTIONAL_VOLUME_FIELDS[key] for key in present)
        fields_set = _VOLUME_FIELD_SETS[present] = fields
    return fields_set


_WITH_PATH = _volume_fields_set(("path",))


def _check_ignored_members(value: dict[str, Any], known: frozenset[str], depth: int) -> None:
    """Unknown members are ignored, but the JSON text's limits hold there too (at ``depth``)."""
    for key, member in value.items():
        if key not in known and (problem := text_limit_problem(member, depth)) is not None:
            raise TextLimitError(problem)
