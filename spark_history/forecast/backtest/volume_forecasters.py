"""Which forecasters ``history backtest`` and the report's backtest panel score each volume
with: ``linear-6h``, ``linear-72h``, the forecast, and where the usage history is given the
mechanism, each band cross-fitted on the other fold's volumes (pure: pandas, no Spark)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd

from spark_history.forecast.backtest.forecasters import (
    calibration_samples,
    cross_fitted,
    default_forecasters,
    fold_calibrations,
    forecast_params,
)
from spark_history.forecast.backtest.mechanism_forecaster import NO_ANSWER, mechanism_forecaster
from spark_history.forecast.backtest.rolling_origin import BacktestConfig, BucketSeries, Forecaster
from spark_history.forecast.conformal_bands import Calibration


@dataclass(frozen=True, slots=True)
class UsageHistory:
    """The collected usage, and the mechanism forecaster of each volume."""

    volumes: dict[tuple[int, str], pd.DataFrame]
    configs: pd.DataFrame
    bucket_seconds: float

    def forecaster(
        self,
        broker: int,
        volume: str,
        config: BacktestConfig,
        trend: Forecaster,
        calibration: Calibration | None = None,
    ) -> Forecaster:
        """The mechanism of ``volume`` (``trend`` at origins without its usage), its band
        from ``calibration``."""
        params = replace(forecast_params(config), bucket_seconds=self.bucket_seconds)
        rows = self.volumes.get((broker, volume), self.configs)
        return mechanism_forecaster(rows, params, trend, calibration=calibration)


def volume_forecasters(
    volumes: Sequence[tuple[int, str, BucketSeries]],
    config: BacktestConfig,
    usage: UsageHistory | None,
) -> list[list[Forecaster]]:
    """Per volume, the forecasters it is scored with: ``linear-6h``, ``linear-72h``, the
    forecast, and with ``usage`` the mechanism, each band calibrated on the other fold's
    volumes (``forecasters.fold_calibrations``)."""
    calibrations = cross_fitted([series for _, _, series in volumes], config)
    forecasters = [default_forecasters(config, calibration) for calibration in calibrations]
    if usage is None:
        return forecasters
    samples = [
        calibration_samples(series, usage.forecaster(broker, volume, config, NO_ANSWER), config)
        for broker, volume, series in volumes
    ]
    coverage = forecast_params(config).band_coverage
    for (broker, volume, _), own, calibration in zip(
        volumes, forecasters, fold_calibrations(samples, coverage), strict=True
    ):
        own.append(usage.forecaster(broker, volume, config, own[-1], calibration))
    return forecasters
