"""The override history: records folded, in order of arrival, into the intervals an operator's
override decided, judged as the consumer's follower judges them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from consumer.overrides import OverridePolicy, RefusalReason
from consumer.signatures import SignatureMode
from schemas.decision import QuotaState
from spark_history.decision_replay import OPEN, PAUSE
from spark_history.override_history import (
    NO_OVERRIDE,
    OverrideInterval,
    fold_overrides,
    forced_states,
    whole_buckets,
)
from tests.spark_history_pure.override_factory import (
    OperatorSigner,
    override_record,
    override_value,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SIGNER = OperatorSigner(T0 - timedelta(days=1))


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _seconds(minutes: float) -> float:
    return _at(minutes).timestamp()


def test_an_override_is_in_force_from_set_at_until_it_expires() -> None:
    value = override_value("PAUSE", _at(0), _at(30))
    history = fold_overrides([override_record(value, _at(0), SIGNER)], SIGNER.policy())
    assert history.intervals == (OverrideInterval(_seconds(0), _seconds(30), QuotaState.PAUSE),)
    assert history.refused == ()


def test_a_tombstone_clears_it_early_and_a_later_record_replaces_it() -> None:
    records = [
        override_record(override_value("PAUSE", _at(0), _at(60)), _at(0), SIGNER, 0),
        override_record(None, _at(10), SIGNER, 1),
        override_record(override_value("OPEN", _at(20), _at(60)), _at(20), SIGNER, 2),
        override_record(override_value("PAUSE", _at(25), _at(40)), _at(25), SIGNER, 3),
    ]
    history = fold_overrides(reversed(records), SIGNER.policy())  # sorted by arrival
    assert history.intervals == (
        OverrideInterval(_seconds(0), _seconds(10), QuotaState.PAUSE),
        OverrideInterval(_seconds(20), _seconds(25), QuotaState.OPEN),
        OverrideInterval(_seconds(25), _seconds(40), QuotaState.PAUSE),
    )


def test_an_unsigned_record_is_refused_under_require_and_the_held_override_stays() -> None:
    records = [
        override_record(override_value("PAUSE", _at(0), _at(60)), _at(0), SIGNER),
        override_record(override_value("OPEN", _at(5), _at(60)), _at(5), None, 1),
        override_record(None, _at(6), None, 2),
    ]
    history = fold_overrides(records, SIGNER.policy())
    assert history.intervals == (OverrideInterval(_seconds(0), _seconds(60), QuotaState.PAUSE),)
    assert [refusal.reason for refusal in history.refused] == [RefusalReason.UNSIGNED] * 2


def test_under_warn_an_unsigned_record_takes_effect() -> None:
    records = [override_record(override_value("OPEN", _at(5), _at(15)), _at(5))]
    history = fold_overrides(records, SIGNER.policy(SignatureMode.WARN))
    assert history.intervals == (OverrideInterval(_seconds(5), _seconds(15), QuotaState.OPEN),)


def test_a_record_dated_far_from_its_arrival_is_refused() -> None:
    # Written again an hour later: an old override must not take effect again.
    late = override_record(override_value("OPEN", _at(0), _at(120)), _at(60), SIGNER)
    history = fold_overrides([late], SIGNER.policy())
    assert history.intervals == ()
    assert [refusal.reason for refusal in history.refused] == [RefusalReason.SET_AT_SKEW]


def test_a_record_signed_by_someone_else_is_refused() -> None:
    stranger = OperatorSigner(T0 - timedelta(days=1))  # another CA: not trusted
    record = override_record(override_value("OPEN", _at(0), _at(10)), _at(0), stranger)
    history = fold_overrides([record], SIGNER.policy())
    assert history.intervals == ()
    assert len(history.refused) == 1


def test_an_override_dated_slightly_ahead_waits_until_its_set_at() -> None:
    value = override_value("OPEN", _at(2), _at(10))
    history = fold_overrides([override_record(value, _at(0))], OverridePolicy())
    assert history.intervals == (OverrideInterval(_seconds(2), _seconds(10), QuotaState.OPEN),)


def test_forced_states_at_each_instant_half_open() -> None:
    intervals = [
        OverrideInterval(10.0, 20.0, QuotaState.OPEN),
        OverrideInterval(20.0, 30.0, QuotaState.PAUSE),
    ]
    grid = np.array([0.0, 10.0, 19.9, 20.0, 29.9, 30.0])
    forced = forced_states(intervals, grid)
    assert forced.tolist() == [NO_OVERRIDE, OPEN, OPEN, PAUSE, PAUSE, NO_OVERRIDE]


def test_a_bucket_counts_under_an_override_only_when_it_covered_the_whole_bucket() -> None:
    intervals = [
        OverrideInterval(0.0, 7200.0, QuotaState.PAUSE),
        OverrideInterval(9000.0, 10000.0, QuotaState.OPEN),  # shorter than a bucket
    ]
    shrunk = whole_buckets(intervals, 3600.0)
    assert shrunk == (OverrideInterval(3600.0, 7200.0, QuotaState.PAUSE),)
    # Bucket ends 3600 (bucket (0, 3600]) and 7200 is past the end: only the first counts.
    forced = forced_states(shrunk, np.array([3600.0, 7200.0, 10800.0]))
    assert forced.tolist() == [PAUSE, NO_OVERRIDE, NO_OVERRIDE]
