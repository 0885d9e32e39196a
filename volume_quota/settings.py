"""The publisher's settings: defaults < ``--config`` TOML file < ``VOLUME_QUOTA_*`` env < flags.

Everything is validated when the settings are loaded. A mistake becomes a ``UsageError`` whose one
line names the setting the way the user can fix it (flag, environment variable, file key), so the
command exits with status 2 and no traceback.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from publisher.topic_requirements import (
    DEFAULT_MIN_COMPACTION_LAG_SECONDS,
    DEFAULT_SEGMENT_SECONDS,
    DEFAULT_TOPIC,
    TopicRequirements,
)
from schemas.decision import OnMissing
from schemas.snapshot import MAX_BROKER_ID, Limit, LimitType, MinFreePercentageLimit
from volume_quota.certificate_files import TlsFiles, check_tls_files
from volume_quota.certificate_inspection import (
    CertificateError,
    count_certificates,
    summarize_certificate,
)
from volume_quota.durations import parse_duration
from volume_quota.errors import UsageError
from volume_quota.java_properties import parse_java_properties
from volume_quota.kafka_client_config import KafkaConnection
from volume_quota.limit_parsing import (
    VolumeLimitOverride,
    limit_from_config,
    volume_limit_overrides_from_config,
)
from volume_quota.server_properties import (
    ServerPropertiesError,
    log_dirs_from_properties,
    node_id_from_properties,
)

ENV_PREFIX = "VOLUME_QUOTA_"
CONFIG_FILE_ENV = "VOLUME_QUOTA_CONFIG"

FLAG_NAMES = {"volume_limits": "--volume-limit"}
"""Settings whose flag is not ``--`` + the name with dashes."""


def flag_for(setting: str) -> str:
    return FLAG_NAMES.get(setting, "--" + setting.replace("_", "-"))


def describe_setting(setting: str) -> str:
    """How a user names ``setting``: 'log_dirs (--log-dirs, VOLUME_QUOTA_LOG_DIRS)'."""
    return f"{setting} ({flag_for(setting)}, {ENV_PREFIX}{setting.upper()})"


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else value


def _comma_separated(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return [value]
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


Seconds = Annotated[float, BeforeValidator(_duration), Field(gt=0, allow_inf_nan=False)]
ConfiguredLimit = Annotated[Limit, BeforeValidator(limit_from_config)]


@dataclass(frozen=True, slots=True)
class ServerProperties:
    """What a broker's ``server.properties`` says about its log dirs and id."""

    path: Path
    log_dirs: tuple[Path, ...]
    node_id: int | None


def _read_server_properties(value: Any) -> Any:
    if value is None or isinstance(value, ServerProperties):
        return value
    path = Path(str(value))
    try:
        properties = parse_java_properties(path.read_text(encoding="latin-1"))
        log_dirs = log_dirs_from_properties(properties)
        node_id = node_id_from_properties(properties)
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    except ServerPropertiesError as error:
        raise ValueError(f"{path} {error}") from None
    for log_dir in log_dirs:
        _check_directory(Path(log_dir), f"{path} names log dir")
    return ServerProperties(path, tuple(Path(log_dir) for log_dir in log_dirs), node_id)


def _check_directory(path: Path, what: str = "log dir") -> None:
    if not path.is_absolute():
        raise ValueError(f"{what} {path} is not an absolute path")
    if not path.exists():
        raise ValueError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise ValueError(f"{what} {path} is not a directory")


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None


_config_file: ContextVar[Path | None] = ContextVar("volume_quota_config_file", default=None)


class PublisherSettings(BaseSettings):
    """Every knob of ``volume-quota publish`` and ``retire``; see docs/publisher.md."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        validate_default=True,
        arbitrary_types_allowed=True,
    )

    broker_id: int | None = Field(default=None, ge=0, le=MAX_BROKER_ID)
    log_dirs: Annotated[list[Path], NoDecode, BeforeValidator(_comma_separated)] = Field(
        default_factory=list
    )
    server_properties: Annotated[
        ServerProperties | None, BeforeValidator(_read_server_properties)
    ] = None
    bootstrap_servers: str | None = None
    tls_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_key_password: SecretStr | None = None
    tls_verify_hostname: bool = True
    topic: str = Field(
        default=DEFAULT_TOPIC, min_length=1, max_length=249, pattern=r"^[A-Za-z0-9._-]+$"
    )
    topic_partitions: int = Field(default=1, ge=1)
    topic_replication_factor: int = Field(default=-1, ge=-1)
    topic_min_compaction_lag: Seconds = DEFAULT_MIN_COMPACTION_LAG_SECONDS
    topic_segment_interval: Seconds = DEFAULT_SEGMENT_SECONDS
    create_topic: bool = True
    soft_limit: ConfiguredLimit = MinFreePercentageLimit(
        type=LimitType.MIN_FREE_PERCENTAGE, level=15.0
    )
    hard_limit: ConfiguredLimit = MinFreePercentageLimit(
        type=LimitType.MIN_FREE_PERCENTAGE, level=5.0
    )
    volume_limits: Annotated[
        list[VolumeLimitOverride], NoDecode, BeforeValidator(volume_limit_overrides_from_config)
    ] = Field(default_factory=list)
    sample_interval: Seconds = 1.0
    heartbeat_interval: Seconds = 10.0
    change_threshold_percent: float = Field(default=1.0, ge=0, le=100, allow_inf_nan=False)
    delivery_timeout: Seconds = 15.0
    readiness_max_age: Seconds = 30.0
    shutdown_timeout: Seconds = 3.0
    metrics_host: str = "0.0.0.0"
    """All addresses: kubelet probes and Prometheus reach the pod's address."""
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # The consumer role (``decide``, ``sidecar``, ``status``).
    decision_file: Path | None = None
    stale_after: Seconds = 30.0
    max_clock_skew: Seconds = 5.0
    on_missing: OnMissing = OnMissing.PAUSE
    live_broker_refresh_interval: Seconds = 5.0
    decision_valid_for: Seconds = 30.0
    consumer_group: str = Field(default="volume-quota-consumer", min_length=1, max_length=249)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=_config_file.get()),
        )

    @field_validator("log_dirs")
    @classmethod
    def _log_dirs_exist(cls, log_dirs: list[Path]) -> list[Path]:
        for log_dir in log_dirs:
            _check_directory(log_dir)
        return log_dirs

    @field_validator("on_missing", mode="before")
    @classmethod
    def _on_missing_any_case(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("decision_file")
    @classmethod
    def _decision_file_writable(cls, path: Path | None) -> Path | None:
        if path is None:
            return None
        if not path.is_absolute():
            raise ValueError(f"{path} is not an absolute path")
        if not path.parent.is_dir():
            raise ValueError(f"directory {path.parent} does not exist")
        if path.is_dir():
            raise ValueError(f"{path} is a directory")
        return path

    @field_validator("tls_ca_file")
    @classmethod
    def _ca_readable(cls, path: Path | None) -> Path | None:
        if path is not None:
            try:
                count_certificates(_read_file(path))
            except CertificateError as error:
                raise ValueError(f"{path} {error}") from None
        return path

    @field_validator("tls_cert_file")
    @classmethod
    def _certificate_readable(cls, path: Path | None) -> Path | None:
        if path is not None:
            try:
                summarize_certificate(_read_file(path))
            except CertificateError as error:
                raise ValueError(f"{path} {error}") from None
        return path

    @field_validator("tls_key_file")
    @classmethod
    def _key_readable(cls, path: Path | None) -> Path | None:
        if path is not None:
            _read_file(path)
        return path

    @field_validator("bootstrap_servers")
    @classmethod
    def _bootstrap_servers_listed(cls, servers: str | None) -> str | None:
        if servers is None:
            return None
        addresses = [part.strip() for part in servers.split(",") if part.strip()]
        for address in addresses:
            host, separator, port = address.rpartition(":")
            if not separator or not host or not port.isdigit():
                raise ValueError(f"{address!r} is not HOST:PORT")
        if not addresses:
            raise ValueError("names no HOST:PORT")
        return ",".join(addresses)

    @model_validator(mode="after")
    def _consistent(self) -> PublisherSettings:
        if self.heartbeat_interval < self.sample_interval:
            raise ValueError(
                f"{describe_setting('heartbeat_interval')} must be at least "
                f"{describe_setting('sample_interval')}"
            )
        if self.readiness_max_age <= self.heartbeat_interval:
            raise ValueError(
                f"{describe_setting('readiness_max_age')} must be longer than "
                f"{describe_setting('heartbeat_interval')}"
            )
        tls = [self.tls_ca_file, self.tls_cert_file, self.tls_key_file]
        if any(path is not None for path in tls) and not all(path is not None for path in tls):
            missing = [
                describe_setting(name)
                for name, path in zip(
                    ("tls_ca_file", "tls_cert_file", "tls_key_file"), tls, strict=True
                )
                if path is None
            ]
            raise ValueError(f"TLS needs all three files; missing {', '.join(missing)}")
        if all(path is not None for path in tls):
            self._check_key_pair()
        return self

    def _check_key_pair(self) -> None:
        try:
            check_tls_files(self._tls_files())
        except (CertificateError, OSError) as error:
            raise ValueError(f"{describe_setting('tls_key_file')}: {error}") from None

    def _tls_files(self) -> TlsFiles:
        if self.tls_ca_file is None or self.tls_cert_file is None or self.tls_key_file is None:
            raise UsageError(
                "TLS files are required: set "
                + ", ".join(
                    describe_setting(name)
                    for name in ("tls_ca_file", "tls_cert_file", "tls_key_file")
                )
            )
        password = self.tls_key_password.get_secret_value() if self.tls_key_password else None
        return TlsFiles(self.tls_ca_file, self.tls_cert_file, self.tls_key_file, password)

    # What each command needs; a missing value is a UsageError naming the setting.

    def required_broker_id(self) -> int:
        if self.broker_id is not None:
            return self.broker_id
        if self.server_properties is not None and self.server_properties.node_id is not None:
            return self.server_properties.node_id
        raise UsageError(
            f"{describe_setting('broker_id')} is required (or a server_properties file "
            "that sets node.id)"
        )

    def required_log_dirs(self) -> list[Path]:
        """Every configured log dir, the explicit ones first, without duplicates."""
        log_dirs = list(self.log_dirs)
        if self.server_properties is not None:
            log_dirs.extend(self.server_properties.log_dirs)
        if not log_dirs:
            raise UsageError(
                f"no log dir to measure: set {describe_setting('log_dirs')} or "
                f"{describe_setting('server_properties')}"
            )
        return list(dict.fromkeys(log_dirs))

    def required_decision_file(self) -> Path:
        if self.decision_file is None:
            raise UsageError(
                f"{describe_setting('decision_file')} is required: the broker's quota callback "
                "reads the decision there"
            )
        return self.decision_file

    def required_tls_files(self) -> TlsFiles:
        return self._tls_files()

    def required_kafka_connection(self) -> KafkaConnection:
        if self.bootstrap_servers is None:
            raise UsageError(f"{describe_setting('bootstrap_servers')} is required")
        tls = self._tls_files()
        return KafkaConnection(
            bootstrap_servers=self.bootstrap_servers,
            ca_file=tls.ca_file,
            certificate_file=tls.certificate_file,
            key_file=tls.key_file,
            key_password=tls.key_password,
            verify_hostname=self.tls_verify_hostname,
        )

    def topic_requirements(self) -> TopicRequirements:
        return TopicRequirements(
            name=self.topic,
            partitions=self.topic_partitions,
            replication_factor=self.topic_replication_factor,
            min_compaction_lag_seconds=self.topic_min_compaction_lag,
            segment_seconds=self.topic_segment_interval,
        )


@contextmanager
def _reading_config_file(path: Path | None) -> Iterator[None]:
    token = _config_file.set(path)
    try:
        yield
    finally:
        _config_file.reset(token)


def load_settings(
    cli_values: Mapping[str, Any] | None = None, config_file: Path | None = None
) -> PublisherSettings:
    """Settings from flags (``cli_values``, only those given), env, then ``config_file``.

    Raises ``UsageError`` with one line naming the offending setting.
    """
    if config_file is not None:
        _check_config_file(config_file)
    values = {key: value for key, value in (cli_values or {}).items() if value is not None}
    try:
        with _reading_config_file(config_file):
            return PublisherSettings(**values)
    except ValidationError as error:
        raise UsageError(_one_line(error, config_file)) from None


def _check_config_file(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"--config {path}: not valid TOML ({error})") from None


def _one_line(error: ValidationError, config_file: Path | None) -> str:
    problems = error.errors(include_url=False, include_input=False)
    first = problems[0]
    message = _clean_message(first["msg"])
    location = first["loc"]
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    if not location:
        return f"invalid settings: {message}{more}"
    setting = str(location[0])
    if first["type"] == "extra_forbidden":
        source = f" in {config_file}" if config_file is not None else ""
        return f"unknown setting {setting!r}{source}{more}"
    if setting not in PublisherSettings.model_fields:  # pragma: no cover - defensive
        return f"invalid setting {setting}: {message}{more}"
    return f"invalid setting {describe_setting(setting)}: {message}{more}"


def _clean_message(message: str) -> str:
    message = message.removeprefix("Value error, ")
    return " ".join(message.split())
