"""SCRAM users for the optional SASL_SSL listener (``LocalKafkaCluster(sasl_listener=True)``).

A SCRAM user authenticates with a name and a password over TLS, without a client certificate
(the CA certificate still verifies the broker); its principal is ``User:<name>``, granted ACLs
like any other. Credentials live in the KRaft metadata: they are created through the Admin API
(AlterUserScramCredentials) as ``User:admin``, so they survive restarts and can be added to a
running cluster::

    with LocalKafkaCluster(tmp_dir, sasl_listener=True) as cluster:
        add_scram_user(cluster, "app-sasl", "s3cret", bindings=allow(...))
        producer = confluent_kafka.Producer(scram_client_config(cluster, "app-sasl", "s3cret"))
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from local_cluster.acls import create_acls
from local_cluster.broker_config import LOOPBACK, SCRAM_MECHANISMS
from local_cluster.cluster import ClientConfig, LocalKafkaCluster
from local_cluster.errors import LocalClusterError
from local_cluster.pki import CLIENT_IDENTITIES, ROGUE_PREFIX
from local_cluster.probe import CLIENT_LOG, broker_serves

SCRAM_ITERATIONS = 4096
"""Kafka's minimum for SCRAM (and librdkafka's default): enough for a test cluster."""
_TIMEOUT_S = 30.0
_MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}


def scram_client_config(
    cluster: LocalKafkaCluster,
    name: str,
    password: str,
    *,
    mechanism: str = "SCRAM-SHA-512",
    bootstrap: str | None = None,
) -> ClientConfig:
    """librdkafka config for SASL_SSL as SCRAM user ``name`` on the SASL listener (no client
    certificate; the cluster CA verifies the broker). ``bootstrap`` overrides the addresses."""
    _check_mechanism(mechanism)
    return {
        "bootstrap.servers": bootstrap if bootstrap is not None else cluster.sasl_bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": mechanism,
        "sasl.username": name,
        "sasl.password": password,
        "ssl.ca.location": str(cluster.pki.ca_cert),
        "ssl.endpoint.identification.algorithm": "https",
    }


def add_scram_user(
    cluster: LocalKafkaCluster,
    name: str,
    password: str,
    *,
    mechanisms: Iterable[str] = SCRAM_MECHANISMS,
    bindings: Iterable[AclBinding] = (),
) -> None:
    """Create (or change the password of) SCRAM user ``name`` for each of ``mechanisms``,
    create ``bindings`` (ACLs, e.g. for ``User:<name>``), and return once every node accepts
    the password on its SASL listener.

    The built-in identities' names, ``broker-*`` and ``rogue-*`` are refused: a SCRAM user
    shares its principal with a certificate of the same name (``admin`` is a super user).
    Raises :class:`LocalClusterError` when Kafka refuses the credential or a binding.
    """
    if name in CLIENT_IDENTITIES or name.startswith((ROGUE_PREFIX, "broker-")):
        raise LocalClusterError(f"{name!r} is reserved: pick another SCRAM user name")
    if not cluster.sasl_listener:
        raise LocalClusterError("SCRAM users need a SASL listener: pass sasl_listener=True")
    wanted = list(mechanisms)
    for mechanism in wanted:
        _check_mechanism(mechanism)
    if not wanted:
        raise LocalClusterError("add_scram_user needs at least one SCRAM mechanism")
    config: dict[str, Any] = {**cluster.client_config("admin"), "logger": CLIENT_LOG}
    admin = AdminClient(config)  # referenced until the futures are done: else it is destroyed
    for mechanism in wanted:  # librdkafka alters a user at most once per request
        upsert = UserScramCredentialUpsertion(
            name, ScramCredentialInfo(_MECHANISMS[mechanism], SCRAM_ITERATIONS), password.encode()
        )
        futures = admin.alter_user_scram_credentials([upsert], request_timeout=_TIMEOUT_S)
        try:
            futures[name].result(timeout=_TIMEOUT_S)
        except Exception as exc:  # the future raises KafkaException or TimeoutError
            raise LocalClusterError(
                f"creating SCRAM user {name!r} ({mechanism}) failed: {exc}"
            ) from exc
    bindings = list(bindings)
    if bindings:
        create_acls(cluster, bindings)
    _wait_until_accepted(cluster, name, password, wanted)


def _wait_until_accepted(
    cluster: LocalKafkaCluster, name: str, password: str, mechanisms: list[str]
) -> None:
    """Each node learns the credential from the metadata log: wait until all of them do."""
    deadline = time.monotonic() + _TIMEOUT_S
    for index in range(cluster.broker_count):
        address = f"{LOOPBACK}:{cluster.broker_ports(index).sasl}"
        for mechanism in mechanisms:
            config = scram_client_config(
                cluster, name, password, mechanism=mechanism, bootstrap=address
            )
            while not broker_serves(config, index, 3.0):
                if time.monotonic() > deadline:
                    raise LocalClusterError(
                        f"broker {index} did not accept SCRAM user {name!r} ({mechanism}) "
                        f"within {_TIMEOUT_S:.0f}s"
                    )
                time.sleep(0.5)


def _check_mechanism(mechanism: str) -> None:
    if mechanism not in _MECHANISMS:
        raise LocalClusterError(
            f"unknown SCRAM mechanism {mechanism!r}: use {' or '.join(SCRAM_MECHANISMS)}"
        )
