"""Benchmark: drift false alarms when a day effect is shared by every trial of a day (issue 27).

Design: each stream freezes its own baseline (30 days x 50 trials a day, true rate 0.58), calibrates its
threshold for at most 1 false alarm per stream-year, runs a stable year (the CUSUM restarted after each alarm)
and, apart, a 10-point drop of every rate. Days either are independent given the rates, or share a day effect:
a stationary AR(1) on the logit scale, lag-1 correlation 0.5, sd 0.015 / (0.58 x 0.42) = 0.061 (about 1.5
points of sd on the daily rate), in the baseline and the monitored days alike. Each stream is calibrated twice
on the same simulated days: with the day-level variance its baseline shows (stats/baseline.py ``day_variance``,
the rule now) and without (days independent given the rates, the rule before). Writes the "## Drift alarms
with a shared day effect" section of BENCHMARKS.md; tests/stats/test_drift_day_effect.py runs it smaller.

    .venv/bin/python benchmarks/drift_day_effect.py [--streams 400] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import write_section  # noqa: E402

from evalharness.stats.drift_sim import simulate

TITLE = "Drift alarms with a shared day effect"
BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
DAY_SD = 0.015 / (0.58 * 0.42)
STREAMS = (("fixed panel, equal tasks (all 0.58)", "panel"), ("fresh tasks every day (binomial)", "binomial"))


def row(name: str, kind: str, days: str, streams: int, seed: int) -> str:
    sd, rho = (DAY_SD, 0.5) if days == "shared" else (0.0, 0.0)
    cells = []
    for with_days in (True, False):
        s = simulate(kind, rates=np.full(50, 0.58) if kind == "panel" else None, streams=streams, seed=seed,
                     day_sd=sd, day_rho=rho, day_variance=with_days)
        print(name, days, with_days, s, file=sys.stderr, flush=True)
        cells.append(f"{s.false_alarms_per_year:.3f} ± {s.false_alarms_se:.3f} | {100 * s.above_promise:.0f}% | "
                     f"{s.delay_median:g} ({s.delay_mean:.2f})")
    label = "AR(1) day effect, rho 0.5, ~1.5 points" if days == "shared" else "independent days"
    return f"| {name} | {label} | {streams} | {cells[0]} | {cells[1]} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=400)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    rows = [row(name, kind, days, args.streams, seed=301 + i)
            for i, ((name, kind), days) in enumerate((s, d) for s in STREAMS for d in ("shared", "independent"))]
    text = "\n".join([
        "`benchmarks/drift_day_effect.py`: each simulated stream freezes its own baseline of 30 days x 50 trials",
        "(true rate 0.58) and runs a stable year and, apart, a 10-point drop. The day effect is a stationary",
        "logit AR(1), lag-1 correlation 0.5, sd 0.061 (about 1.5 points on the daily rate), shared by every",
        "trial of a day, in the baseline and the monitored days. Every stream is calibrated twice on the same",
        "days: with the day-level variance its baseline shows (now) and as if days were independent (before).",
        "\"Above 1\": share of streams whose own rate (365 / ARL0 of their threshold under the true daily pmf;",
        "with the day effect that pmf carries its long-run variance, an approximation) exceeds 1 a year.",
        "± is one Monte Carlo SE.",
        "",
        "| stream | days | streams | false alarms / year (now) | above 1 | delay after a 10-point drop: median (mean) "
        "| false alarms / year (before) | above 1 | delay: median (mean) |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Simulated in {time.time() - t0:.0f} s.",
    ])
    print(text)
    if not args.no_write:
        write_section(BENCHMARKS_MD, TITLE, text)


if __name__ == "__main__":
    main()
