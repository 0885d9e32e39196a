"""What the publisher needs from a broker's ``server.properties``: its log dirs and its id.

Kafka's rules: ``log.dirs`` (comma-separated) wins over ``log.dir``; ``metadata.log.dir`` is the
KRaft metadata log, a disk too when it is set; the node id is ``node.id`` (KRaft) or
``broker.id`` (older configurations).
"""

from __future__ import annotations

from collections.abc import Mapping


class ServerPropertiesError(ValueError):
    """The properties do not say what the publisher needs."""


def log_dirs_from_properties(properties: Mapping[str, str]) -> list[str]:
    """Every data and metadata log dir the properties name, in order, without duplicates."""
    data_dirs = _comma_separated(properties.get("log.dirs", ""))
    if not data_dirs:
        data_dirs = _comma_separated(properties.get("log.dir", ""))
    if not data_dirs:
        raise ServerPropertiesError("sets neither log.dirs nor log.dir")
    metadata_dir = properties.get("metadata.log.dir", "").strip()
    all_dirs = [*data_dirs, metadata_dir] if metadata_dir else data_dirs
    return list(dict.fromkeys(all_dirs))


def node_id_from_properties(properties: Mapping[str, str]) -> int | None:
    """``node.id``, else ``broker.id``; None when neither is set (or it is -1, "generate one")."""
    for key in ("node.id", "broker.id"):
        text = properties.get(key, "").strip()
        if not text:
            continue
        if not text.lstrip("-").isdigit():
            raise ServerPropertiesError(f"{key}={text!r} is not an integer")
        node_id = int(text)
        if node_id >= 0:
            return node_id
    return None


def _comma_separated(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
