"""What every node's server.properties promises, checked without starting a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_cluster import BrokerFiles, BrokerPorts, LocalClusterError, LocalKafkaCluster
from local_cluster.broker_config import server_properties

pytestmark = pytest.mark.real_broker


def _properties(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    ports = [BrokerPorts(9000 + 3 * i, 9001 + 3 * i, 9002 + 3 * i) for i in range(3)]
    return server_properties(
        node_id=1,
        all_ports=ports,
        files=BrokerFiles(home=tmp_path / "broker-1", data_dirs=(tmp_path / "vol",)),
        keystore=tmp_path / "keystore.pem",
        truststore=tmp_path / "ca.pem",
        extra=extra or {},
    )


def test_every_listener_is_tls_with_a_required_client_certificate(tmp_path: Path) -> None:
    properties = _properties(tmp_path)

    protocols = dict(
        entry.split(":") for entry in properties["listener.security.protocol.map"].split(",")
    )
    listener_names = {entry.split("://")[0] for entry in properties["listeners"].split(",")}
    assert listener_names == set(protocols)
    assert set(protocols.values()) == {"SSL"}
    assert properties["ssl.client.auth"] == "required"
    assert properties["ssl.keystore.type"] == properties["ssl.truststore.type"] == "PEM"


def test_only_brokers_and_admin_are_super_users_and_acls_default_to_deny(tmp_path: Path) -> None:
    properties = _properties(tmp_path)

    assert properties["super.users"].split(";") == [
        "User:broker-0",
        "User:broker-1",
        "User:broker-2",
        "User:admin",
    ]
    assert properties["allow.everyone.if.no.acl.found"] == "false"
    assert properties["authorizer.class.name"].endswith("StandardAuthorizer")
    assert properties["controller.quorum.voters"] == (
        "0@127.0.0.1:9002,1@127.0.0.1:9005,2@127.0.0.1:9008"
    )


def test_extra_properties_override_the_defaults(tmp_path: Path) -> None:
    properties = _properties(
        tmp_path, {"num.io.threads": "4", "client.quota.callback.class": "x.Callback"}
    )

    assert properties["num.io.threads"] == "4"
    assert properties["client.quota.callback.class"] == "x.Callback"


def test_metadata_log_stays_off_the_data_volumes(tmp_path: Path) -> None:
    properties = _properties(tmp_path)

    assert properties["log.dirs"] == str(tmp_path / "vol")
    assert properties["metadata.log.dir"] == str(tmp_path / "broker-1" / "metadata")


def test_missing_plugin_jar_is_reported_before_anything_starts(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path / "c", extra_classpath=[tmp_path / "quota-plugin.jar"])

    with pytest.raises(LocalClusterError, match=r"quota-plugin\.jar"):
        cluster.start()
    assert not (tmp_path / "c").exists()


def test_missing_java_is_reported_before_anything_starts(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path / "c", java="no-such-java-binary")

    with pytest.raises(LocalClusterError, match="no-such-java-binary"):
        cluster.start()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"broker_count": 0}, "at least 1"),
        ({"broker_count": 2, "log_dirs": [[Path("/a")]]}, "2 brokers"),
        ({"broker_count": 1, "log_dirs": [[]]}, "at least one log dir"),
    ],
)
def test_inconsistent_arguments_are_rejected(
    tmp_path: Path, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(LocalClusterError, match=message):
        LocalKafkaCluster(tmp_path, **arguments)  # type: ignore[arg-type]
