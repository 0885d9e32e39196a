from __future__ import annotations

from pathlib import Path

import pytest

from volume_quota.kafka_client_config import (
    KafkaConnection,
    SaslCredentials,
    admin_config,
    consumer_config,
    kafka_python_admin_config,
    producer_config,
)

CONNECTION = KafkaConnection(
    bootstrap_servers="k0:9091,k1:9091",
    ca_file=Path("/tls/ca.pem"),
    certificate_file=Path("/tls/cert.pem"),
    key_file=Path("/tls/key.pem"),
)


def test_producer_is_durable_idempotent_and_mutual_tls() -> None:
    config = producer_config(CONNECTION, broker_id=3, delivery_timeout_seconds=15)
    assert config["acks"] == "all"
    assert config["enable.idempotence"] is True
    assert config["security.protocol"] == "SSL"
    assert config["ssl.ca.location"] == "/tls/ca.pem"
    assert config["ssl.certificate.location"] == "/tls/cert.pem"
    assert config["ssl.key.location"] == "/tls/key.pem"
    assert config["ssl.endpoint.identification.algorithm"] == "https"
    assert config["allow.auto.create.topics"] is False
    assert config["message.timeout.ms"] == 15000
    assert config["request.timeout.ms"] == 15000
    assert config["client.id"] == "volume-quota-publisher-3"
    assert "ssl.key.password" not in config


def test_key_password_and_hostname_check_are_passed_through() -> None:
    connection = KafkaConnection(
        "k:1", Path("ca"), Path("c"), Path("k"), key_password="s3cret", verify_hostname=False
    )
    config = admin_config(connection, broker_id=0)
    assert config["ssl.key.password"] == "s3cret"
    assert config["ssl.endpoint.identification.algorithm"] == "none"
    assert config["client.id"] == "volume-quota-admin-0"
    assert "acks" not in config


def test_long_delivery_timeouts_keep_request_timeout_at_librdkafka_default() -> None:
    config = producer_config(CONNECTION, broker_id=1, delivery_timeout_seconds=120)
    assert config["message.timeout.ms"] == 120000
    assert config["request.timeout.ms"] == 30000


SCRAM_USER = SaslCredentials(username="sidecar-7", password="pa55", mechanism="SCRAM-SHA-256")


def test_sasl_without_a_certificate_sends_the_scram_user_and_no_client_certificate() -> None:
    connection = KafkaConnection("k0:9094", Path("/tls/ca.pem"), sasl=SCRAM_USER)
    for config in (
        producer_config(connection, broker_id=7, delivery_timeout_seconds=15),
        admin_config(connection, broker_id=7),
        consumer_config(connection, broker_id=7, group="g"),
    ):
        assert config["security.protocol"] == "SASL_SSL"
        assert config["sasl.mechanisms"] == "SCRAM-SHA-256"
        assert config["sasl.username"] == "sidecar-7"
        assert config["sasl.password"] == "pa55"
        assert config["ssl.ca.location"] == "/tls/ca.pem"  # the brokers are still verified
        assert config["ssl.endpoint.identification.algorithm"] == "https"
        assert not any(key.startswith(("ssl.certificate", "ssl.key")) for key in config)


def test_sasl_with_a_certificate_presents_both() -> None:
    connection = KafkaConnection(
        "k0:9094",
        Path("/tls/ca.pem"),
        Path("/tls/cert.pem"),
        Path("/tls/key.pem"),
        sasl=SaslCredentials("sidecar-7", "pa55"),
    )
    config = producer_config(connection, broker_id=7, delivery_timeout_seconds=15)
    assert config["security.protocol"] == "SASL_SSL"
    assert config["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert config["ssl.certificate.location"] == "/tls/cert.pem"
    assert config["ssl.key.location"] == "/tls/key.pem"


def test_kafka_python_admin_speaks_mutual_tls_or_scram() -> None:
    mutual = kafka_python_admin_config(CONNECTION, "cluster")
    assert mutual["security_protocol"] == "SSL"
    assert mutual["bootstrap_servers"] == ["k0:9091", "k1:9091"]
    assert (mutual["ssl_cafile"], mutual["ssl_certfile"], mutual["ssl_keyfile"]) == (
        "/tls/ca.pem",
        "/tls/cert.pem",
        "/tls/key.pem",
    )
    assert not any(key.startswith("sasl") for key in mutual)

    scram = kafka_python_admin_config(
        KafkaConnection("k0:9094", Path("/tls/ca.pem"), verify_hostname=False, sasl=SCRAM_USER),
        "cluster",
    )
    assert scram["security_protocol"] == "SASL_SSL"
    assert scram["sasl_mechanism"] == "SCRAM-SHA-256"
    assert scram["sasl_plain_username"] == "sidecar-7"
    assert scram["sasl_plain_password"] == "pa55"
    assert scram["ssl_cafile"] == "/tls/ca.pem"
    assert scram["ssl_check_hostname"] is False
    assert "ssl_certfile" not in scram
    assert "ssl_keyfile" not in scram


def test_passwords_stay_out_of_the_connection_repr() -> None:
    connection = KafkaConnection(
        "k:1", Path("ca"), Path("c"), Path("k"), key_password="key-s3cret", sasl=SCRAM_USER
    )
    assert "pa55" not in repr(connection)
    assert "key-s3cret" not in repr(connection)
    assert "sidecar-7" in repr(connection)


def test_a_connection_needs_a_certificate_or_a_scram_user_and_a_key_with_its_certificate() -> None:
    with pytest.raises(ValueError, match="SSL authenticates with a client certificate"):
        KafkaConnection("k:1", Path("ca"))
    with pytest.raises(ValueError, match="needs its key file"):
        KafkaConnection("k:1", Path("ca"), certificate_file=Path("c"), sasl=SCRAM_USER)
