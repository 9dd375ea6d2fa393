"""Flags in reports: counts per configuration, the flagged trials, and a warning for every tampered one.

The report's JSON always holds every count (zeros too); the tables show one compact ``flags`` cell
per configuration and list the flagged trials, so a reader can open each with `evalharness show`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalharness.stats.flags import counted_mask, flag_counts, trial_flags
from evalharness.types import Flag

LISTED = 50
"""Flagged trials listed in table, Markdown and HTML reports (the JSON lists all)."""


def flag_summary(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per configuration: trials that count, trials with any flag, and the count of each flag."""
    out = {}
    for row in flag_counts(df).to_dict(orient="records"):
        config = str(row.pop("config"))
        out[config] = {"n_trials": int(row.pop("n_trials")), "n_flagged": int(row.pop("n_flagged")),
                       "counts": {str(k): int(v) for k, v in row.items()}}
    return out


def flagged_trials(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Every flagged trial that counts (infrastructure failures and task errors left out): its folder,
    configuration, outcome and flags, in trial order."""
    if not len(df):
        return []
    flags = trial_flags(df)
    keep = flags.map(bool) & counted_mask(df)
    out = []
    for index in df.index[keep]:
        row = df.loc[index]
        trial = next((str(row[c]) for c in ("detail", "trial_id") if c in df.columns and str(row[c] or "")),
                     f"{row['task_id']}/{row.get('config', '')}/seed-{row.get('seed', '?')}")
        out.append({"trial": trial, "config": str(row.get("config", "")), "outcome": str(row.get("outcome", "")),
                    "flags": sorted(flags[index])})
    return sorted(out, key=lambda t: t["trial"])


WARNED = {Flag.TAMPERED.value: "tampered: counted as not resolved",
          Flag.SUSPICIOUS_CODE.value: ("add suspicious code (test runner internals, frames, gc, /proc, ...): read "
                                       "the quoted lines before the number is used")}
"""The flags that warn, and what each warning says of its trials."""


def flag_warnings(report: dict[str, Any]) -> list[str]:
    """One line per configuration and warning flag (tampered, suspicious_code): how many, what it means, where
    to look."""
    lines = []
    for config, entry in report["flags"].items():
        for flag, meaning in WARNED.items():
            n = entry["counts"].get(flag, 0)
            if not n:
                continue
            where = [t["trial"] for t in report["flagged_trials"] if t["config"] == config and flag in t["flags"]]
            see = f"see `evalharness show {where[0]}`" if where else "see the flagged trials"
            if n > 1:
                see += f" and {n - 1} more under flagged trials"
            lines.append(f"{config}: {n} of {entry['n_trials']} trials {meaning}; {see}")
    return lines


def counts_text(counts: dict[str, int]) -> str:
    """The non-zero flag counts, e.g. 'tampered 2, touched_tests 5', or 'none'."""
    return ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "none"


def flags_cell(report: dict[str, Any], config: str) -> str:
    """The flags cell of one configuration in the score table."""
    return counts_text(report["flags"].get(config, {}).get("counts", {}))


def flagged_rows(report: dict[str, Any], limit: int = LISTED) -> list[list[str]]:
    """Header plus the first ``limit`` flagged trials; a last row says how many more the JSON lists."""
    listed = report["flagged_trials"]
    rows = [["trial", "configuration", "outcome", "flags"]]
    rows += [[t["trial"], t["config"], t["outcome"], ", ".join(t["flags"])] for t in listed[:limit]]
    if len(listed) > limit:
        rows.append([f"... and {len(listed) - limit} more (--format json lists all)", "", "", ""])
    return rows
