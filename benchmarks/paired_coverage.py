"""Benchmark: small-n coverage of the paired difference interval of ``compare``, with known truth.

Grid: n = 2..10 shared tasks x per-task true rates (p_A, p_B), every task alike and the two sides
independent within a task, from A/A cells to extreme differences (0.95 vs 0.05, 0.99 vs 0.01) x one and
three seeds per task and side. The estimand is E[s_A - s_B] = p_A - p_B.

- One seed: the data are trinomial in (A only, B only, rest), so the coverage is EXACT, summed over every
  outcome (no Monte Carlo error); the former Jeffreys interval is computed beside the interval in use.
  Also exact: the lowest coverage over every (p10, p01) on a 0.01 grid of the whole simplex, per n.
- Three seeds: ``replicates`` simulated comparisons per cell (Monte Carlo SE at most 0.5/sqrt(replicates)).

Writes the "## Paired difference interval: small-n coverage" section of BENCHMARKS.md; docs/statistics.md
(section 2) quotes it. tests/stats/test_stats_range_coverage.py checks the one-seed grid exactly.

    .venv/bin/python benchmarks/paired_coverage.py [--replicates 10000] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import write_section  # noqa: E402

from evalharness.stats.intervals import paired_jeffreys_interval
from evalharness.stats.paired import difference_interval

TITLE = "Paired difference interval: small-n coverage"
BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
N_TASKS = tuple(range(2, 11))
PAIRS = ((0.5, 0.5), (0.9, 0.9), (0.05, 0.05), (0.6, 0.4), (0.8, 0.5), (0.7, 0.3), (0.9, 0.1), (0.95, 0.05),
         (0.99, 0.01), (0.05, 0.95))


@lru_cache(maxsize=None)
def binary_interval(b: int, c: int, n: int, method: str = "compare") -> tuple[float, float]:
    """The interval ``compare`` gives for b tasks resolved by A only and c by B only (one seed), or Jeffreys'."""
    if method == "jeffreys":
        return paired_jeffreys_interval(b, c, n)
    a = np.r_[np.ones(b), np.zeros(c), np.zeros(n - b - c)]
    bb = np.r_[np.zeros(b), np.ones(c), np.zeros(n - b - c)]
    lo, hi, _ = difference_interval(a, bb, np.ones(n), np.ones(n))
    return lo, hi


def _outcomes(n: int) -> tuple[np.ndarray, np.ndarray]:
    b, c = np.array([(b, c) for b in range(n + 1) for c in range(n - b + 1)]).T
    return b, c


def exact_coverage(p10, p01, n: int, method: str = "compare") -> np.ndarray:
    """Exact coverage of p10 - p01 (arrays) with one binary seed per task: a sum over all (b, c) outcomes."""
    p10, p01 = np.atleast_1d(np.asarray(p10, float)), np.atleast_1d(np.asarray(p01, float))
    b, c = _outcomes(n)
    rest = n - b - c
    bounds = np.array([binary_interval(int(x), int(y), n, method) for x, y in zip(b, c)])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = (special.gammaln(n + 1) - special.gammaln(b + 1) - special.gammaln(c + 1) - special.gammaln(rest + 1)
                 + special.xlogy(b, p10[:, None]) + special.xlogy(c, p01[:, None])
                 + special.xlogy(rest, np.maximum(1 - p10 - p01, 0.0)[:, None]))
    prob = np.exp(log_p)
    truth = (p10 - p01)[:, None]
    covered = (bounds[None, :, 0] - 1e-12 <= truth) & (truth <= bounds[None, :, 1] + 1e-12)
    return (prob * covered).sum(axis=1)


def one_seed(p_a: float, p_b: float, n: int, method: str = "compare") -> float:
    return float(exact_coverage(p_a * (1 - p_b), (1 - p_a) * p_b, n, method)[0])


def simplex_minimum(n: int, step: float = 0.01) -> tuple[float, float, float]:
    """Lowest exact one-seed coverage over every (p10, p01) with p10 + p01 <= 1 on a grid, and where."""
    g = np.arange(0.0, 1.0 + step / 2, step)
    p10, p01 = (x.ravel() for x in np.meshgrid(g, g, indexing="ij"))
    keep = p10 + p01 <= 1 + 1e-9
    cov = exact_coverage(p10[keep], p01[keep], n)
    i = int(cov.argmin())
    return float(cov[i]), float(p10[keep][i]), float(p01[keep][i])


def three_seeds(p_a: float, p_b: float, n: int, replicates: int, rng: np.random.Generator, seeds: int = 3) -> float:
    """Monte Carlo coverage of p_A - p_B with ``seeds`` binary trials per task and side."""
    a = rng.binomial(seeds, p_a, (replicates, n)) / seeds
    b = rng.binomial(seeds, p_b, (replicates, n)) / seeds
    k = np.full(n, seeds)
    truth, covered, memo = p_a - p_b, 0, {}
    for i in range(replicates):
        key = (tuple(np.sort(a[i] - b[i])), round(float(np.sum(a[i] * (1 - b[i]))), 9),
               round(float(np.sum((1 - a[i]) * b[i])), 9))
        if key not in memo:
            memo[key] = difference_interval(a[i], b[i], k, k)[:2]
        lo, hi = memo[key]
        covered += lo - 1e-12 <= truth <= hi + 1e-12
    return covered / replicates


def grid(replicates: int, seed: int = 2026) -> dict[tuple[str, float, float, int], float]:
    """Coverage per (method, p_A, p_B, n): "one seed" and "jeffreys" exact, "three seeds" simulated."""
    rng = np.random.default_rng(seed)
    out = {}
    for p_a, p_b in PAIRS:
        for n in N_TASKS:
            out[("one seed", p_a, p_b, n)] = one_seed(p_a, p_b, n)
            out[("jeffreys", p_a, p_b, n)] = one_seed(p_a, p_b, n, "jeffreys")
            out[("three seeds", p_a, p_b, n)] = three_seeds(p_a, p_b, n, replicates, rng)
    return out


def _table(cov: dict, method: str) -> list[str]:
    head = "| p_A / p_B | " + " | ".join(f"n = {n}" for n in N_TASKS) + " |"
    lines = [head, "|---" * (len(N_TASKS) + 1) + "|"]
    for p_a, p_b in PAIRS:
        cells = " | ".join(f"{100 * cov[(method, p_a, p_b, n)]:.1f}" for n in N_TASKS)
        lines.append(f"| {p_a:g} / {p_b:g} | {cells} |")
    for name, f in (("mean", np.mean), ("lowest", np.min)):
        cells = " | ".join(f"{100 * f([cov[(method, a, b, n)] for a, b in PAIRS]):.1f}" for n in N_TASKS)
        lines.append(f"| **{name}** | {cells} |")
    return lines


def render(cov: dict, simplex: dict[int, tuple[float, float, float]], replicates: int, seconds: float) -> str:
    mc = 100 * 0.5 / np.sqrt(replicates)
    worst = min(cov[k] for k in cov if k[0] == "jeffreys")
    lines = [
        "`benchmarks/paired_coverage.py`: coverage (%) of `compare`'s 95% interval of A - B with known truth. Every",
        "task has true rates p_A and p_B, the sides independent within a task; the estimand is p_A - p_B.",
        "",
        "**One seed per task and side** (`bonett-price`): exact, summed over every outcome.", "",
        *_table(cov, "one seed"), "",
        f"The former Jeffreys interval on the same grid (exact): mean "
        f"{100 * np.mean([v for k, v in cov.items() if k[0] == 'jeffreys']):.1f}%, lowest {100 * worst:.1f}%; at "
        "0.95 / 0.05: " + ", ".join(f"n = {n} {100 * cov[('jeffreys', 0.95, 0.05, n)]:.1f}%" for n in N_TASKS) + ".",
        "",
        "Lowest exact one-seed coverage over the whole simplex of (p10, p01) (0.01 grid, any population of tasks):",
        "", "| n | " + " | ".join(str(n) for n in simplex) + " |", "|---" * (len(simplex) + 1) + "|",
        "| lowest | " + " | ".join(f"{100 * v[0]:.1f}" for v in simplex.values()) + " |",
        "| at (p10, p01) | " + " | ".join(f"({v[1]:.2f}, {v[2]:.2f})" for v in simplex.values()) + " |",
        "",
        f"**Three seeds per task and side** (clipped `t`, `bonett-price (equal differences)` when every difference "
        f"is equal): {replicates:,} simulated comparisons per cell, Monte Carlo SE at most {mc:.2f} points.", "",
        *_table(cov, "three seeds"), "",
        f"Computed in {seconds:.0f} s.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=10_000)
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md as it is")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    cov = grid(args.replicates)
    simplex = {n: simplex_minimum(n) for n in N_TASKS}
    text = render(cov, simplex, args.replicates, time.perf_counter() - start)
    print(text)
    if not args.no_write:
        write_section(BENCHMARKS_MD, TITLE, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
