"""A broker's group runs the per-volume function on each volume as a group per volume would."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.volume_groups import each_volume, each_volume_pair


def _broker_frame(volumes: list[str], values: list[int]) -> pd.DataFrame:
    """One broker's rows, the volumes interleaved as a Spark group delivers them."""
    return pd.DataFrame(
        {
            "brokerId": 7,
            "volumeName": [volumes[index % len(volumes)] for index in range(len(values))],
            "value": values,
        },
        index=range(100, 100 + len(values)),
    )


def _summary(volume: pd.DataFrame) -> pd.DataFrame:
    """What a per-volume function of the report returns: one row naming its volume."""
    assert isinstance(volume.index, pd.RangeIndex)
    assert volume.index.start == 0
    return pd.DataFrame(
        {
            "volumeName": [volume["volumeName"].iloc[0]],
            "values": [list(volume["value"])],
            "firstPosition": [int(volume.index[0])],
        }
    )


@settings(max_examples=80, deadline=None)
@given(
    volumes=st.lists(
        st.sampled_from(["/a", "/b", "/c", "/d"]), min_size=1, max_size=4, unique=True
    ),
    values=st.lists(st.integers(-5, 5), min_size=1, max_size=30),
)
def test_each_volume_equals_one_call_per_volume(volumes: list[str], values: list[int]) -> None:
    frame = _broker_frame(volumes, values)
    expected = pd.concat(
        [
            _summary(frame[frame["volumeName"] == name].reset_index(drop=True))
            for name in sorted(set(frame["volumeName"]))
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(each_volume(_summary)(frame), expected)


def test_each_volume_keeps_each_volumes_rows_in_their_order() -> None:
    frame = _broker_frame(["/b", "/a"], [3, 1, 4, 1, 5])
    stacked = each_volume(_summary)(frame)
    assert list(stacked["volumeName"]) == ["/a", "/b"]
    assert list(stacked["values"]) == [[1, 1], [3, 4, 5]]


def test_each_volume_pair_gives_a_volume_one_side_lacks_that_sides_empty_columns() -> None:
    calls: list[tuple[tuple[int, str], list[int], list[str], list[int]]] = []

    def record(key: tuple[int, str], left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        calls.append((key, list(left["value"]), list(right.columns), list(right["value"])))
        return pd.DataFrame({"volumeName": [key[1]], "rows": [len(left) + len(right)]})

    left = _broker_frame(["/a", "/b"], [1, 2, 3])
    right = _broker_frame(["/b", "/c"], [10, 20]).rename(columns={"brokerId": "broker"})
    stacked = each_volume_pair(record)((7,), left, right)

    assert [call[0] for call in calls] == [(7, "/a"), (7, "/b"), (7, "/c")]
    assert calls[0][1:] == ([1, 3], ["broker", "volumeName", "value"], [])
    assert calls[1][1] == [2]
    assert calls[1][3] == [10]
    assert calls[2][1] == []
    assert calls[2][3] == [20]
    assert list(stacked["rows"]) == [2, 2, 1]


def test_each_volume_pair_with_one_side_empty_for_the_broker() -> None:
    seen: list[tuple[str, int, int]] = []

    def record(key: tuple[int, str], left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        seen.append((key[1], len(left), len(right)))
        return pd.DataFrame({"volumeName": [key[1]]})

    left = _broker_frame(["/a"], [1, 2])
    each_volume_pair(record)((7,), left, pd.DataFrame())
    assert seen == [("/a", 2, 0)]
