"""Builders of tidy trials DataFrames (columns of evalharness.types.TRIAL_COLUMNS) for the stats tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalharness.types import TRIAL_COLUMNS

TOY_A = [4, 4, 3, 4, 2, 0, 4, 1, 3, 4, 0, 2, 4, 3, 0, 4, 1, 4, 2, 3]
TOY_B = [4, 3, 2, 4, 1, 0, 3, 0, 3, 2, 0, 1, 4, 2, 0, 3, 1, 4, 1, 2]


def trials_from_counts(counts, seeds: int, *, model: str = "m", harness: str = "h", cost=0.1,
                       repo=None, start="2025-01-01") -> pd.DataFrame:
    """One row per trial: task i resolved in its first counts[i] of ``seeds`` seeds."""
    counts = np.asarray(counts)
    t, s = np.meshgrid(np.arange(counts.size), np.arange(seeds), indexing="ij")
    t, s = t.ravel(), s.ravel()
    resolved = s < counts[t]
    n = t.size
    df = pd.DataFrame({
        "run_id": "run-1", "pack": "toy", "task_id": [f"task-{i:03d}" for i in t], "model": model,
        "harness": harness, "config": f"{harness}/{model}", "seed": s,
        "outcome": np.where(resolved, "resolved", "unresolved"),
        "resolved": resolved, "infra": False, "cost_usd": np.full(n, cost, dtype=float),
        "input_tokens": 1000, "output_tokens": 200, "total_tokens": 1200, "duration_s": 60.0,
        "started_at": pd.Timestamp(start), "repo": [f"repo-{i % 5}" for i in t] if repo is None else repo,
        "flags": [()] * n,
    })
    return df[TRIAL_COLUMNS]


def trials_from_matrix(y: np.ndarray, *, model: str = "m", harness: str = "h") -> pd.DataFrame:
    """Trials from a tasks x seeds 0/1 matrix."""
    y = np.asarray(y)
    t, s = np.meshgrid(np.arange(y.shape[0]), np.arange(y.shape[1]), indexing="ij")
    return pd.DataFrame({
        "task_id": [f"task-{i:03d}" for i in t.ravel()], "model": model, "harness": harness,
        "config": f"{harness}/{model}", "seed": s.ravel(), "resolved": y.ravel().astype(bool), "infra": False,
        "cost_usd": 0.1, "total_tokens": 1000, "repo": "",
    })


@pytest.fixture
def make_trials():
    """Factory: trials_from_counts(counts, seeds, model=..., harness=..., cost=..., repo=...)."""
    return trials_from_counts


@pytest.fixture
def make_matrix():
    """Factory: trials_from_matrix(tasks x seeds 0/1 array, model=..., harness=...)."""
    return trials_from_matrix


@pytest.fixture
def toy_a() -> pd.DataFrame:
    return trials_from_counts(TOY_A, 4, model="a")


@pytest.fixture
def toy_b() -> pd.DataFrame:
    return trials_from_counts(TOY_B, 4, model="b")
