"""Paired A/B comparison and planning tables for the CLI (`evalharness compare`, `evalharness plan`).

The comparison names its interval method (a small run gets an interval that stays in [-1, 1]) and the metric
(the grader's resolve rate, or the reviewers' merge rate); the plan prints whole numbers of tasks, rounded up,
and no number from a pilot without variance."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalharness.errors import UserError
from evalharness.report.flags import counts_text, flag_summary
from evalharness.report.rewards import reward_ab_rows
from evalharness.stats import compare
from evalharness.types import Flag


METRICS = {"resolved": "resolve rate", "merged": "merge rate"}
INTERVALS = {"t": "paired t"}
"""How the statistics' interval method names read in the table."""


def _num(x: Any, fmt: str = "{:.4f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return fmt.format(x)


def split_configs(df: pd.DataFrame, a: str | None, b: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trials of configurations A and B ("harness/model" labels); default: the only two there are."""
    configs = sorted(df["config"].unique())
    if a is None and b is None:
        if len(configs) != 2:
            raise UserError(f"give --a and --b: the runs hold {len(configs)} configurations",
                            f"configurations: {', '.join(configs) or '(none)'}")
        a, b = configs
    for label in (a, b):
        if label not in configs:
            raise UserError(f"no configuration {label!r} in these runs", f"configurations: {', '.join(configs)}")
    return df[df["config"] == a], df[df["config"] == b]


def flag_rows(sides: dict[str, pd.DataFrame]) -> list[list[str]]:
    """Flag counts of each side ('none' when it has none) and a warning row per side with tampered trials, and one
    per side with suspicious code."""
    rows, warnings = [], []
    for name, side in sides.items():
        for config, entry in flag_summary(side).items():
            rows.append([f"flags {name}", counts_text(entry["counts"])])
            if entry["counts"].get("tampered"):
                warnings.append(["WARNING", f"{name} ({config}): {entry['counts']['tampered']} of {entry['n_trials']} "
                                 "trials tampered: counted as not resolved; `evalharness report` lists them"])
            if entry["counts"].get(Flag.SUSPICIOUS_CODE.value):
                warnings.append(["WARNING", f"{name} ({config}): {entry['counts'][Flag.SUSPICIOUS_CODE.value]} of "
                                 f"{entry['n_trials']} trials add suspicious code: read the lines `evalharness "
                                 "report` quotes before using this comparison"])
    return rows + warnings


def comparison_rows(side_a, side_b, metric: str = "resolved", level: float = 0.95) -> list[list[str]]:
    """The `compare` table of A against B on ``metric`` ("resolved": the grader; "merged": the reviewers)."""
    if metric == "merged" and not (side_a["merged"].notna().any() and side_b["merged"].notna().any()):
        empty = [s["config"].iloc[0] for s in (side_a, side_b) if not s["merged"].notna().any()]
        raise UserError(f"no reviewed trial of {' or '.join(empty)}: nothing to compare on merges",
                        "review its trials with: evalharness review serve RUN_ID")
    c = compare(side_a, side_b, level=level, value=metric)
    pct, rate = int(round(level * 100)), METRICS[metric]
    rows = [["quantity", "value"], ["metric", f"{metric} ({rate})"],
            ["A", c.config_a], ["B", c.config_b],
            ["shared tasks", str(c.n_shared)],
            ["dropped tasks", ", ".join(f"{k} ({v})" for k, v in c.dropped.items()) or "none"],
            [f"{rate} A", _num(c.rate_a, "{:.1%}")], [f"{rate} B", _num(c.rate_b, "{:.1%}")],
            ["difference A - B", _num(c.diff, "{:+.1%}")],
            [f"{pct}% interval ({INTERVALS.get(c.interval, c.interval)})",
             f"[{_num(c.ci_low, '{:+.1%}')}, {_num(c.ci_high, '{:+.1%}')}]"],
            ["paired SE", _num(c.se)], ["p (paired t)", _num(c.p_t)],
            [f"p (sign-flip, {c.signflip_method})", _num(c.p_signflip)]]
    if c.mcnemar_b is not None:
        rows.append([f"p (exact McNemar, {c.mcnemar_b} vs {c.mcnemar_c} discordant)", _num(c.p_mcnemar)])
    if c.unpaired_method:
        rows.append([f"p (unpaired, {c.unpaired_method})", _num(c.p_unpaired)])
    rows += [["P(A > B), Beta posteriors", _num(c.p_a_better, "{:.3f}")],
             ["cost per resolved A", _num(c.cost_per_resolved_a, "${:.4f}")],
             ["cost per resolved B", _num(c.cost_per_resolved_b, "${:.4f}")],
             ["infrastructure failures A / B", f"{c.n_infra_a} / {c.n_infra_b}"]]
    rows += reward_ab_rows(side_a, side_b, level) if metric == "resolved" else []
    rows += flag_rows({"A": side_a, "B": side_b})
    if c.note:
        rows.append(["note", c.note])
    return rows


def plan_rows(table) -> tuple[list[list[str]], str]:
    """The `plan` table as text: whole tasks and trials (rounded up, thousands separated); no number from a
    pilot without variance (its planned noise is 0, which would read as "no tasks needed")."""
    finite = [x for x in table["tasks_needed"] if math.isfinite(x)]
    no_variance = bool(finite) and all(x == 0 for x in finite)
    rows = [["seeds", "tasks needed", "trials per config", "MDE at pilot n", "SE of difference", "SE of score"]]
    for r in table.to_dict("records"):
        if no_variance and r["tasks_needed"] == 0:
            rows.append([str(r["seeds"]), "n/a (pilot has no variance)", "n/a", "n/a", "n/a", "n/a"])
            continue
        tasks = _whole(r["tasks_needed"])
        trials = _whole(math.ceil(r["tasks_needed"]) * r["seeds"]) if math.isfinite(r["tasks_needed"]) else tasks
        rows.append([str(r["seeds"]), tasks, trials, _num(r["mde_at_n"]), _num(r["se_diff_at_n"]),
                     _num(r["se_score_at_n"])])
    return rows, str(table.attrs.get("note", ""))


def _whole(x: float) -> str:
    """A count rounded up, with thousands separators; n/a when not a finite number."""
    return f"{math.ceil(x):,}" if isinstance(x, (int, float)) and math.isfinite(x) else "n/a"
