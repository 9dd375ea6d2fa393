"""Benchmark: drift alarms with an estimated baseline, simulated at full size.

Every stream freezes its own baseline (30 days x 50 trials), calibrates its threshold, then runs a
stable year (false alarms per stream-year, CUSUM restarted after each alarm; always-valid p <= 0.05
at any day of the year) and, separately, a 10-point drop of every rate (days to the first alarm).
The plug-in rule (the threshold computed as if the baseline were exact) runs on the same days.
tests/stats/test_drift_calibration.py runs the same simulation smaller. Writes the "## Drift alarms
with an estimated baseline" section of BENCHMARKS.md.

    .venv/bin/python benchmarks/drift_alarms.py [--streams 4000] [--panel-streams 2000] [--no-write]
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

TITLE = "Drift alarms with an estimated baseline"
BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def panels() -> dict[str, np.ndarray]:
    """Fixed panels of 50 tasks with mean rate 0.58: equal tasks, uniform rates, U-shaped Beta rates."""
    rng = np.random.default_rng(5)
    out = {"equal tasks (all 0.58)": np.full(50, 0.58)}
    for name, r in (("uniform rates (0.16-1.0)", rng.uniform(0.16, 1.0, 50)),
                    ("U-shaped rates (Beta 0.87, 0.63)", rng.beta(0.87, 0.63, 50))):
        out[name] = np.clip(r + 0.58 - r.mean(), 0.0, 1.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=4000)
    ap.add_argument("--panel-streams", type=int, default=2000)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows, t0 = [], time.time()
    sims = [("fresh tasks every day (binomial)", simulate("binomial", streams=args.streams, seed=101))]
    for i, (name, rates) in enumerate(panels().items()):
        sims.append((f"fixed panel, {name}", simulate("panel", rates=rates, streams=args.panel_streams, seed=201 + i)))
        print(sims[-1], file=sys.stderr)
    for name, s in sims:
        rows.append(f"| {name} | {s.streams} | {s.false_alarms_per_year:.3f} ± {s.false_alarms_se:.3f} | "
                    f"{s.promised_false_alarms_per_year:.3f} | {s.plugin_false_alarms_per_year:.3f} ± "
                    f"{s.plugin_false_alarms_se:.3f} | {100 * s.p_below_alpha:.1f}% ± {100 * s.p_below_alpha_se:.1f} | "
                    f"{s.delay_median:g} ({s.delay_mean:.2f}) | {s.plugin_delay_median:g} |")
    text = "\n".join([
        "`benchmarks/drift_alarms.py`: each simulated stream freezes its own baseline of 30 days x 50 trials",
        "(true rate 0.58), calibrates its CUSUM threshold for at most 1 false alarm per stream-year",
        "(docs/statistics.md, section 4), and runs one stable year (365 days, the CUSUM restarted after",
        "each alarm) and, apart, a 10-point drop of every rate. \"Plug-in\" is the former rule: the",
        "threshold computed as if the baseline estimate were exact, on the same simulated days.",
        "± is one Monte Carlo standard error.",
        "",
        "| stream | streams | false alarms / year | promised | plug-in false alarms / year | always-valid p <= 0.05 in a stable year | days to alarm after a 10-point drop: median (mean) | plug-in median |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Simulated in {time.time() - t0:.0f} s. The one-sample p-value at the estimated rate (the former",
        "`p_always_valid`) fell below 0.05 in 38% of stable years with fresh tasks and 33% with a panel",
        "(2,000 streams each); the two-sample mixture SPRT that replaced it is in the table.",
    ])
    print(text)
    if not args.no_write:
        write_section(BENCHMARKS_MD, TITLE, text)


if __name__ == "__main__":
    main()
