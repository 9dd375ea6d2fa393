"""Merge acceptance in the table, Markdown and HTML reports: per reviewed configuration the merge rate with its
interval, the reviewers' golden baseline, the normalised ratio, and the trials the grader resolved that the
reviewers did not merge, with their reasons (``report["merge"]``, rows of ``stats.merge.merge_table``)."""

from __future__ import annotations

from typing import Any

from evalharness.report.fmt import pct as _pct
from evalharness.review.codes import REASONS

MERGE_NOTE = ("Merge rate: share of reviewed trials whose reviewers would merge the patch as it is (task-level "
              "mean and interval); gold: the same reviewers on the tasks' reference patches, blinded; normalised: "
              "merge rate / gold rate (log interval); gap: grader's resolve rate minus merge rate on the same "
              "trials.")


def _interval(low: Any, high: Any, method: Any = None, fmt=_pct) -> str:
    if low is None or high is None:
        return "n/a"
    return f"[{fmt(low)}, {fmt(high)}]" + (f" ({method})" if method else "")


def _ratio(x: Any) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _points(x: Any) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f} pts"


def reasons_text(reasons: dict[str, int] | None) -> str:
    """'code quality 3, tests missing or wrong 1', most first; 'none' without reasons."""
    items = sorted((reasons or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{REASONS.get(code, code)} {n}" for code, n in items if n) or "none"


def merge_of(report: dict[str, Any], config: str) -> dict[str, Any] | None:
    """The merge row of ``config``, None when nobody reviewed its trials."""
    return next((m for m in report.get("merge") or [] if m.get("config") == config), None)


def merge_cell(report: dict[str, Any], config: str) -> str:
    """The score table's merge cell: '45.0% [30.1%, 60.2%]', or 'not reviewed'."""
    m = merge_of(report, config)
    if m is None:
        return "not reviewed"
    return f"{_pct(m.get('merge_rate'))} {_interval(m.get('ci_low'), m.get('ci_high'))}"


def merge_rows(report: dict[str, Any]) -> list[list[str]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "reviewed trials (tasks, reviews)", f"merge rate ({level}% interval)",
             "merge or after changes", f"gold baseline ({level}%)", f"normalised ({level}%)",
             "resolve rate, same trials", f"gap ({level}%)", "resolved but not merged (reasons)"]]
    for m in report.get("merge") or []:
        rows.append([
            str(m.get("config")),
            f"{m.get('n_reviewed_trials', 0)} ({m.get('n_reviewed_tasks', 0)}, {m.get('n_reviews', 0)})",
            f"{_pct(m.get('merge_rate'))} {_interval(m.get('ci_low'), m.get('ci_high'), m.get('interval'))}",
            _pct(m.get("merge_or_changes_rate")),
            f"{_pct(m.get('gold_rate'))} "
            f"{_interval(m.get('gold_ci_low'), m.get('gold_ci_high'), m.get('gold_interval'))}"
            f" ({m.get('gold_n_tasks', 0)} tasks, {m.get('gold_n_reviews', 0)} reviews)",
            f"{_ratio(m.get('normalised'))} "
            f"{_interval(m.get('norm_ci_low'), m.get('norm_ci_high'), m.get('norm_method'), _ratio)}",
            _pct(m.get("resolve_rate_reviewed")),
            f"{_points(m.get('gap'))} "
            f"{_interval(m.get('gap_ci_low'), m.get('gap_ci_high'), m.get('gap_interval'), _points)}",
            f"{m.get('resolved_rejected', 0)} ({reasons_text(m.get('rejected_reasons'))})",
        ])
    return rows


def merge_notes(report: dict[str, Any]) -> list[str]:
    return [f"{m['config']}: {m['note']}" for m in report.get("merge") or [] if m.get("note")]
