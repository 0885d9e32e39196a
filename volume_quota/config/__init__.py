"""Configuration: one model per concern, composed per command, loaded from flags, environment
and a TOML file, then checked at start. See docs/publisher.md for every setting."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from volume_quota.config.commands import (
    ALL_SETTINGS,
    DecideSettings,
    PublishSettings,
    SidecarSettings,
    StatusSettings,
)
from volume_quota.config.flags import (
    add_config_flag,
    add_setting_flags,
    config_file,
    settings_without_flags,
)
from volume_quota.config.sources import SettingsT, describe_setting, load
from volume_quota.config.startup_checks import check_at_start, wait_for_broker_files

__all__ = [
    "DecideSettings",
    "PublishSettings",
    "SidecarSettings",
    "StatusSettings",
    "add_settings_arguments",
    "describe_setting",
    "load_settings",
    "settings_from_arguments",
]


def known_settings(config: Path | None) -> frozenset[str]:
    """The keys a config file may hold: every command's settings, the history job's included
    (one file can serve every ``volume-quota`` command). Loaded only when a file is given."""
    if config is None:
        return ALL_SETTINGS
    from spark_history.settings_flags import HISTORY_SETTINGS  # noqa: PLC0415 - see above

    return ALL_SETTINGS | HISTORY_SETTINGS


def add_settings_arguments(parser: argparse.ArgumentParser, settings_class: type[Any]) -> None:
    """``--config`` and one flag per setting of ``settings_class``."""
    add_config_flag(parser)
    add_setting_flags(parser, settings_class)


def settings_from_arguments(
    settings_class: type[SettingsT], arguments: argparse.Namespace, *, check: bool = True
) -> SettingsT:
    """The command's settings from its flags, the environment and ``--config``, checked at
    start (files readable, certificates usable) unless ``check`` is off."""
    flags = {name: getattr(arguments, name, None) for name in settings_class.model_fields}
    config = config_file(arguments)
    flagless = settings_without_flags(arguments, settings_class.model_fields)
    settings = load(settings_class, flags, config, known_settings(config), flagless)
    if check:
        wait_for_broker_files(settings)
        check_at_start(settings)
    return settings


def load_settings(
    values: Mapping[str, Any] | None = None, config: Path | None = None, *, check: bool = True
) -> SidecarSettings:
    """Every setting from explicit ``values`` (as flags would give them), the environment and
    ``config``; for programs that embed the daemons (tests, benchmarks)."""
    settings = load(SidecarSettings, values, config, known_settings(config))
    if check:
        check_at_start(settings)
    return settings
