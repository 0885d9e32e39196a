"""What calibrating the forecast's bands on a sample of the volumes saves, and what it loses.

``python -m benchmarks.calibration_sample --brokers 50 --days 10 --sample 200 --workdir
/tmp/vq-fleet-scale``: the fleet ``benchmarks.history_fleet_scale`` writes (``--brokers`` x 16
volumes, a sample a minute, the usage dataset; reused when already written under ``--workdir``,
with its hourly rollups), read as ``history report`` reads it, in Spark local mode
(``--cores``). In the same run:

1. The mechanism's backtest errors (``spark_mechanism.mechanism_calibration_samples``) of the
   ``--sample``, then of every volume with usage (``calibration_volumes`` = the fleet), each
   timed (the sample first, with the cold reads); the sample's errors must be the fleet run's
   errors of the same volumes.
2. The sample's band is scored on the volumes **outside** it: per trend and horizon, the share
   of their errors between the sample's bounds (nominal 90 %; a side left open is not
   covering), beside the bounds of the whole fleet's band, and beside the band the same sample
   gives pooled over the trends (one per horizon: what the split by trend is against).
3. The trend forecast (``spark_trend.forecast_volumes``, its calibration and the forecast), timed
   with the sample calibrating it and with every volume.

Calibration origins need more than 72 h of history: ``--days`` 4 or more (10 gives the 16
origins a volume has from 7 days on).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.fleet_datasets import FleetShape, ensure_fleet
from benchmarks.local_spark import local_session
from benchmarks.machine import describe_machine
from spark_history import synthetic
from spark_history.forecast.envelope import calibration_of
from spark_history.forecast.vocabulary import ForecastParams

AT = synthetic.HistoryConfig().at
VOLUMES_PER_BROKER = 16
POOLED = "pooled"


def _timed(run: Callable[[], pd.DataFrame]) -> tuple[pd.DataFrame, float]:
    started = time.monotonic()
    result = run()
    return result, time.monotonic() - started


def held_out_coverage(
    errors: pd.DataFrame, bounds: dict[tuple[str, float], tuple[float, float]]
) -> dict[tuple[str, float], float]:
    """Per (trend, horizon) of ``errors``, the share between its ``bounds`` (NaN without
    bounds; a side left open covers nothing)."""
    shares = {}
    for (trend, horizon), group in errors.groupby(["trend", "horizonHours"]):
        key = (str(trend), float(str(horizon)))
        low, high = bounds.get(key, (math.nan, math.nan))
        values = group["error"].to_numpy(dtype=np.float64)
        if math.isnan(low):
            shares[key] = math.nan
        elif not (math.isfinite(low) and math.isfinite(high)):
            shares[key] = 0.0
        else:
            shares[key] = float(np.mean((values >= low) & (values <= high)))
    return shares


def _inputs(session: Any, fleet: Path, at: datetime, params: ForecastParams) -> dict[str, Any]:
    """Snapshots, their hourly rollup, and the usage rollup, as the report reads them."""
    from spark_history.forecast.spark_mechanism import load_usage  # noqa: PLC0415
    from spark_history.history_input import load_history  # noqa: PLC0415
    from spark_history.rollup_store import SNAPSHOTS, USAGE, load_rollup  # noqa: PLC0415

    snapshots = load_history(session, str(fleet / "volumes"))
    window = (at, params.lookback_hours)
    rollup = load_rollup(session, str(fleet / "volumes"), snapshots, window, kind=SNAPSHOTS)
    usage = load_rollup(
        session, str(fleet / "usage"), load_usage(session, str(fleet / "usage")), kind=USAGE
    )
    return {"snapshots": snapshots, "rollup": rollup, "usage": usage}


def measure(
    session: Any,
    workdir: Path,
    brokers: int,
    days: float,
    sample: int,
    *,
    volumes_per_broker: int = VOLUMES_PER_BROKER,
) -> dict[str, Any]:
    """Steps 1 to 3 of the module docstring; the figures."""
    from spark_history.forecast.spark_mechanism import (  # noqa: PLC0415
        mechanism_calibration_samples,
    )
    from spark_history.forecast.spark_trend import forecast_volumes  # noqa: PLC0415

    shape = FleetShape(brokers, volumes_per_broker, days, AT)
    fleet = workdir / f"b{brokers}-v{volumes_per_broker}-d{days:g}"
    ensure_fleet(shape, fleet)
    every = ForecastParams(calibration_volumes=brokers * volumes_per_broker)
    sampled = ForecastParams(calibration_volumes=sample)
    data = _inputs(session, fleet, AT, every)

    def errors(params: ForecastParams) -> pd.DataFrame:
        frame = mechanism_calibration_samples(
            data["usage"], data["snapshots"], AT, params, data["rollup"]
        )
        return frame.toPandas()

    def trend(params: ForecastParams) -> pd.DataFrame:
        return forecast_volumes(data["snapshots"], AT, params, None, data["rollup"]).toPandas()

    # The sample first: it pays for the cold reads, so the ratios understate its saving.
    seconds = {}
    part, seconds["mechanismSample"] = _timed(lambda: errors(sampled))
    full, seconds["mechanismEvery"] = _timed(lambda: errors(every))
    _, seconds["trendSample"] = _timed(lambda: trend(sampled))
    _, seconds["trendEvery"] = _timed(lambda: trend(every))
    return {
        "brokers": brokers,
        "volumes": brokers * volumes_per_broker,
        "days": days,
        "sample": sample,
        "cores": session.sparkContext.defaultParallelism,
        "seconds": seconds,
        **compare(full, part),
    }


def compare(full: pd.DataFrame, part: pd.DataFrame) -> dict[str, Any]:
    """The sample's errors checked against the fleet's, and its band scored outside it."""
    key = ["brokerId", "volumeName"]
    chosen = part[key].drop_duplicates()
    inside = full.merge(chosen, on=key)
    columns = [*key, "trend", "horizonHours", "error"]

    def ordered(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[columns].sort_values(columns).reset_index(drop=True)

    if not ordered(inside).equals(ordered(part)):
        raise SystemExit("the sample's errors are not the fleet run's errors of its volumes")
    outside = full.merge(chosen, on=key, how="left", indicator=True)
    outside = outside[outside["_merge"] == "left_only"]
    params = ForecastParams()
    every, sample = calibration_of(full, params), calibration_of(part, params)
    coverage = held_out_coverage(outside, dict(sample.bounds))
    # The same sample's errors in one band per horizon, whatever the trend: what the class
    # split is against.
    pooled = calibration_of(part.assign(trend=POOLED), params)
    pooled_bounds = {
        (trend, horizon): pooled.bounds[POOLED, horizon]
        for trend, horizon in every.counts
        if (POOLED, horizon) in pooled.bounds
    }
    pooled_coverage = held_out_coverage(outside, pooled_bounds)
    rows = [
        {
            "trend": trend,
            "horizonHours": horizon,
            "errorsEvery": every.counts.get((trend, horizon), 0),
            "errorsSample": sample.counts.get((trend, horizon), 0),
            "errorsOutside": int(
                ((outside["trend"] == trend) & (outside["horizonHours"] == horizon)).sum()
            ),
            "boundsEvery": list(every.bounds.get((trend, horizon), (math.nan, math.nan))),
            "boundsSample": list(sample.bounds.get((trend, horizon), (math.nan, math.nan))),
            "coverageOutside": coverage.get((trend, horizon), math.nan),
            "boundsPooled": list(pooled_bounds.get((trend, horizon), (math.nan, math.nan))),
            "coveragePooledOutside": pooled_coverage.get((trend, horizon), math.nan),
        }
        for trend, horizon in sorted(every.counts)
    ]
    return {
        "volumesWithErrors": int(full[key].drop_duplicates().shape[0]),
        "volumesSampled": int(chosen.shape[0]),
        "bands": rows,
    }


def report(result: dict[str, Any]) -> str:
    seconds = result["seconds"]
    lines = [
        f"### {result['volumes']} volumes x {result['days']:g} days, calibrated by "
        f"{result['volumesSampled']} of the {result['volumesWithErrors']} with errors "
        f"({result['cores']} cores, local mode)",
        "",
        f"mechanism's errors: every volume {seconds['mechanismEvery']:.1f} s, the sample "
        f"{seconds['mechanismSample']:.1f} s "
        f"({seconds['mechanismEvery'] / seconds['mechanismSample']:.1f}x)",
        f"trend forecast: every volume {seconds['trendEvery']:.1f} s, the sample "
        f"{seconds['trendSample']:.1f} s "
        f"({seconds['trendEvery'] / seconds['trendSample']:.1f}x)",
        "",
        "| trend | horizon h | errors (all / sample / outside) | band, every volume, % of "
        "capacity | band, the sample | sample's band covers outside | the sample's band "
        "pooled over trends | pooled covers outside |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["bands"]:
        every, sample, pooled = (
            ", ".join(f"{100 * bound:+.2f}" for bound in row[name])
            for name in ("boundsEvery", "boundsSample", "boundsPooled")
        )
        lines.append(
            f"| {row['trend']} | {row['horizonHours']:g} | {row['errorsEvery']} / "
            f"{row['errorsSample']} / {row['errorsOutside']} | {every} | {sample} | "
            f"{100 * row['coverageOutside']:.1f} % | {pooled} | "
            f"{100 * row['coveragePooledOutside']:.1f} % |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--brokers", type=int, default=50)
    parser.add_argument("--days", type=float, default=10.0)
    parser.add_argument("--sample", type=int, default=200, help="volumes that calibrate")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/vq-fleet-scale"))
    arguments = parser.parse_args()
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    print(describe_machine(), flush=True)
    session = local_session(arguments.cores, arguments.driver_memory)
    try:
        result = measure(
            session, arguments.workdir, arguments.brokers, arguments.days, arguments.sample
        )
    finally:
        session.stop()
    name = f"calibration-sample-b{arguments.brokers}-d{arguments.days:g}-s{arguments.sample}"
    (arguments.workdir / f"{name}.json").write_text(json.dumps(result, indent=1))
    print(report(result))


if __name__ == "__main__":
    main()
