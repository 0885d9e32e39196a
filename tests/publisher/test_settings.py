from __future__ import annotations

from pathlib import Path

import pytest

from tests.publisher.tls_material import TestCertificateAuthority
from volume_quota.config import SidecarSettings, load_settings
from volume_quota.errors import UsageError
from volume_quota.limit_parsing import parse_limit


def usage_error(**values: object) -> str:
    with pytest.raises(UsageError) as raised:
        load_settings(values)
    return str(raised.value)


def test_defaults() -> None:
    settings = load_settings({})
    assert settings.topic == "__volume_quota_snapshots"
    assert settings.sample_interval == 1.0
    assert settings.heartbeat_interval == 10.0
    assert settings.soft_limit == parse_limit("MinFreePercentage:15")
    assert settings.hard_limit == parse_limit("MinFreePercentage:5")
    assert settings.topic_min_compaction_lag == 86400.0
    assert settings.metrics_port == 9464
    assert settings.create_topic is True


def test_flags_override_environment_which_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "publisher.toml"
    config.write_text(
        'topic = "from_file"\nheartbeat_interval = "20s"\nsample_interval = 2\n'
        'soft_limit = "MinFreeBytes:10GiB"\n'
        'hard_limit = { type = "MinFreeBytes", level = 1073741824 }\n'
        f'log_dirs = ["{tmp_path}"]\n'
        '[volume_limits."/data"]\nsoft = "MinFreePercentage:30"\n'
    )
    monkeypatch.setenv("VOLUME_QUOTA_TOPIC", "from_env")
    monkeypatch.setenv("VOLUME_QUOTA_HEARTBEAT_INTERVAL", "25")
    settings = load_settings({"topic": "from_flag"}, config)
    assert settings.topic == "from_flag"
    assert settings.heartbeat_interval == 25.0
    assert settings.sample_interval == 2.0
    assert settings.soft_limit == parse_limit("MinFreeBytes:10GiB")
    assert settings.hard_limit == parse_limit("MinFreeBytes:1GiB")
    assert settings.log_dirs == [tmp_path]
    assert settings.volume_limits[0].volume == "/data"


def test_environment_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("VOLUME_QUOTA_LOG_DIRS", f"{tmp_path}/a, {tmp_path}/b")
    monkeypatch.setenv(
        "VOLUME_QUOTA_VOLUME_LIMITS", "/a:soft=MinFreePercentage:20;/b:hard=MinFreeBytes:1GiB"
    )
    monkeypatch.setenv("VOLUME_QUOTA_CREATE_TOPIC", "false")
    settings = load_settings({})
    assert settings.log_dirs == [tmp_path / "a", tmp_path / "b"]
    assert [override.volume for override in settings.volume_limits] == ["/a", "/b"]
    assert settings.create_topic is False


def test_server_properties_supply_log_dirs_and_broker_id(tmp_path: Path) -> None:
    data = tmp_path / "data-0"
    metadata = tmp_path / "meta"
    extra = tmp_path / "extra"
    for directory in (data, metadata, extra):
        directory.mkdir()
    properties = tmp_path / "server.properties"
    properties.write_text(f"node.id=5\nlog.dirs={data}\nmetadata.log.dir={metadata}\n")
    settings = load_settings({"server_properties": str(properties), "log_dirs": f"{extra},{data}"})
    assert settings.required_broker_id() == 5
    assert settings.required_log_dirs() == [extra, data, metadata]
    assert (
        load_settings({"server_properties": str(properties), "broker_id": "9"}).required_broker_id()
        == 9
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"broker_id": "abc"}, "invalid setting broker_id (--broker-id, VOLUME_QUOTA_BROKER_ID)"),
        ({"broker_id": "-1"}, "broker_id"),
        ({"broker_id": "2147483648"}, "broker_id"),
        (
            {"log_dirs": "/does/not/exist"},
            "log_dirs (--log-dirs, VOLUME_QUOTA_LOG_DIRS): log dir /does/not/exist does not exist",
        ),
        ({"log_dirs": "relative"}, "log dir relative is not an absolute path"),
        (
            {"soft_limit": "MaxUsed:90"},
            "invalid setting soft_limit (--soft-limit, VOLUME_QUOTA_SOFT_LIMIT): "
            "unknown limit type 'MaxUsed'",
        ),
        ({"hard_limit": "MinFreeBytes:lots"}, "hard_limit"),
        ({"volume_limits": ["/x"]}, "invalid setting volume_limits (--volume-limit,"),
        ({"sample_interval": "fast"}, "invalid setting sample_interval"),
        ({"sample_interval": "0"}, "sample_interval"),
        ({"heartbeat_interval": "nan"}, "heartbeat_interval"),
        ({"change_threshold_percent": "101"}, "change_threshold_percent"),
        ({"metrics_port": "70000"}, "metrics_port"),
        ({"topic": "bad topic!"}, "topic"),
        ({"bootstrap_servers": "localhost"}, "'localhost' is not HOST:PORT"),
        (
            {
                "tls_ca_file": "/nonexistent/ca.pem",
                "tls_cert_file": "/nonexistent/cert.pem",
                "tls_key_file": "/nonexistent/key.pem",
            },
            "tls_ca_file (--tls-ca-file, VOLUME_QUOTA_TLS_CA_FILE): "
            "cannot read /nonexistent/ca.pem",
        ),
        (
            {"heartbeat_interval": "1", "sample_interval": "2"},
            "heartbeat_interval (--heartbeat-interval, VOLUME_QUOTA_HEARTBEAT_INTERVAL) "
            "must be at least sample_interval",
        ),
        (
            {"readiness_max_age": "5"},
            "readiness_max_age (--readiness-max-age, VOLUME_QUOTA_READINESS_MAX_AGE) "
            "must be longer than heartbeat_interval",
        ),
        (
            {"server_properties": "/nonexistent/server.properties"},
            "server_properties (--server-properties, VOLUME_QUOTA_SERVER_PROPERTIES): cannot read",
        ),
    ],
)
def test_bad_values_name_the_setting(values: dict[str, object], expected: str) -> None:
    assert expected in usage_error(**values)


def test_every_problem_is_one_line() -> None:
    lines = sorted(usage_error(broker_id="x", metrics_port="x").splitlines())
    assert len(lines) == 2
    assert lines[0].startswith("invalid setting broker_id (--broker-id, VOLUME_QUOTA_BROKER_ID)")
    assert lines[1].startswith("invalid setting metrics_port (--metrics-port")


def test_bad_environment_variable_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOLUME_QUOTA_HEARTBEAT_INTERVAL", "soon")
    assert "heartbeat_interval (--heartbeat-interval, VOLUME_QUOTA_HEARTBEAT_INTERVAL)" in (
        usage_error()
    )


def test_config_file_problems(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(UsageError, match=r"--config .*missing\.toml: No such file"):
        load_settings({}, missing)
    broken = tmp_path / "broken.toml"
    broken.write_text("topic = \n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_settings({}, broken)
    unknown = tmp_path / "unknown.toml"
    # One file may serve every command: the history job's settings are known, a typo is not.
    unknown.write_text('topik = "x"\nhorizon_days = 30\n')
    with pytest.raises(UsageError, match=r"unknown setting 'topik' in .*unknown\.toml") as error:
        load_settings({}, unknown)
    assert "horizon_days" not in str(error.value)


def test_server_properties_problems(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("node.id=1\n")
    assert "sets neither log.dirs nor log.dir" in usage_error(server_properties=str(properties))
    properties.write_text(f"log.dirs={tmp_path}/gone\n")
    assert "names log dir" in usage_error(server_properties=str(properties))


def test_tls_files_are_checked(tmp_path: Path) -> None:
    authority = TestCertificateAuthority()
    paths = authority.write_identity(tmp_path / "good", "publisher")
    other = authority.write_identity(tmp_path / "other", "intruder")
    good = {"tls_ca_file": paths.ca, "tls_cert_file": paths.cert, "tls_key_file": paths.key}
    settings = load_settings({**good, "bootstrap_servers": "localhost:9093"})
    connection = settings.required_kafka_connection()
    assert connection.certificate_file == paths.cert
    assert "TLS needs all three files; missing tls_key_file" in usage_error(
        tls_ca_file=paths.ca, tls_cert_file=paths.cert
    )
    assert (
        "tls_key_file (--tls-key-file, VOLUME_QUOTA_TLS_KEY_FILE): the private key does not belong"
        in (usage_error(**{**good, "tls_key_file": other.key}))
    )
    assert "tls_cert_file" in usage_error(**{**good, "tls_cert_file": paths.key})


def test_command_requirements_name_the_setting(tmp_path: Path) -> None:
    settings = load_settings({})
    with pytest.raises(UsageError, match=r"broker_id \(--broker-id"):
        settings.required_broker_id()
    with pytest.raises(UsageError, match=r"no log dir to measure: set log_dirs"):
        settings.required_log_dirs()
    with pytest.raises(UsageError, match=r"bootstrap_servers \(--bootstrap-servers.*is required"):
        settings.required_kafka_connection()
    with_bootstrap = load_settings({"bootstrap_servers": "a:1"})
    with pytest.raises(UsageError, match="TLS files are required"):
        with_bootstrap.required_kafka_connection()


def test_every_setting_is_documented() -> None:
    documentation = (Path(__file__).parents[2] / "docs" / "publisher.md").read_text()
    for name in SidecarSettings.model_fields:
        assert f"`{name}`" in documentation, name
        assert f"VOLUME_QUOTA_{name.upper()}" in documentation, name
