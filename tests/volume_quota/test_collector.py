"""The decider's collector setting: only the young generation's threshold changes."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from volume_quota.collector import YOUNG_GENERATION_THRESHOLD, tune_for_decoding


@pytest.fixture
def restored_thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 7, 9)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_tuning_raises_the_young_generation_threshold_and_keeps_the_others(
    restored_thresholds: tuple[int, int, int],
) -> None:
    tune_for_decoding()
    assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, 7, 9)
    assert YOUNG_GENERATION_THRESHOLD > 700, "CPython's default is 700: this must collect less"


def test_decoding_with_a_live_state_makes_fewer_young_collections_once_tuned(
    restored_thresholds: tuple[int, int, int],
) -> None:
    def young_collections_while_allocating() -> int:
        gc.collect()
        before: int = gc.get_stats()[0]["collections"]
        kept = [[{"volume": index}] for index in range(20_000)]
        after: int = gc.get_stats()[0]["collections"]
        assert len(kept) == 20_000
        return after - before

    default = young_collections_while_allocating()
    tune_for_decoding()
    tuned = young_collections_while_allocating()
    assert tuned * 3 < default, (default, tuned)
