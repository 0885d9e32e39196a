"""The tiered-storage upload backlog of a topic on one volume: bytes no local retention can free
until the remote store takes them (pure).

With tiered storage (``remote.storage.enable=true``) Kafka deletes a closed segment locally only
once it has been copied to the remote store (its end offset is at most the highest offset in
remote storage). While uploads work, a partition stays within what local retention keeps;
while they fail (the remote store is down, read-only, refusing credentials), every byte written
stays on the broker's disk and no local retention setting can free it.

The estimate, for a tiered topic on one volume:

``backlog = max(0, local bytes - local bound)``

- **local bytes**: the topic's bytes on the volume minus its transient bytes (``-future``,
  ``-delete`` and ``-stray`` dirs, which local retention does not govern);
- **local bound**: what local retention would keep if every closed segment were uploaded, as
  ``consumer.retention_outlook`` reasons, from ``local.retention.bytes`` and
  ``local.retention.ms`` (``-2``: the value of ``retention.bytes`` / ``retention.ms``):

  - by size: ``partitions x (local.retention.bytes + segment.bytes)``;
  - by time: ``rate x local.retention.ms + partitions x segment.bytes``, where ``rate`` is the
    topic's net growth on the volume as the sidecar measured it (negative counts as 0). While
    uploads fail nothing is deleted, so the net growth is the write rate; while they work it is
    about 0 at the plateau, and the bound is one segment per partition plus what the rate adds;
  - both set: the smaller; never below the active segments (retention cannot delete them).

Assumed: segments roll at ``segment.bytes`` (a ``segment.ms`` roll makes them smaller, so the
bound is generous, the backlog never overstated for that); the measured growth stands for the
rate over ``local.retention.ms``; the volume holds the topic's partitions in one log dir each.

Zero for a topic that is not tiered, that does not delete (``cleanup.policy`` without
``delete``), or whose local retention is unlimited (``-1`` for both, inherited or not: local
retention would keep everything, uploaded or not). None when only ``local.retention.ms``
bounds the topic and its growth is not measured yet: not known.

The estimate is monotone in the topic's bytes, never negative, and zero whenever the local
bytes are within the bound (a property test checks all three).
"""

from __future__ import annotations

from consumer.retention_outlook import UNLIMITED, RetentionConfig


def local_bound_bytes(
    partitions: int,
    growth_bytes_per_second: float | None,
    active_segment_bytes: int,
    config: RetentionConfig,
) -> int | None:
    """What local retention keeps of a tiered topic on the volume when every closed segment is
    uploaded (see the module docstring); None when unlimited or not known."""
    ms, size = config.effective_ms, config.effective_bytes
    segments = partitions * config.segment_bytes
    candidates: list[int] = []
    if size != UNLIMITED:
        candidates.append(partitions * size + segments)
    if ms != UNLIMITED and growth_bytes_per_second is not None:
        written = max(growth_bytes_per_second, 0.0) * ms / 1000
        candidates.append(int(written) + segments)
    if not candidates:
        return None
    return max(min(candidates), active_segment_bytes)


def upload_backlog_bytes(
    config: RetentionConfig,
    *,
    bytes_on_volume: int,
    transient_bytes: int,
    partitions: int,
    growth_bytes_per_second: float | None,
    active_segment_bytes: int,
) -> int | None:
    """Bytes of the topic on the volume beyond what local retention would keep: the upload
    backlog (see the module docstring). 0 when not tiered; None when not known."""
    if not config.remote_storage or "delete" not in config.cleanup_policy:
        return 0
    if config.effective_ms == UNLIMITED and config.effective_bytes == UNLIMITED:
        return 0
    bound = local_bound_bytes(partitions, growth_bytes_per_second, active_segment_bytes, config)
    if bound is None:
        return None
    local = max(bytes_on_volume - transient_bytes, 0)
    return max(local - bound, 0)
