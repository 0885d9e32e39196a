"""Command-line flags generated from the settings' fields: name, metavar, help, default, env.

Flags are read as text and validated with the other sources when the settings load, so a bad
flag value gets the same one-line error as a bad environment variable or config file entry.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from schemas.snapshot import ConsumedSpaceLimit, MinFreeBytesLimit, MinFreePercentageLimit
from volume_quota.config.sources import CONFIG_FILE_ENV, SECRET_SETTINGS, env_for, flag_for
from volume_quota.limit_parsing import format_limit


def add_setting_flags(
    parser: argparse.ArgumentParser,
    settings_class: type[BaseSettings],
    without: frozenset[str] = frozenset(),
) -> list[str]:
    """One flag per field of ``settings_class`` (except ``without``); returns their names."""
    added: list[str] = []
    for name in _in_concern_order(settings_class):
        if name not in SECRET_SETTINGS and name not in without:
            add_flag(parser, name, settings_class.model_fields[name])
            added.append(name)
    return added


def _in_concern_order(settings_class: type[BaseSettings]) -> list[str]:
    """Field names grouped as the concerns are listed in the command's class (connection
    first), in the order each concern declares them."""
    names: list[str] = []
    for klass in settings_class.__mro__:
        for name in getattr(klass, "__annotations__", {}):
            if name in settings_class.model_fields and name not in names:
                names.append(name)
    return names


def add_flag(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    metavar = str(extra.get("metavar") or "")
    shown = display_default(field)
    default_text = f"default: {shown}; " if shown else ""
    help_text = f"{field.description} ({default_text}env {env_for(name)})"
    if field.annotation is bool:
        parser.add_argument(
            flag_for(name),
            dest=name,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=help_text,
        )
    elif name == "volume_limits":
        parser.add_argument(
            flag_for(name), dest=name, action="append", metavar=metavar, help=help_text
        )
    else:
        parser.add_argument(flag_for(name), dest=name, metavar=metavar, help=help_text)


def display_default(field: FieldInfo) -> str:
    """The default as a user would write it; empty when there is none worth showing."""
    value = field.get_default(call_default_factory=True)
    if value is None or value == []:
        return ""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, ConsumedSpaceLimit | MinFreeBytesLimit | MinFreePercentageLimit):
        return format_limit(value)
    if isinstance(value, float):
        unit = "s" if "DURATION" in str(field.json_schema_extra) else ""
        return f"{value:g}{unit}"
    return str(getattr(value, "value", value))


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"TOML file of settings (keys as in docs/publisher.md); env {CONFIG_FILE_ENV}. "
        "Flags override the environment, which overrides the file.",
    )


def config_file(arguments: argparse.Namespace) -> Path | None:
    path = arguments.config or os.environ.get(CONFIG_FILE_ENV)
    return Path(path) if path else None


def given_settings(arguments: argparse.Namespace, settings: Iterable[str]) -> dict[str, Any]:
    """The settings given as flags (a flag left out leaves the other sources in charge)."""
    return {
        name: value for name in settings if (value := getattr(arguments, name, None)) is not None
    }


def settings_without_flags(
    arguments: argparse.Namespace, settings: Iterable[str]
) -> frozenset[str]:
    """The settings the command that parsed ``arguments`` has no flag for."""
    return frozenset(name for name in settings if not hasattr(arguments, name))


def add_repeatable_flag(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    """A flag given once per value (``--kafka-option A=1 --kafka-option B=2``): a list setting
    whose environment variable or file entry holds the values instead."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    parser.add_argument(
        flag_for(name),
        dest=name,
        action="append",
        metavar=str(extra.get("metavar") or ""),
        help=f"{field.description} (env {env_for(name)})",
    )
