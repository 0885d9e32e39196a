"""The volume's path is the sum of its topics' paths; its crossing of the limit is exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_history.forecast.mechanism.topic_path import TopicPath
from spark_history.forecast.mechanism.volume_path import VolumePath, crossing_seconds

DAY = 86_400.0

topics = st.builds(
    TopicPath,
    topic=st.text("abc", min_size=1, max_size=4),
    bytes=st.floats(0.0, 1e12),
    rate=st.floats(0.0, 1e7),
    bound=st.one_of(st.none(), st.floats(0.0, 2e12)),
    detail=st.just(""),
)


def test_a_bounded_and_an_unbounded_topic_fill_when_the_unbounded_one_uses_the_room() -> None:
    bounded = TopicPath("a", 100.0, 10.0, 200.0, "")
    unbounded = TopicPath("b", 50.0, 1.0, None, "")
    path = VolumePath(consumed=1000.0, topics=(bounded, unbounded), rest_rate=0.0)
    # a adds 100 in 10 s then stops; b adds 1/s: 1000 + 100 + t = 1500 at t = 400.
    assert crossing_seconds(path, 1500.0, DAY) == 400.0
    assert crossing_seconds(path, 1500.0, 399.0) is None
    assert crossing_seconds(path, 1000.0, DAY) == 0.0


@settings(deadline=None)
@given(
    consumed=st.floats(0.0, 1e12),
    parts=st.lists(topics, max_size=6),
    rest=st.floats(0.0, 1e6),
    room=st.floats(1.0, 1e12),
)
def test_the_path_reaches_the_limit_at_the_crossing_and_not_before(
    consumed: float, parts: list[TopicPath], rest: float, room: float
) -> None:
    path = VolumePath(consumed, tuple(parts), rest)
    limit = consumed + room
    fill = crossing_seconds(path, limit, 30 * DAY)
    if fill is None:
        assert path.at(30 * DAY) < limit * (1 + 1e-9)
    else:
        assert abs(path.at(fill) - limit) <= 1e-6 * limit + 1.0
        assert path.at(fill * 0.999) <= limit * (1 + 1e-9)


@settings(deadline=None)
@given(
    consumed=st.floats(0.0, 1e12),
    parts=st.lists(topics, max_size=5),
    extra=topics,
    rest=st.floats(0.0, 1e6),
    room=st.floats(1.0, 1e12),
)
def test_adding_a_topic_never_delays_the_fill(
    consumed: float, parts: list[TopicPath], extra: TopicPath, rest: float, room: float
) -> None:
    limit = consumed + room
    without = crossing_seconds(VolumePath(consumed, tuple(parts), rest), limit, 30 * DAY)
    # A topic already past its bound is cut down at the origin: that can only help. The
    # property is about a topic that adds bytes: one within its bound.
    if extra.bound is not None and extra.bound < extra.bytes:
        extra = TopicPath(extra.topic, extra.bytes, extra.rate, extra.bytes, extra.detail)
    with_extra = crossing_seconds(VolumePath(consumed, (*parts, extra), rest), limit, 30 * DAY)
    if without is not None:
        assert with_extra is not None
        assert with_extra <= without * (1 + 1e-9) + 1e-6
