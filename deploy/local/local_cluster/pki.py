"""A throw-away PKI for the local cluster: one test CA, broker and client certificates, a rogue CA.

Why a real PKI instead of PLAINTEXT: the volume-quota components run against mTLS clusters in
production, and the security tests need real outcomes (a certless client is refused, a cert from
another CA is refused, a valid cert without ACLs is denied). Every file is PEM so that both the
brokers (``ssl.keystore.type=PEM``) and librdkafka clients read them directly.

Layout under the PKI directory::

    ca/ca.pem, ca/ca.key.pem               the cluster CA every broker trusts
    rogue-ca/ca.pem, rogue-ca/ca.key.pem   an unrelated CA nobody trusts
    <identity>/key.pem                     private key, PKCS#8, unencrypted
    <identity>/cert.pem                    leaf certificate
    <identity>/ca.pem                      bundle used to verify the brokers (the cluster CA)
    <identity>/keystore.pem                key + certificate, the file a Kafka PEM keystore reads
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from local_cluster.errors import LocalClusterError

CLIENT_IDENTITIES: tuple[str, ...] = ("publisher", "consumer", "admin", "intruder")
"""Client identities signed by the cluster CA; the certificate CN is the identity name."""

ROGUE_PREFIX = "rogue-"
"""Identities named ``rogue-<cn>`` carry CN=<cn> but are signed by the untrusted rogue CA."""

ROGUE_IDENTITIES: tuple[str, ...] = ("rogue-publisher",)

DEFAULT_LEAF_VALIDITY = dt.timedelta(days=365)
_CA_VALIDITY = dt.timedelta(days=3650)
# Certificates start slightly in the past so a broker whose clock lags a little accepts them.
_BACKDATE = dt.timedelta(hours=1)
_ORGANIZATION = "volume-quota local test cluster"
_BROKER_NAME = re.compile(r"^broker-\d+$")
_IDENTITY_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

PrivateKey = ec.EllipticCurvePrivateKey


def broker_identity(index: int) -> str:
    """Identity (and certificate CN, hence principal name) of broker ``index``."""
    return f"broker-{index}"


def read_certificate(path: Path) -> x509.Certificate:
    """Parse a PEM certificate, e.g. to check the expiry of a re-issued certificate."""
    return x509.load_pem_x509_certificate(path.read_bytes())


@dataclass(frozen=True)
class IdentityFiles:
    """Paths of one identity's PEM files (see the module docstring for what each holds)."""

    name: str
    key: Path
    cert: Path
    ca: Path
    keystore: Path

    def as_json(self) -> dict[str, str]:
        """Plain strings, for the CLI's JSON output."""
        return {
            "key": str(self.key),
            "cert": str(self.cert),
            "ca": str(self.ca),
            "keystore": str(self.keystore),
        }


@dataclass(frozen=True)
class _Authority:
    key: PrivateKey
    cert: x509.Certificate


class ClusterPki:
    """The CA, rogue CA and identity files of one local cluster, kept in one directory.

    Use :meth:`create_or_open`; :meth:`issue` (re)issues a certificate, which is how tests
    exercise certificate rotation and expiry.
    """

    def __init__(self, directory: Path, ca: _Authority, rogue_ca: _Authority) -> None:
        self.directory = directory
        self._ca = ca
        self._rogue_ca = rogue_ca

    @classmethod
    def create_or_open(cls, directory: Path, broker_count: int) -> ClusterPki:
        """Open the PKI in ``directory``, creating CAs and any missing identity.

        Existing files are kept, so a cluster restarted on the same directory keeps its
        certificates (and clients that cached them keep working).
        """
        directory.mkdir(parents=True, exist_ok=True)
        pki = cls(
            directory,
            _open_or_create_authority(directory / "ca", "volume-quota test CA"),
            _open_or_create_authority(directory / "rogue-ca", "rogue CA (not trusted)"),
        )
        names = [broker_identity(i) for i in range(broker_count)]
        for name in [*names, *CLIENT_IDENTITIES, *ROGUE_IDENTITIES]:
            if not pki._files(name).keystore.exists():
                pki.issue(name)
        return pki

    @property
    def ca_cert(self) -> Path:
        """The cluster CA certificate: the brokers' truststore and every client's CA bundle."""
        return self.directory / "ca" / "ca.pem"

    def identity(self, name: str) -> IdentityFiles:
        """Files of an already issued identity; raises if it was never issued."""
        files = self._files(name)
        if not files.keystore.exists():
            raise LocalClusterError(
                f"no certificate for identity {name!r} in {self.directory}; known: "
                + ", ".join(self.issued_identities())
            )
        return files

    def issued_identities(self) -> list[str]:
        """Names of all identities with files in the PKI directory."""
        return sorted(
            p.parent.name
            for p in self.directory.glob("*/keystore.pem")
            if p.parent.name not in ("ca", "rogue-ca")
        )

    def issue(
        self,
        name: str,
        *,
        not_after: dt.datetime | None = None,
        new_key: bool = False,
    ) -> IdentityFiles:
        """(Re)issue the certificate of ``name`` and rewrite its files.

        ``broker-N`` gets a server+client certificate for localhost/127.0.0.1; ``rogue-<cn>``
        gets CN=<cn> signed by the rogue CA; any other name a client certificate with CN=name
        from the cluster CA. The existing key is kept unless ``new_key`` (rotation with and
        without re-keying). ``not_after`` (timezone-aware) sets the expiry; default one year.
        """
        if not _IDENTITY_NAME.match(name) or name in ("ca", "rogue-ca"):
            raise LocalClusterError(f"invalid identity name {name!r}: use lowercase a-z, 0-9, '-'")
        files = self._files(name)
        now = dt.datetime.now(dt.UTC)
        expiry = not_after if not_after is not None else now + DEFAULT_LEAF_VALIDITY
        if expiry.tzinfo is None:
            raise LocalClusterError("not_after must be timezone-aware (e.g. datetime.UTC)")
        key = _new_key() if new_key or not files.key.exists() else _load_key(files.key)
        rogue = name.startswith(ROGUE_PREFIX)
        authority = self._rogue_ca if rogue else self._ca
        common_name = name.removeprefix(ROGUE_PREFIX) if rogue else name
        cert = _leaf_certificate(
            common_name, key, authority, now - _BACKDATE, expiry, is_broker=_is_broker(name)
        )
        files.key.parent.mkdir(parents=True, exist_ok=True)
        key_pem = _key_pem(key)
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        _write_atomically(files.key, key_pem, mode=0o600)
        _write_atomically(files.cert, cert_pem)
        _write_atomically(files.ca, self.ca_cert.read_bytes())
        _write_atomically(files.keystore, key_pem + cert_pem, mode=0o600)
        return files

    def _files(self, name: str) -> IdentityFiles:
        folder = self.directory / name
        return IdentityFiles(
            name=name,
            key=folder / "key.pem",
            cert=folder / "cert.pem",
            ca=folder / "ca.pem",
            keystore=folder / "keystore.pem",
        )


def _is_broker(name: str) -> bool:
    return bool(_BROKER_NAME.match(name))


def _new_key() -> PrivateKey:
    # P-256: accepted by Kafka's PEM keystore and librdkafka, and generated in microseconds.
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load_key(path: Path) -> PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise LocalClusterError(f"{path} is not an EC private key")
    return key


def subject_of(common_name: str) -> str:
    """The RFC 4514 subject of an identity's certificate (``CN=<name>,O=...``): what an exact
    identity rule (``signer_identities``, ``cluster_signers``) must spell out."""
    return _name(common_name).rfc4514_string()


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, _ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _open_or_create_authority(folder: Path, common_name: str) -> _Authority:
    key_path, cert_path = folder / "ca.key.pem", folder / "ca.pem"
    if key_path.exists() and cert_path.exists():
        return _Authority(_load_key(key_path), read_certificate(cert_path))
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    public_key = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomically(key_path, _key_pem(key), mode=0o600)
    _write_atomically(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return _Authority(key, cert)


def _leaf_certificate(
    common_name: str,
    key: PrivateKey,
    authority: _Authority,
    not_before: dt.datetime,
    not_after: dt.datetime,
    *,
    is_broker: bool,
) -> x509.Certificate:
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if is_broker:
        # Brokers are TLS servers for clients and TLS clients of each other (inter-broker and
        # controller listeners), so they need both usages.
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=True,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
            critical=False,
        )
    )
    if is_broker:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(authority.key, hashes.SHA256())


def _write_atomically(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` in one step so a reader never sees a half-written PEM file."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
