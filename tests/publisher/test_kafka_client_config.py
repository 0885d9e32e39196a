from __future__ import annotations

from pathlib import Path

from volume_quota.kafka_client_config import KafkaConnection, admin_config, producer_config

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
