"""The mechanism forecast as a backtest forecaster: what it sees at an origin (pandas only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from spark_history.forecast.backtest.mechanism_forecaster import (
    mechanism_calibration_group,
    mechanism_forecaster,
    with_own_configs,
)
from spark_history.forecast.backtest.rolling_origin import (
    Forecaster,
    History,
    Prediction,
)
from spark_history.forecast.conformal_bands import Calibration
from spark_history.forecast.vocabulary import ForecastParams, Trend
from spark_history.usage_documents import usage_rows, usage_verdict
from tests.spark_history_pure.usage_factory import GB, encoded, growing_buckets, growing_cluster

START = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
HOUR = 3600
PARAMS = ForecastParams(horizon_hours=60 * 24.0)
CAPACITY = 1000 * GB


def usage_frame(hours: int) -> pd.DataFrame:
    """Every row of ``growing_cluster``'s usage documents: topic, other and config rows."""
    usage, _ = growing_cluster(START, hours=hours)
    rows = []
    for document in usage:
        verdict = usage_verdict(b"0", encoded(document), check_key=True)
        assert verdict.document is not None
        rows += usage_rows(verdict.document)
    return pd.DataFrame(rows)


def history_at(hours: int) -> History:
    """The snapshot buckets of the same volume up to ``hours`` after START (hourly buckets on
    the epoch axis, as the backtest cuts them): 300 GB plus what ``logs`` wrote at 1 MB/s."""
    series = growing_buckets(START, hours, lag_hours=0.5)
    return series.history_at(int(series.index[-1]), PARAMS.horizon_hours)


class Fallback:
    """A forecaster that records being asked."""

    def __init__(self) -> None:
        self.asked = 0
        self.answer = Prediction(crossing=1.0, intercept=0.0, slope=0.0, trend="fallback")

    def forecaster(self) -> Forecaster:
        def predict(_history: History) -> Prediction:
            self.asked += 1
            return self.answer

        return Forecaster("fallback", predict)


def test_at_an_origin_it_gives_the_unbounded_topics_fill_time() -> None:
    history = history_at(12)
    prediction = mechanism_forecaster(usage_frame(12), PARAMS, Fallback().forecaster()).predict(
        history
    )
    # At the origin the volume holds 300 GB + 11.5 h x 3.6 GB (the last bucket's mean); the
    # limit is 900 GB; logs grows at 1 MB/s = 3.6 GB/h and capped stays at its 10 GB bound.
    consumed = 300 * GB + 11.5 * HOUR * 1e6
    expected_hours = (900 * GB - consumed) / (HOUR * 1e6)
    # 12 buckets span 11 h, under the trend's 12 h minimum: no class, so no band either.
    assert prediction.trend is None
    assert prediction.crossing is not None
    assert abs(prediction.crossing - expected_hours) < 0.5
    assert prediction.used_at(0) == consumed
    assert abs(prediction.used_at(prediction.crossing) - 900 * GB) < 1e-6 * 900 * GB


def test_nothing_surveyed_after_the_origin_is_seen() -> None:
    fallback = Fallback().forecaster()
    later = usage_frame(36)
    jump = later["surveyedAt"] > pd.Timestamp(START + timedelta(hours=12))
    later.loc[jump & (later["topic"] == "logs"), "bytes"] *= 5  # a burst after the origin
    now = mechanism_forecaster(usage_frame(12), PARAMS, fallback).predict(history_at(12))
    seen_later = mechanism_forecaster(later, PARAMS, fallback).predict(history_at(12))
    assert now.crossing is not None
    assert seen_later.crossing is not None
    assert abs(seen_later.crossing - now.crossing) < 1e-9


def test_a_config_read_after_the_origin_is_not_known_at_it() -> None:
    usage = usage_frame(12)
    known = mechanism_forecaster(usage, PARAMS, Fallback().forecaster()).predict(history_at(12))
    late = usage.copy()
    configs = late["kind"] == "config"
    late.loc[configs, "configReadAt"] = pd.Timestamp(START + timedelta(hours=13))
    unknown = mechanism_forecaster(late, PARAMS, Fallback().forecaster()).predict(history_at(12))
    assert known.crossing is not None
    assert unknown.crossing is not None
    # Without its retention.bytes, capped is projected at its write rate, unbounded: sooner.
    assert unknown.crossing < known.crossing - 1


def test_without_usage_in_the_window_the_fallback_answers() -> None:
    fallback = Fallback()
    usage = usage_frame(12)
    usage["surveyedAt"] = pd.to_datetime(usage["surveyedAt"], utc=True) + pd.Timedelta(days=30)
    prediction = mechanism_forecaster(usage, PARAMS, fallback.forecaster()).predict(history_at(12))
    assert prediction is fallback.answer
    assert fallback.asked == 1


def test_a_bounded_volume_does_not_fill_however_long_the_horizon() -> None:
    usage = usage_frame(12)
    usage = usage[usage["topic"] != "logs"]  # only capped (bounded) and the steady rest
    prediction = mechanism_forecaster(usage, PARAMS, Fallback().forecaster()).predict(
        history_at(12)
    )
    assert prediction.crossing is None
    assert prediction.used_at(24 * 60) <= prediction.used_at(0) + 10 * GB


def test_its_band_is_calibrated_on_the_errors_of_its_trend_class() -> None:
    def band_with(trend: Trend) -> tuple[float, float | None] | None:
        horizons = (6.0, 24.0, 72.0, 240.0)
        calibration = Calibration(0.9, {(trend.value, h): (-0.01, 0.01) for h in horizons})
        forecaster = mechanism_forecaster(
            usage_frame(24), PARAMS, Fallback().forecaster(), calibration=calibration
        )
        prediction = forecaster.predict(history_at(24))
        assert prediction.trend == Trend.GROWING  # the volume grows steadily
        return prediction.band

    growing = band_with(Trend.GROWING)
    crossing = prediction_crossing(24)
    assert growing is not None
    assert crossing is not None
    early, late = growing
    assert late is not None
    assert early < crossing < late
    # The flat volumes' errors say nothing of a growing one: no band.
    assert band_with(Trend.FLAT) is None


def prediction_crossing(hours: int) -> float | None:
    forecaster = mechanism_forecaster(usage_frame(hours), PARAMS, Fallback().forecaster())
    return forecaster.predict(history_at(hours)).crossing


def test_a_volume_keeps_only_its_own_topics_configs_and_forecasts_the_same() -> None:
    usage = usage_frame(12)
    configs = usage[usage["kind"] == "config"]
    rows = usage[usage["kind"] != "config"]
    # Another volume's topic, with a retention that would bound everything it touched.
    foreign = configs.assign(topic="elsewhere", retentionBytes=1)
    own = with_own_configs(rows, pd.concat([configs, foreign], ignore_index=True))
    assert set(own.loc[own["kind"] == "config", "topic"]) == set(configs["topic"])
    assert len(own) == len(usage)
    fallback = Fallback().forecaster()
    kept = mechanism_forecaster(own, PARAMS, fallback).predict(history_at(12))
    every = mechanism_forecaster(usage, PARAMS, fallback).predict(history_at(12))
    assert kept.crossing is not None
    assert kept.crossing == every.crossing


def hourly_envelope(hours: int, growth_bytes_per_second: float) -> pd.DataFrame:
    """The volume's hourly envelope as ``spark_trend.hourly_envelope`` gives it at START +
    ``hours``: buckets -hours+1..0 counted from then, each ending at the level 300 GB plus
    ``growth_bytes_per_second`` since START."""
    buckets = np.arange(-hours + 1, 1, dtype=np.int64)
    level = 300 * GB + (hours + buckets) * HOUR * growth_bytes_per_second
    return pd.DataFrame(
        {
            "bucket": buckets,
            "maxConsumed": level,
            "meanConsumed": level - HOUR / 2 * growth_bytes_per_second,
            "minConsumed": level - HOUR * growth_bytes_per_second,
            "meanHours": buckets - 0.5,
            "capacity": float(CAPACITY),
        }
    )


CALIBRATED = ForecastParams(horizon_hours=72.0)
"""Calibrated at 6, 24 and 72 h, origins every 6 h once 72 h lie behind."""


def test_its_calibration_scores_its_level_at_each_origin_and_horizon() -> None:
    zero = (START + timedelta(hours=200)).timestamp()
    samples = mechanism_calibration_group(
        hourly_envelope(200, 1e6), usage_frame(200), CALIBRATED, zero
    )
    # Buckets -199..0: origins -128, -122, ..., -2; a horizon h is scored where origin + h <= 0.
    counts = samples.groupby("horizonHours").size().to_dict()
    assert counts == {6.0: 21, 24.0: 18, 72.0: 10}
    assert set(samples["trend"]) == {Trend.GROWING}
    # The volume grows by exactly what `logs` writes: the mechanism's level errs by less than a
    # survey's rounding (1 GB of 1000 GB).
    assert samples["error"].abs().max() < 1e-3


def test_growth_its_topics_do_not_explain_is_its_error() -> None:
    zero = (START + timedelta(hours=200)).timestamp()
    samples = mechanism_calibration_group(
        hourly_envelope(200, 2e6), usage_frame(200), CALIBRATED, zero
    )
    # The volume grows 1 MB/s more than its topics: h hours later, h x 3.6 GB of 1000 GB.
    expected = samples["horizonHours"] * HOUR * 1e6 / CAPACITY
    assert np.allclose(samples["error"], expected, atol=1e-3)
    assert set(samples["horizonHours"]) == {6.0, 24.0, 72.0}


def test_origins_it_cannot_see_usage_at_calibrate_nothing() -> None:
    hourly, usage = hourly_envelope(200, 1e6), usage_frame(200)
    assert mechanism_calibration_group(hourly, usage, CALIBRATED, 0.0).empty  # usage of 1970
    assert mechanism_calibration_group(hourly, usage.iloc[0:0], CALIBRATED, 1e9).empty
