"""Which broker this is and which log dirs it has, from its files when not configured directly.

``server.properties`` names the log dirs and usually ``node.id``. Charts that number brokers at
start-up (counting from a minimum id) write the id only into ``meta.properties``,
which Kafka keeps in every log dir it formats: that file is read when nothing else names the id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from volume_quota.java_properties import parse_java_properties
from volume_quota.server_properties import (
    ServerPropertiesError,
    log_dirs_from_properties,
    node_id_from_properties,
)

META_PROPERTIES = "meta.properties"


class BrokerIdentityError(ValueError):
    """A broker file cannot be read or does not say what is needed."""


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    log_dirs: tuple[Path, ...]
    """The configured log dirs first, then those of server.properties, without duplicates."""
    node_id: int | None


def broker_identity(server_properties: Path | None, log_dirs: Sequence[Path]) -> BrokerIdentity:
    node_id = None
    all_dirs = list(log_dirs)
    if server_properties is not None:
        properties = _read_properties(server_properties)
        try:
            all_dirs.extend(Path(d) for d in log_dirs_from_properties(properties))
            node_id = node_id_from_properties(properties)
        except ServerPropertiesError as error:
            raise BrokerIdentityError(f"{server_properties} {error}") from None
    unique = tuple(dict.fromkeys(all_dirs))
    if node_id is None:
        node_id = node_id_from_meta_properties(unique)
    return BrokerIdentity(unique, node_id)


def node_id_from_meta_properties(log_dirs: Sequence[Path]) -> int | None:
    """``node.id`` of the first log dir's ``meta.properties`` that has one, else None."""
    for log_dir in log_dirs:
        path = log_dir / META_PROPERTIES
        if not path.is_file():
            continue
        try:
            node_id = node_id_from_properties(_read_properties(path))
        except ServerPropertiesError as error:
            raise BrokerIdentityError(f"{path} {error}") from None
        if node_id is not None:
            return node_id
    return None


def _read_properties(path: Path) -> dict[str, str]:
    try:
        return parse_java_properties(path.read_text(encoding="latin-1"))
    except OSError as error:
        raise BrokerIdentityError(f"cannot read {path}: {error.strerror or error}") from None
