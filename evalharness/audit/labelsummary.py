"""What the labelling page shows of a task's findings (pure): flagged findings first, each in one line.

An annotator reads many tasks; the pipeline's findings are worth a glance, not a read, unless one flags a
defect. ``page_findings`` joins the probes' findings and the investigator's verdicts of one task into one list,
ordered flagged first (highest severity first), then the clean ones, then those with no answer (skipped, error,
invalid), and gives each a ``title`` (the probe; the investigator's seed, or its ensemble) and a ``summary``: one
line of at most ``SUMMARY_MAX`` characters saying what the finding concludes and why. The page shows the
summary and folds the full reason and the raw evidence away. ``headline`` is the line above the list.
"""

from __future__ import annotations

from typing import Any

from evalharness.audit.labels import INVESTIGATOR
from evalharness.audit.verdicts import ENSEMBLE_SEED

SUMMARY_MAX = 180
"""Characters of a summary line; a longer one is cut at a word and ends with an ellipsis."""
_NO_ANSWER = ("skipped", "error", "invalid")


def page_findings(evidence: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings of one task (``QueueItem.evidence`` + ``QueueItem.verdicts``) in the page's order, each with
    ``title`` and ``summary`` added (the rows themselves are not changed)."""
    rows = [{**row, "title": title(row), "summary": summary(row)} for row in [*evidence, *verdicts]]
    return sorted(rows, key=_rank)


def _rank(row: dict[str, Any]) -> tuple:
    answered = row.get("status", "ok") not in _NO_ANSWER
    group = 0 if answered and row.get("flagged") else 1 if answered else 2
    return group, -int(row.get("severity") or 0), str(row.get("probe", "")), int(row.get("seed") or 0)


def title(row: dict[str, Any]) -> str:
    """The probe's name; for the investigator, which seed (or ``all seeds`` for the ensemble)."""
    probe = str(row.get("probe", ""))
    if probe != INVESTIGATOR:
        return probe
    seed = row.get("seed")
    return f"{INVESTIGATOR}, all seeds" if seed == ENSEMBLE_SEED else f"{INVESTIGATOR}, seed {seed}"


def summary(row: dict[str, Any]) -> str:
    """One line: ``flags FAMILY, severity N: REASON`` / ``no defect: REASON`` / ``STATUS: REASON``, where REASON
    is the first non-blank line of the finding's reason, whitespace collapsed, the whole cut to SUMMARY_MAX."""
    status = row.get("status", "ok")
    if status in _NO_ANSWER:
        head = str(status)
    elif row.get("flagged"):
        head = f"flags {str(row.get('family') or 'a defect').replace('_', ' ')}, severity {row.get('severity')}"
    else:
        head = "no defect"
    reason = _first_line(str(row.get("reason") or ""))
    return _cut(f"{head}: {reason}" if reason else head, SUMMARY_MAX)


def headline(findings: list[dict[str, Any]]) -> str:
    """The line above a task's findings: how many flag a defect and the highest severity among them."""
    if not findings:
        return "no findings"
    flagged = [f for f in findings if f.get("flagged") and f.get("status", "ok") not in _NO_ANSWER]
    if not flagged:
        return f"none of {len(findings)} findings flags a defect"
    worst = max(int(f.get("severity") or 0) for f in flagged)
    return f"{len(flagged)} of {len(findings)} findings flag a defect (highest severity {worst})"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"
