from __future__ import annotations

import pytest

from volume_quota.java_properties import parse_java_properties
from volume_quota.server_properties import (
    ServerPropertiesError,
    log_dirs_from_properties,
    node_id_from_properties,
)

SERVER_PROPERTIES = r"""
# Kafka broker
process.roles=broker,controller
node.id = 4
! another comment style
log.dirs=/var/lib/kafka/data-0,\
         /var/lib/kafka/data-1
metadata.log.dir : /var/lib/kafka/metadata
listeners PLAINTEXT://:9092
escaped\=key=value\tand\u0041
trailing.backslashes=C:\\
empty=
"""


def test_parses_kafka_style_properties() -> None:
    properties = parse_java_properties(SERVER_PROPERTIES)
    assert properties["process.roles"] == "broker,controller"
    assert properties["node.id"] == "4"
    assert properties["log.dirs"] == "/var/lib/kafka/data-0,/var/lib/kafka/data-1"
    assert properties["metadata.log.dir"] == "/var/lib/kafka/metadata"
    assert properties["listeners"] == "PLAINTEXT://:9092"
    assert properties["escaped=key"] == "value\tandA"
    assert properties["trailing.backslashes"] == "C:\\"
    assert properties["empty"] == ""


def test_a_later_key_wins_and_an_unterminated_continuation_is_kept() -> None:
    properties = parse_java_properties("a=1\na=2\nb=x\\")
    assert properties == {"a": "2", "b": "x"}


def test_log_dirs_include_the_metadata_dir_once() -> None:
    properties = parse_java_properties(SERVER_PROPERTIES)
    assert log_dirs_from_properties(properties) == [
        "/var/lib/kafka/data-0",
        "/var/lib/kafka/data-1",
        "/var/lib/kafka/metadata",
    ]
    same = {"log.dirs": "/d0,/d1", "metadata.log.dir": "/d0"}
    assert log_dirs_from_properties(same) == ["/d0", "/d1"]


def test_log_dirs_wins_over_log_dir() -> None:
    assert log_dirs_from_properties({"log.dirs": "/a", "log.dir": "/b"}) == ["/a"]
    assert log_dirs_from_properties({"log.dir": "/b"}) == ["/b"]
    assert log_dirs_from_properties({"log.dirs": " , ", "log.dir": "/b"}) == ["/b"]


def test_no_log_dir_is_an_error() -> None:
    with pytest.raises(ServerPropertiesError, match=r"neither log\.dirs nor log\.dir"):
        log_dirs_from_properties({"node.id": "1"})


def test_node_id() -> None:
    assert node_id_from_properties({"node.id": "4", "broker.id": "7"}) == 4
    assert node_id_from_properties({"broker.id": "7"}) == 7
    assert node_id_from_properties({"broker.id": "-1"}) is None
    assert node_id_from_properties({}) is None
    with pytest.raises(ServerPropertiesError, match="not an integer"):
        node_id_from_properties({"node.id": "four"})
