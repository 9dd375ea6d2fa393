"""Paired A/B comparison and planning tables for the CLI (`evalharness compare`, `evalharness plan`)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalharness.errors import UserError
from evalharness.report.flags import counts_text, flag_summary
from evalharness.stats import compare, plan_table


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


def comparison_rows(df: pd.DataFrame, a: str | None, b: str | None, level: float = 0.95) -> list[list[str]]:
    side_a, side_b = split_configs(df, a, b)
    c = compare(side_a, side_b, level=level)
    pct = int(round(level * 100))
    rows = [["quantity", "value"],
            ["A", c.config_a], ["B", c.config_b],
            ["shared tasks", str(c.n_shared)],
            ["dropped tasks", ", ".join(f"{k} ({v})" for k, v in c.dropped.items()) or "none"],
            ["resolve rate A", _num(c.rate_a, "{:.1%}")], ["resolve rate B", _num(c.rate_b, "{:.1%}")],
            ["difference A - B", _num(c.diff, "{:+.1%}")],
            [f"{pct}% interval (paired t)", f"[{_num(c.ci_low, '{:+.1%}')}, {_num(c.ci_high, '{:+.1%}')}]"],
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
    rows += _flag_rows({"A": side_a, "B": side_b})
    if c.note:
        rows.append(["note", c.note])
    return rows


def _flag_rows(sides: dict[str, pd.DataFrame]) -> list[list[str]]:
    """Flag counts of each side ('none' when it has none) and a warning row per side with tampered trials."""
    rows, warnings = [], []
    for name, side in sides.items():
        for config, entry in flag_summary(side).items():
            rows.append([f"flags {name}", counts_text(entry["counts"])])
            if entry["counts"].get("tampered"):
                warnings.append(["WARNING", f"{name} ({config}): {entry['counts']['tampered']} of {entry['n_trials']} "
                                 "trials tampered: counted as not resolved; `evalharness report` lists them"])
    return rows + warnings


def plan_rows(df: pd.DataFrame, a: str | None, b: str | None, delta: float) -> tuple[list[list[str]], str]:
    side_a, side_b = split_configs(df, a, b) if df["config"].nunique() > 1 else (df, df)
    table = plan_table(pd.concat([side_a, side_b]).drop_duplicates(), delta=delta,
                       a=side_a["config"].iloc[0], b=side_b["config"].iloc[0])
    rows = [[str(c) for c in table.columns]]
    rows += [[_num(v, "{:.4g}") if isinstance(v, float) else str(v) for v in row] for row in table.values.tolist()]
    return rows, str(table.attrs.get("note", ""))
