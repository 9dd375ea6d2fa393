"""Flagged trials per configuration: tampered, test-touching, config-touching, ... (``evalharness.types.Flag``).

A flag is evidence a trial carries next to its outcome. Counts are over the trials that count
(infrastructure failures and task errors are left out, as in the resolve rate) and are kept even when zero, so a
reader can tell "checked, none" from "not checked".
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from evalharness.stats._frame import config_labels, infra_mask, task_error_mask
from evalharness.types import OUTCOME_FLAGS, Flag

FLAG_NAMES = [f.value for f in Flag]
"""Every known flag, in the order reports show them."""


def _as_set(value: Any) -> frozenset[str]:
    if value is None or (isinstance(value, float) and value != value):
        return frozenset()
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return frozenset(str(getattr(v, "value", v)) for v in value)


def trial_flags(df: pd.DataFrame) -> pd.Series:
    """Per trial, the set of its flags: column ``flags`` (a list, or JSON text of one; absent means none),
    plus the outcome where the outcome is itself a flag (``tampered``, ``patch_rejected``, ``patch_too_large``)."""
    flags = df["flags"].map(_as_set) if "flags" in df.columns else pd.Series([frozenset()] * len(df), index=df.index)
    if "outcome" in df.columns:
        implied = df["outcome"].astype(str).map(lambda o: frozenset({o}) & OUTCOME_FLAGS)
        flags = pd.Series([a | b for a, b in zip(flags, implied)], index=df.index, dtype=object)
    return flags


def counted_mask(df: pd.DataFrame) -> pd.Series:
    """True for the trials flags are counted over: those the resolve rate counts (no infrastructure
    failure, no task error)."""
    return ~infra_mask(df) & ~task_error_mask(df)


def flag_counts(df: pd.DataFrame, *, by: str = "config") -> pd.DataFrame:
    """One row per configuration (sorted): ``n_trials`` (trials that count), ``n_flagged`` (trials with any
    flag), then one column per flag: every flag of ``FLAG_NAMES``, zeros included, then any other flag seen.

    Configurations whose trials all failed for infrastructure reasons (or task errors) get a row of zeros.
    """
    labels = config_labels(df) if by == "config" else df[by].astype(str)
    counted = counted_mask(df)
    flags = trial_flags(df)
    seen = sorted(set().union(*flags[counted]) - set(FLAG_NAMES)) if counted.any() else []
    columns = {"n_trials": counted, "n_flagged": counted & flags.map(bool)}
    columns |= {name: counted & flags.map(lambda s, n=name: n in s) for name in FLAG_NAMES + seen}
    table = pd.DataFrame(columns, index=df.index).astype(int).groupby(labels.rename(by), sort=True).sum()
    return table.reset_index()
