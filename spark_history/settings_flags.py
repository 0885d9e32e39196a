"""The history actions' flags, generated from their settings models like every other command's
(``volume_quota.config.flags``), and the settings loaded back from the parsed flags, the
environment and ``--config``."""

from __future__ import annotations

import argparse
from typing import cast

from spark_history.analysis_settings import ForecastSettings, ReportSettings
from spark_history.backtest_settings import BacktestSettings
from spark_history.source_settings import (
    KAFKA_SECRETS,
    KAFKA_UNUSED,
    CompactSettings,
    IngestSettings,
)
from volume_quota.config.commands import ALL_SETTINGS
from volume_quota.config.flags import (
    add_config_flag,
    add_repeatable_flag,
    add_setting_flags,
    config_file,
    given_settings,
    settings_without_flags,
)
from volume_quota.config.sources import SettingsBase, SettingsT, load

HISTORY_SETTINGS = frozenset(
    name
    for model in (
        IngestSettings,
        CompactSettings,
        ForecastSettings,
        ReportSettings,
        BacktestSettings,
    )
    for name in model.model_fields
)
"""Every setting of a history action."""

REPEATABLE = frozenset({"kafka_option"})
"""List settings given as one flag per value."""


def add_options(
    container: argparse._ActionsContainer,
    settings_class: type[SettingsBase],
    only: frozenset[str] | None = None,
) -> None:
    """A flag per setting of ``settings_class`` (those in ``only`` when given), with no flag
    for secrets (environment or file only) nor for the connection settings the job ignores."""
    # An argument group takes the same add_argument calls as the parser the helpers type.
    parser = cast(argparse.ArgumentParser, container)
    hidden = KAFKA_UNUSED | KAFKA_SECRETS | REPEATABLE
    if only is not None:
        hidden |= frozenset(settings_class.model_fields) - only
    add_setting_flags(parser, settings_class, without=hidden)
    for name in sorted(REPEATABLE & (only or frozenset(settings_class.model_fields))):
        if name in settings_class.model_fields:
            add_repeatable_flag(parser, name, settings_class.model_fields[name])


def load_options(settings_class: type[SettingsT], arguments: argparse.Namespace) -> SettingsT:
    """The action's settings: its flags, then ``VOLUME_QUOTA_*``, then ``--config``; a bad value
    raises ``UsageError``, one line naming the flag, the variable and the file key."""
    fields = settings_class.model_fields
    flagless = settings_without_flags(arguments, fields)
    known = ALL_SETTINGS | HISTORY_SETTINGS
    return load(
        settings_class, given_settings(arguments, fields), config_file(arguments), known, flagless
    )


__all__ = ["HISTORY_SETTINGS", "add_config_flag", "add_options", "load_options"]
