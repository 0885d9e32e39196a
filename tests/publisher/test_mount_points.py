from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from publisher.mount_points import Mount, containing_mount, has_own_device

MOUNTS = [
    Mount("/dev/vda1", "/", "ext4"),
    Mount("tmpfs", "/var", "tmpfs"),
    Mount("/dev/sdb", "/var/lib/kafka", "xfs"),
    Mount("/dev/sdc", "/var/lib/kafka-1", "xfs"),
]


def test_longest_mount_point_wins() -> None:
    assert containing_mount("/var/lib/kafka/data-0", MOUNTS) == MOUNTS[2]
    assert containing_mount("/var/lib/kafka", MOUNTS) == MOUNTS[2]
    assert containing_mount("/var/lib/kafka-1/data", MOUNTS) == MOUNTS[3]
    assert containing_mount("/var/lib/kafkaesque", MOUNTS) == MOUNTS[1]
    assert containing_mount("/home", MOUNTS) == MOUNTS[0]


def test_the_last_of_stacked_mounts_wins() -> None:
    stacked = [*MOUNTS, Mount("/dev/sdd", "/var/lib/kafka/", "ext4")]
    assert containing_mount("/var/lib/kafka/x", stacked) == stacked[-1]


def test_no_mount_for_a_relative_path() -> None:
    assert containing_mount("relative/dir", MOUNTS) is None
    assert containing_mount("/x", []) is None


def test_devices() -> None:
    assert has_own_device("/dev/nvme1n1")
    assert not has_own_device("tmpfs")
    assert not has_own_device("overlay")


segments = st.lists(st.sampled_from(["a", "b", "ab", "kafka"]), min_size=0, max_size=4)


@given(st.lists(segments, min_size=1, max_size=6), segments)
def test_the_match_is_the_longest_component_prefix(
    mount_paths: list[list[str]], path: list[str]
) -> None:
    mounts = [
        Mount(f"/dev/d{index}", "/" + "/".join(parts)) for index, parts in enumerate(mount_paths)
    ]
    target = "/" + "/".join(path)
    found = containing_mount(target, mounts)
    prefixes = [
        mount
        for mount, parts in zip(mounts, mount_paths, strict=True)
        if path[: len(parts)] == parts
    ]
    if not prefixes:
        assert found is None
        return
    assert found is not None
    longest = max(len(mount.mount_point) for mount in prefixes)
    assert found in prefixes
    assert len(found.mount_point) == longest
