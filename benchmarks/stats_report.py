"""Benchmark: the statistics behind one report, on 100,000 trials.

10 configurations x 1,000 tasks x 10 seeds (0.2% infrastructure failures, 1% unknown costs):
``score_table`` + ``compare_all`` (every configuration against the first, paired, exact
sign-flip p, Holm-adjusted). Budget: under 2 s. Prints the timings and writes them to the
"## Statistics report" section of BENCHMARKS.md (other sections are left as they are).

    .venv/bin/python benchmarks/stats_report.py [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import write_section  # noqa: E402

from evalharness.stats import compare_all, score_table
from evalharness.types import TRIAL_COLUMNS

BUDGET_S = 2.0
SECTION = "## Statistics report"
BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def make_trials(configs: int = 10, tasks: int = 1000, seeds: int = 10, seed: int = 0) -> pd.DataFrame:
    """A tidy trials table with task difficulty shared across configurations (so pairing matters)."""
    rng = np.random.default_rng(seed)
    c, t, s = (a.ravel() for a in np.meshgrid(np.arange(configs), np.arange(tasks), np.arange(seeds), indexing="ij"))
    difficulty = rng.beta(1.2, 0.9, tasks)
    shift = np.linspace(-0.08, 0.06, configs)
    resolved = rng.random(c.size) < np.clip(difficulty[t] + shift[c], 0, 1)
    cost = rng.gamma(2.0, 0.05 + 0.02 * c)
    cost[rng.random(c.size) < 0.01] = np.nan
    models, harnesses = np.array([f"model-{i % 5}" for i in range(configs)]), np.array(["mini", "swe"])
    model, harness = models[c], harnesses[c // 5]
    tokens_in = rng.integers(5_000, 200_000, c.size)
    tokens_out = rng.integers(500, 20_000, c.size)
    df = pd.DataFrame({
        "run_id": "bench", "pack": "synthetic", "task_id": np.char.add("task-", t.astype(str)), "model": model,
        "harness": harness, "config": np.char.add(np.char.add(harness, "/"), model), "seed": s,
        "outcome": np.where(resolved, "resolved", "unresolved"), "resolved": resolved,
        "infra": rng.random(c.size) < 0.002, "cost_usd": cost, "input_tokens": tokens_in,
        "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out, "duration_s": rng.gamma(3, 60, c.size),
        "started_at": pd.Timestamp("2025-06-01"), "repo": np.char.add("repo-", (t % 40).astype(str)),
        "flags": [()] * c.size,
    })
    return df[TRIAL_COLUMNS]


def report_statistics(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What a report computes: one row per configuration, then every configuration against the first."""
    return score_table(df), compare_all(df, adjust="holm")


def time_it(df: pd.DataFrame, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        report_statistics(df)
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    df = make_trials()
    first = time_it(df, 1)[0]
    times = time_it(df, args.repeats)
    table, comparisons = report_statistics(df)
    median = statistics.median(times)
    verdict = "within" if median < BUDGET_S else "OVER"
    counts = comparisons["signflip_method"].value_counts()
    methods = ", ".join(f"{how} x{n}" for how, n in counts.items())
    lines = [
        f"`benchmarks/stats_report.py`: score_table + compare_all (paired, exact sign-flip, Holm) on "
        f"{len(df):,} trials ({table.shape[0]} configurations x {df['task_id'].nunique():,} tasks x "
        f"{df['seed'].nunique()} seeds).",
        "",
        "| measure | seconds |", "|---|---|",
        f"| first call (cold caches) | {first:.3f} |",
        f"| median of {args.repeats} | {median:.3f} |",
        f"| best of {args.repeats} | {min(times):.3f} |",
        "",
        f"Budget {BUDGET_S:.0f} s: {verdict}. Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"pandas {pd.__version__}, numpy {np.__version__}. Sign-flip p-values computed by: {methods}; "
        f"{int((comparisons['p_adjusted'] <= 0.05).sum())} of {len(comparisons)} comparisons significant after Holm.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(BENCHMARKS_MD, SECTION.removeprefix("## "), text)
        print(f"\nwrote the '{SECTION}' section of {BENCHMARKS_MD}")
    return 0 if median < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
