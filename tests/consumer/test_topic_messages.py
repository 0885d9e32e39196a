from __future__ import annotations

from consumer.topic_messages import Retirement, interpret_message
from schemas.decode import Rejection, RejectionReason
from schemas.snapshot import VolumeSnapshot
from tests.snapshot_factory import snapshot_line


def test_snapshot_message_is_decoded_against_its_key() -> None:
    assert isinstance(interpret_message(b"4", snapshot_line(broker_id=4)), VolumeSnapshot)
    mismatch = interpret_message(b"5", snapshot_line(broker_id=4))
    assert isinstance(mismatch, Rejection)
    assert mismatch.reason is RejectionReason.KEY_MISMATCH


def test_tombstone_retires_the_keyed_broker() -> None:
    assert interpret_message(b"12", None) == Retirement(12)


def test_unusable_keys_are_rejected() -> None:
    for key, value in ((None, None), (b"abc", None), (None, snapshot_line()), (b"012", None)):
        event = interpret_message(key, value)
        assert isinstance(event, Rejection)
        assert event.reason is RejectionReason.INVALID_KEY
