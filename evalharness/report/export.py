"""The trial table as a file (``report --format csv|parquet``): one row per trial, the columns the statistics use.

Flags become one ``;``-joined text cell, times ISO 8601 text in CSV and timestamps in parquet, and ``merged`` (the
share of the trial's reviewers who would merge it; empty when nobody reviewed it) is there when reviews are. The
columns are those of ``docs/statistics.md``: every number of a report can be recomputed from this table.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalharness.errors import UserError

COLUMNS = ["run_id", "trial_id", "pack", "task_id", "repo", "harness", "model", "config", "seed", "outcome",
           "resolved", "infra", "reason", "attempts", "cost_usd", "input_tokens", "output_tokens", "cached_tokens",
           "total_tokens", "calls", "duration_s", "started_at", "finished_at", "flags", "detail"]
TABLE_FORMATS = ("csv", "parquet")


def trial_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The export's rows: ``COLUMNS`` in order (plus ``merged`` when the frame has it, and a Harbor verifier's
    ``reward`` and ``rewards`` when a trial has one), sorted by run and trial."""
    columns = COLUMNS + [c for c in ("merged",) if c in frame.columns]
    columns += [c for c in ("reward", "rewards") if c in frame.columns and frame[c].notna().any()]
    table = frame.reindex(columns=columns).copy()
    table["flags"] = [";".join(f) for f in frame["flags"]] if len(frame) else pd.Series(dtype=str)
    return table.sort_values(["run_id", "trial_id"], kind="stable").reset_index(drop=True)


def write_table(frame: pd.DataFrame, fmt: str, output: Path | None) -> str | None:
    """CSV text (for stdout when ``output`` is None) or a written file; parquet needs ``output`` (it is binary)."""
    table = trial_table(frame)
    if fmt == "csv":
        text = table.to_csv(index=False, date_format="%Y-%m-%dT%H:%M:%S.%f%z")
        if output is None:
            return text
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        return None
    if fmt == "parquet":
        if output is None:
            raise UserError("parquet is binary: name the file with --output/-o", "e.g. -o trials.parquet")
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_parquet(output, index=False)
        return None
    raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
