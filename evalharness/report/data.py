"""Load stored trials as the tidy DataFrame the statistics layer consumes."""

from __future__ import annotations

import pandas as pd

from evalharness.store import Store
from evalharness.types import TRIAL_COLUMNS


def trials_frame(store: Store, run_ids: list[str]) -> pd.DataFrame:
    """One row per trial of the given runs, columns ``TRIAL_COLUMNS`` (``flags``: a sorted tuple per trial) plus
    ``reason``, ``attempts``, ``detail`` (the trial folder under the runs folder), ``reward`` and ``rewards`` (a Harbor
    verifier's, else empty) and the rest of the row."""
    for run_id in run_ids:
        store.get_run(run_id)  # a clear error for an unknown id
    rows = store.trial_rows(run_ids)
    frame = pd.DataFrame(rows, columns=[
        "run_id", "trial_id", "pack", "task_id", "harness", "model", "seed", "outcome", "resolved", "infra",
        "reason", "attempts", "cost_usd", "input_tokens", "output_tokens", "cached_tokens", "calls",
        "duration_s", "started_at", "finished_at", "repo", "detail", "flags", "reward", "rewards"])
    frame["config"] = frame["harness"] + "/" + frame["model"]
    frame["total_tokens"] = frame["input_tokens"] + frame["output_tokens"]
    frame["cost_usd"] = pd.to_numeric(frame["cost_usd"], errors="coerce")
    frame["resolved"] = frame["resolved"].astype(bool)
    frame["infra"] = frame["infra"].astype(bool)
    frame["flags"] = [tuple(sorted(f or ())) for f in frame["flags"]]  # hashable: the frame can be deduplicated
    extra = [c for c in frame.columns if c not in TRIAL_COLUMNS]
    return frame[TRIAL_COLUMNS + extra]


REVIEW_COLUMNS = ["pack", "task_id", "arm", "run_id", "trial_id", "reviewer", "verdict", "reasons", "seconds",
                  "reviewed_at"]


def reviews_frame(store: Store, run_ids: list[str]) -> pd.DataFrame:
    """The latest merge review per (reviewer, item) of the runs' trials and of their packs' gold patches, one row
    each, columns ``REVIEW_COLUMNS`` (``reasons``: a tuple of reason codes, ``evalharness.review.codes``)."""
    rows = store.reviews(list(run_ids))
    frame = pd.DataFrame(rows, columns=REVIEW_COLUMNS) if rows else pd.DataFrame(columns=REVIEW_COLUMNS)
    frame["reasons"] = [tuple(r or ()) for r in frame["reasons"]]
    frame["seconds"] = pd.to_numeric(frame["seconds"], errors="coerce")
    return frame[REVIEW_COLUMNS]
