"""Where settings come from: defaults < ``--config`` TOML file < ``VOLUME_QUOTA_*`` env < flags.

Loading validates everything at once; every problem becomes one line naming the setting the way
the user can fix it (flag, environment variable, file key), and the command exits with status 2.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    TomlConfigSettingsSource,
)

from volume_quota.errors import UsageError

ENV_PREFIX = "VOLUME_QUOTA_"
CONFIG_FILE_ENV = "VOLUME_QUOTA_CONFIG"

FLAG_NAMES = {"volume_limits": "--volume-limit"}
"""Settings whose flag is not ``--`` + the name with dashes."""

SECRET_SETTINGS = frozenset({"tls_key_password", "sasl_password"})
"""Settings taken from the environment or the file only, never a flag: a password on a command
line leaks."""


def flag_for(setting: str) -> str:
    return FLAG_NAMES.get(setting, "--" + setting.replace("_", "-"))


def env_for(setting: str) -> str:
    return f"{ENV_PREFIX}{setting.upper()}"


def describe_setting(setting: str, *, has_flag: bool = True) -> str:
    """How a user names ``setting``: 'log_dirs (--log-dirs, VOLUME_QUOTA_LOG_DIRS)'; without
    the flag where the command has none (a secret, a setting it does not read)."""
    if not has_flag or setting in SECRET_SETTINGS:
        return f"{setting} ({env_for(setting)})"
    return f"{setting} ({flag_for(setting)}, {env_for(setting)})"


_config_file: ContextVar[Path | None] = ContextVar("volume_quota_config_file", default=None)


class SettingsBase(BaseSettings):
    """Reads init values (flags), then the environment, then the TOML file being loaded."""

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


@contextmanager
def _reading_config_file(path: Path | None) -> Iterator[None]:
    token = _config_file.set(path)
    try:
        yield
    finally:
        _config_file.reset(token)


SettingsT = TypeVar("SettingsT", bound=SettingsBase)


def load(
    settings_class: type[SettingsT],
    flag_values: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    known_settings: frozenset[str] = frozenset(),
    flagless: frozenset[str] = frozenset(),
) -> SettingsT:
    """``settings_class`` from flags (only those given), env, then ``config_file``.

    A key of the file that no command knows (``known_settings`` lists every command's) is an
    error; a key another command uses is ignored, so one file serves every command. Raises
    ``UsageError`` with one line per problem; a setting in ``flagless`` (the command has no
    flag for it) is named by its variable and file key only.
    """
    problems: list[str] = []
    if config_file is not None:
        for key in _config_keys(config_file):
            if key not in known_settings and key not in settings_class.model_fields:
                problems.append(f"unknown setting {key!r} in {config_file}")
    values = {key: value for key, value in (flag_values or {}).items() if value is not None}
    try:
        with _reading_config_file(config_file):
            settings = settings_class(**values)
    except ValidationError as error:
        raise UsageError(*problems, *describe_problems(error, flagless)) from None
    if problems:
        raise UsageError(*problems)
    return settings


def _config_keys(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    try:
        return list(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"--config {path}: not valid TOML ({error})") from None


def describe_problems(error: ValidationError, flagless: frozenset[str] = frozenset()) -> list[str]:
    """One line per problem pydantic found, naming the setting as a user writes it."""
    lines = []
    for problem in error.errors(include_url=False, include_input=False):
        message = " ".join(str(problem["msg"]).removeprefix("Value error, ").split())
        location = problem["loc"]
        if not location:
            lines.append(f"invalid settings: {message}")
        else:
            name = str(location[0])
            where = describe_setting(name, has_flag=name not in flagless)
            lines.append(f"invalid setting {where}: {message}")
    return lines
