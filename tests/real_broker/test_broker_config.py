"""What every node's server.properties promises, checked without starting a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_cluster import (
    BrokerFiles,
    BrokerPorts,
    LocalClusterError,
    LocalKafkaCluster,
    add_scram_user,
)
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


def test_the_optional_sasl_listener_speaks_scram_and_leaves_the_others_as_they_are(
    tmp_path: Path,
) -> None:
    without = _properties(tmp_path)
    ports = [BrokerPorts(9000 + 4 * i, 9001 + 4 * i, 9002 + 4 * i, 9003 + 4 * i) for i in range(3)]
    with_sasl = server_properties(
        node_id=1,
        all_ports=ports,
        files=BrokerFiles(home=tmp_path / "broker-1", data_dirs=(tmp_path / "vol",)),
        keystore=tmp_path / "keystore.pem",
        truststore=tmp_path / "ca.pem",
        extra={},
    )

    protocols = dict(
        entry.split(":") for entry in with_sasl["listener.security.protocol.map"].split(",")
    )
    assert protocols == {
        "CLIENT": "SSL",
        "INTERNAL": "SSL",
        "CONTROLLER": "SSL",
        "SASL_CLIENT": "SASL_SSL",
    }
    assert with_sasl["listeners"].split(",") == [
        "CLIENT://127.0.0.1:9004",
        "INTERNAL://127.0.0.1:9005",
        "CONTROLLER://127.0.0.1:9006",
        "SASL_CLIENT://127.0.0.1:9007",
    ]
    assert "SASL_CLIENT://127.0.0.1:9007" in with_sasl["advertised.listeners"].split(",")
    prefix = "listener.name.sasl_client."
    assert with_sasl[prefix + "sasl.enabled.mechanisms"] == "SCRAM-SHA-512,SCRAM-SHA-256"
    assert with_sasl[prefix + "ssl.client.auth"] == "none"
    assert with_sasl[prefix + "scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )
    assert with_sasl["ssl.client.auth"] == "required"  # the SSL listeners still demand one
    assert with_sasl["inter.broker.listener.name"] == "INTERNAL"
    # Without a SASL port (the default) no property is about SASL and no listener speaks it.
    assert not any("sasl" in key for key in without)
    listener_values = ("listeners", "advertised.listeners", "listener.security.protocol.map")
    assert not any("SASL" in without[key] for key in listener_values)


def test_a_scram_user_needs_the_sasl_listener(tmp_path: Path) -> None:
    with pytest.raises(LocalClusterError, match="pass sasl_listener=True"):
        add_scram_user(LocalKafkaCluster(tmp_path / "c"), "app-scram", "pw")
    with pytest.raises(LocalClusterError, match="pass sasl_listener=True"):
        _ = LocalKafkaCluster(tmp_path / "c").sasl_bootstrap_servers
    assert not (tmp_path / "c").exists()  # refused before anything starts


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
        (
            {"broker_count": 1, "ports": [BrokerPorts(1, 2, 3)], "sasl_listener": True},
            "sasl_listener needs a sasl port",
        ),
    ],
)
def test_inconsistent_arguments_are_rejected(
    tmp_path: Path, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(LocalClusterError, match=message):
        LocalKafkaCluster(tmp_path, **arguments)  # type: ignore[arg-type]
