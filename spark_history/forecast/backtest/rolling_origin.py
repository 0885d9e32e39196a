"""Rolling-origin backtest: score fill forecasters on a volume's own history.

Pure numpy on one volume's bucketed series; Spark only buckets the snapshots
(``spark_buckets.py``). For every origin (every ``origin_step_hours`` after
``warmup_hours`` of history), each forecaster sees the buckets up to the origin and nothing
after (:meth:`BucketSeries.history_at` cuts them off before a forecaster is called); what
followed the origin scores it:

- **error**: at each horizon ``h``, the absolute difference between the predicted used bytes
  at ``origin + h`` and the maximum of the bucket that ends there (a disk crosses a limit at a
  peak);
- **fills**: the *limit* is capacity minus the hard limit (the rows' ``hardThresholdBytes``);
  a *miss* is a real crossing within ``h`` (a bucket maximum at or over the limit) that the
  forecaster did not predict within ``h``; a *false fill* is a predicted crossing within ``h``
  that did not happen, counted only where the series goes on past ``origin + h``
  (otherwise *unscored*);
- **band** (a forecaster with a band on its crossing time): it covers when the real crossing
  falls inside it, or, with no crossing within ``h``, when its late side is past ``h``; a band
  without a late side is *open* and never covers.

Origins where the volume is already over its limit are skipped (nothing left to forecast).

**The clock is the bucket.** Every duration here (origin step, warm-up, horizons, windows)
and every duration of the forecast's ``ForecastParams`` counts buckets as hours: with the
default 1 h bucket they are hours; with a 1 minute bucket, a cluster run in compressed time
(a minute for an hour) is scored exactly as a real history of the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DEFAULT_HORIZONS_HOURS: tuple[float, ...] = (6.0, 24.0, 72.0, 168.0)


@dataclass(frozen=True, slots=True)
class BacktestConfig:
    """Durations in buckets (hours with the default 1 h bucket)."""

    origin_step_hours: float = 6.0
    warmup_hours: float = 24.0
    horizon_hours: float = 7 * 24.0
    horizons_hours: tuple[float, ...] = DEFAULT_HORIZONS_HOURS

    def __post_init__(self) -> None:
        for name in ("origin_step_hours", "warmup_hours", "horizon_hours"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0 and float(value).is_integer()):
                raise ValueError(f"{name} must be a positive whole number of buckets: {value}")
        if not self.horizons_hours:
            raise ValueError("no horizon to score")
        for horizon in self.horizons_hours:
            if not (0 < horizon <= self.horizon_hours and float(horizon).is_integer()):
                raise ValueError(
                    f"horizon {horizon:g} must be a whole number of buckets within "
                    f"{self.horizon_hours:g}"
                )


@dataclass(frozen=True, slots=True)
class History:
    """What a forecaster sees at an origin: the buckets up to it, times relative to it."""

    origin: int
    """The origin's bucket index (its end is ``origin`` bucket widths on the series' axis)."""
    hours: FloatArray
    """Bucket midpoints (the forecast's convention: ``bucket - 0.5``), all < 0."""
    mean_hours: FloatArray
    """Mean time of each bucket's samples (what a least-squares fit on raw samples sees)."""
    maxima: FloatArray
    means: FloatArray
    minima: FloatArray
    capacity: float
    limit: float
    """Used bytes at which the hard limit is crossed (capacity minus the hard threshold)."""
    horizon_hours: float


@dataclass(frozen=True, slots=True)
class Prediction:
    """A forecaster's answer at one origin; ``crossing`` in hours after it (None: not within
    the horizon); used bytes at ``h`` hours are ``intercept + slope * h``; ``band`` the
    crossing time's (early, late) sides, late None when open; None when there is no band;
    ``trend`` the class its band is calibrated by (None: not calibrated)."""

    crossing: float | None
    intercept: float
    slope: float
    band: tuple[float, float | None] | None = None
    trend: str | None = None
    path: Callable[[float], float] | None = None
    """Used bytes ``h`` hours after the origin when the forecaster's path is not a line (the
    mechanism forecast's retention bounds); None: the line."""

    def used_at(self, hours: float) -> float:
        if self.path is not None:
            return self.path(hours)
        return self.intercept + self.slope * hours


@dataclass(frozen=True, slots=True)
class Forecaster:
    name: str
    predict: Callable[[History], Prediction]


@dataclass(frozen=True, slots=True)
class BucketSeries:
    """One volume's history, one entry per bucket that holds samples, in bucket order.

    ``index`` k is the bucket ``((k - 1) w, k w]`` of the time axis (the job's ceil).
    """

    index: IntArray
    maxima: FloatArray
    means: FloatArray
    minima: FloatArray
    capacity: FloatArray
    limit: FloatArray
    mean_times: FloatArray = field(default_factory=lambda: np.empty(0))
    """Mean sample time per bucket, in buckets; empty means the bucket's midpoint."""

    def times(self) -> FloatArray:
        if self.mean_times.size == self.index.size:
            return self.mean_times
        midpoints: FloatArray = self.index.astype(np.float64) - 0.5
        return midpoints

    def history_at(self, origin: int, horizon_hours: float = 7 * 24.0) -> History:
        """The buckets up to ``origin`` (included) and nothing after."""
        upto = self.index <= origin
        if not upto.any():
            raise ValueError(f"no bucket at or before origin {origin}")
        last = int(np.flatnonzero(upto)[-1])
        relative = self.index[upto].astype(np.float64) - origin
        return History(
            origin=origin,
            hours=relative - 0.5,
            mean_hours=self.times()[upto] - origin,
            maxima=self.maxima[upto].copy(),
            means=self.means[upto].copy(),
            minima=self.minima[upto].copy(),
            capacity=float(self.capacity[last]),
            limit=float(self.limit[last]),
            horizon_hours=horizon_hours,
        )


def bucket_series(
    seconds: FloatArray,
    used: FloatArray,
    capacity: FloatArray,
    hard_free_bytes: FloatArray,
    bucket_seconds: float,
) -> BucketSeries:
    """Bucket raw samples (``seconds`` on any fixed axis): max, mean, min of used bytes; the
    newest capacity and hard threshold (free bytes; NaN: no hard limit) of each bucket."""
    if not bucket_seconds > 0:
        raise ValueError(f"bucket width must be positive: {bucket_seconds}")
    times = np.asarray(seconds, dtype=np.float64) / bucket_seconds
    order = np.argsort(times, kind="stable")
    times = times[order]
    values = np.asarray(used, dtype=np.float64)[order]
    capacities = np.asarray(capacity, dtype=np.float64)[order]
    hard = np.nan_to_num(np.asarray(hard_free_bytes, dtype=np.float64)[order], nan=0.0)
    buckets = np.ceil(times).astype(np.int64)
    index, starts, counts = np.unique(buckets, return_index=True, return_counts=True)
    ends = starts + counts - 1
    return BucketSeries(
        index=index,
        maxima=np.maximum.reduceat(values, starts).astype(np.float64),
        means=(np.add.reduceat(values, starts) / counts).astype(np.float64),
        minima=np.minimum.reduceat(values, starts).astype(np.float64),
        capacity=capacities[ends],
        limit=capacities[ends] - hard[ends],
        mean_times=(np.add.reduceat(times, starts) / counts).astype(np.float64),
    )


# --- scoring -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OriginScore:
    """One forecaster at one origin and horizon."""

    forecaster: str
    origin: int
    horizon_hours: float
    capacity: float
    abs_error: float | None
    """None when the series has no bucket ending at ``origin + horizon``."""
    real_crossing: bool | None
    """A bucket maximum reached the limit within the horizon; None: unknown (the series
    stops before the horizon without a crossing)."""
    predicted: bool
    miss: bool
    false_fill: bool
    band: str
    """``covered``, ``outside``, ``open`` or ``none`` (no band given)."""


def origins_of(series: BucketSeries, config: BacktestConfig) -> list[int]:
    """Origins every ``origin_step_hours`` once ``warmup_hours`` of history lie behind, each
    with at least one bucket after it."""
    if series.index.size == 0:
        return []
    start = int(series.index[0]) - 1 + int(config.warmup_hours)
    last = int(series.index[-1])
    return list(range(start, last, int(config.origin_step_hours)))


def score_series(
    series: BucketSeries, forecasters: Sequence[Forecaster], config: BacktestConfig
) -> list[OriginScore]:
    """Every forecaster at every origin of ``series``, at every horizon of ``config``."""
    scores: list[OriginScore] = []
    over = series.maxima >= series.limit
    last = int(series.index[-1]) if series.index.size else 0
    for origin in origins_of(series, config):
        history = series.history_at(origin, config.horizon_hours)
        if history.maxima[-1] >= history.limit:
            continue  # already over the limit: nothing left to forecast
        after = series.index > origin
        crossed = series.index[after & over]
        first_crossing = int(crossed[0]) if crossed.size else None
        for forecaster in forecasters:
            prediction = forecaster.predict(history)
            scores += [
                _score(
                    forecaster.name,
                    prediction,
                    series=series,
                    origin=origin,
                    horizon=h,
                    first_crossing=first_crossing,
                    last=last,
                )
                for h in config.horizons_hours
            ]
    return scores


def _score(
    name: str,
    prediction: Prediction,
    *,
    series: BucketSeries,
    origin: int,
    horizon: float,
    first_crossing: int | None,
    last: int,
) -> OriginScore:
    target = origin + int(horizon)
    position = np.flatnonzero(series.index == target)
    error = None
    capacity = float(series.capacity[position[0]]) if position.size else math.nan
    if position.size:
        error = abs(prediction.used_at(horizon) - float(series.maxima[position[0]]))
    real: bool | None
    if first_crossing is not None and first_crossing <= target:
        real = True
    elif last >= target:
        real = False
    else:
        real = None
    predicted = prediction.crossing is not None and prediction.crossing <= horizon
    band = _band(prediction, first_crossing, origin, horizon, real)
    if math.isnan(capacity):
        before = np.flatnonzero(series.index <= origin)
        capacity = float(series.capacity[before[-1]])
    return OriginScore(
        forecaster=name,
        origin=origin,
        horizon_hours=horizon,
        capacity=capacity,
        abs_error=error,
        real_crossing=real,
        predicted=predicted,
        miss=real is True and not predicted,
        false_fill=real is False and predicted,
        band=band,
    )


def _band(
    prediction: Prediction,
    first_crossing: int | None,
    origin: int,
    horizon: float,
    real: bool | None,
) -> str:
    if prediction.band is None or real is None:
        return "none"
    low, high = prediction.band
    if high is None:
        return "open"
    if real and first_crossing is not None:
        crossing = first_crossing - origin - 0.5  # the crossing bucket's midpoint
        return "covered" if low <= crossing <= high else "outside"
    return "covered" if high > horizon else "outside"


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One forecaster at one horizon, over every origin of every volume."""

    forecaster: str
    horizon_hours: float
    origins: int
    """Origins scored at this horizon (not already over the limit)."""
    errors: int
    """Origins with a bucket at ``origin + horizon`` (the error's sample)."""
    crossings: int
    misses: int
    false_fills: int
    unscored: int
    """Predicted crossings whose series stops before the horizon."""
    error_p50_bytes: float | None
    error_p90_bytes: float | None
    error_p50_percent: float | None
    error_p90_percent: float | None
    """Errors in percent of the volume's capacity."""
    banded: int
    covered: int
    open_bands: int

    @property
    def coverage(self) -> float | None:
        return self.covered / self.banded if self.banded else None


def summarize(scores: Iterable[OriginScore]) -> list[SummaryRow]:
    """One row per forecaster and horizon, forecasters in first-seen order."""
    groups: dict[tuple[str, float], list[OriginScore]] = {}
    for score in scores:
        groups.setdefault((score.forecaster, score.horizon_hours), []).append(score)
    rows = []
    for (name, horizon), group in groups.items():
        errors = np.array([s.abs_error for s in group if s.abs_error is not None], dtype=float)
        percents = np.array(
            [100.0 * s.abs_error / s.capacity for s in group if s.abs_error is not None],
            dtype=float,
        )
        banded = [s for s in group if s.band != "none"]
        rows.append(
            SummaryRow(
                forecaster=name,
                horizon_hours=horizon,
                origins=len(group),
                errors=int(errors.size),
                crossings=sum(1 for s in group if s.real_crossing),
                misses=sum(1 for s in group if s.miss),
                false_fills=sum(1 for s in group if s.false_fill),
                unscored=sum(1 for s in group if s.predicted and s.real_crossing is None),
                error_p50_bytes=_quantile(errors, 0.5),
                error_p90_bytes=_quantile(errors, 0.9),
                error_p50_percent=_quantile(percents, 0.5),
                error_p90_percent=_quantile(percents, 0.9),
                banded=len(banded),
                covered=sum(1 for s in banded if s.band == "covered"),
                open_bands=sum(1 for s in banded if s.band == "open"),
            )
        )
    return sorted(rows, key=lambda row: (_order(rows, row.forecaster), row.horizon_hours))


def _order(rows: list[SummaryRow], name: str) -> int:
    return next(index for index, row in enumerate(rows) if row.forecaster == name)


def _quantile(values: FloatArray, q: float) -> float | None:
    return float(np.quantile(values, q)) if values.size else None
