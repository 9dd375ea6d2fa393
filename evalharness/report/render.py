"""Render a built report as a terminal table, JSON, Markdown or HTML (the HTML page: ``report/html.py``)."""

from __future__ import annotations

import io
import json
from typing import Any

from evalharness.report.build import infra_line
from evalharness.report.cutoff import CUTOFF_NOTE, cutoff_table
from evalharness.report.fmt import money as _money
from evalharness.report.fmt import pct as _pct
from evalharness.report.flags import flagged_rows, flags_cell
from evalharness.report.merge import MERGE_NOTE, merge_cell, merge_notes, merge_rows
from evalharness.report.suspicious import finding_rows, markdown_code, suspicious_findings, unread
from evalharness.report.rewards import NOTE as REWARD_NOTE, reward_comparison_rows, reward_rows
from evalharness.report.task_errors import task_error_rows

FORMATS = ("table", "json", "md", "html")
FLAGS_NOTE = ("Flags: evidence a trial carries (tampered, touched_tests, touched_config, ...); "
              "the JSON report has every count.")


def score_rows(report: dict[str, Any]) -> list[list[str]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "tasks", "trials", "infra", "resolve rate", f"{level}% interval", "cost/trial",
             "cost/resolved", "tokens/trial", "flags"]]
    reviewed = bool(report.get("merge"))
    if reviewed:
        rows[0][8:8] = ["merge rate"]
    for s in report["scores"]:
        row = [s["config"], str(s["n_tasks"]), str(s["n_trials"]), str(s["n_infra"]), _pct(s["resolve_rate"]),
               f"[{_pct(s['ci_low'])}, {_pct(s['ci_high'])}] ({s.get('interval') or '-'})",
               _money(s.get("mean_cost_usd")), _money(s.get("cost_per_resolved")),
               "n/a" if s.get("mean_tokens") is None else f"{s['mean_tokens']:.0f}",
               flags_cell(report, s["config"])]
        if reviewed:
            row[8:8] = [merge_cell(report, s["config"])]
        rows.append(row)
    return rows


def score_notes(report: dict[str, Any]) -> list[str]:
    """Why a number is NaN or which interval was used, one line per configuration that has a note."""
    return [f"{s['config']}: {s['note']}" for s in report["scores"] if s.get("note")]


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2, default=str)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "html":
        from evalharness.report.html import render_html

        return render_html(report)
    if fmt == "table":
        return render_text(report)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def markdown_table(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return "\n".join(lines)


def render_markdown(report: dict[str, Any]) -> str:
    runs = ", ".join(f"`{r['run_id']}` ({r['pack']}, {r['status']})" for r in report["runs"])
    pt = report["per_task"]
    parts = [f"# evalharness report\n\nRuns: {runs}. Trials: {report['n_trials']}, "
             f"infrastructure failures (left out of rates): {infra_line(report)}.\n",
             "## Resolve rate per configuration\n", markdown_table(score_rows(report)),
             "".join(f"\n- {line}" for line in score_notes(report)),
             "".join(f"\n> **warning**, {line}" for line in report["flag_warnings"]),
             *reward_markdown(report),
             *(["\n## Merge acceptance (human review)\n", markdown_table(merge_rows(report)),
                "".join(f"\n- {line}" for line in merge_notes(report)), f"\n{MERGE_NOTE}\n"]
               if report.get("merge") else []),
             *(["\n## Task errors (broken tasks or verifiers, left out of the rates)\n",
                markdown_table(task_error_rows(report))]
               if report.get("task_errors") else []),
             "\nIntervals treat seeds as repeated measures of a task (task-level, not trial-level). "
             f"{FLAGS_NOTE}\n",
             *(["## Paired comparisons (Holm-adjusted)\n", markdown_table(comparison_rows(report)), ""]
               if report["comparisons"] else []),
             *(["## Before and after each model's training cutoff\n", markdown_table(cutoff_table(report)),
                f"\n{CUTOFF_NOTE}\n"] if report.get("cutoff_split") else []),
             *[part for title, rows in audit_tables(report) for part in (f"## {title}\n", markdown_table(rows), "")],
             "## Solved seeds per task\n", markdown_table([[pt["index"], *pt["columns"]], *pt["rows"]]),
             "\n## Outcomes\n", markdown_table(_outcome_rows(report)),
             *(["\n## Flagged trials\n", markdown_table(flagged_rows(report))] if report["flagged_trials"] else []),
             *suspicious_markdown(report)]
    return "\n".join(parts) + "\n"


def reward_markdown(report: dict[str, Any]) -> list[str]:
    """The mean-reward section in Markdown (nothing for packs with binary rewards only)."""
    if not report.get("rewards"):
        return []
    parts = ["\n## Mean reward per configuration (continuous rewards)\n", markdown_table(reward_rows(report))]
    if report["rewards"]["comparisons"]:
        parts += ["\n### Mean reward against the reference (paired)\n", markdown_table(reward_comparison_rows(report))]
    return parts + [f"\n{REWARD_NOTE}\n"]


SUSPICIOUS_TITLE = "Suspicious code: added lines to read before the number is used"


def suspicious_notes(report: dict[str, Any]) -> list[str]:
    """A line naming the flagged trials whose lines could not be read from their folders."""
    missing = unread(report)
    if not missing:
        return []
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [f"no quoted patch line for {len(missing)} trial(s) flagged suspicious_code: the flag came from what the "
            f"run's guard noted (the trial's evidence), or the trial folder is missing: {', '.join(missing[:3])}{more}"]


def suspicious_markdown(report: dict[str, Any]) -> list[str]:
    """The suspicious-code section: the trial, path:line, why, and the added line as code."""
    if not suspicious_findings(report) and not unread(report):
        return []
    head, *body = finding_rows(report)
    body = [row if not row[1] else [*row[:3], markdown_code(row[3])] for row in body]
    return [f"\n## {SUSPICIOUS_TITLE}\n", *([markdown_table([head, *body])] if body else []),
            "".join(f"\n- {line}" for line in suspicious_notes(report))]


def _outcome_rows(report: dict[str, Any]) -> list[list[str]]:
    kinds = sorted({k for counts in report["outcomes"].values() for k in counts})
    rows = [["configuration", *kinds]]
    rows += [[cfg, *[str(counts.get(k, 0)) for k in kinds]] for cfg, counts in report["outcomes"].items()]
    return rows


def text_table(rows: list[list[str]], title: str = "") -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(record=True, width=160, file=io.StringIO())
    head, *body = rows
    table = Table(title=title or None)
    for column in head:
        table.add_column(column, overflow="fold")
    for row in body:
        table.add_row(*[escape(c) for c in row])
    console.print(table)
    return console.export_text()


def render_text(report: dict[str, Any]) -> str:
    pt = report["per_task"]
    parts = [text_table(score_rows(report), f"Resolve rate per configuration ({report['n_trials']} trials, "
                                           f"infrastructure failures left out: {infra_line(report)})")]
    parts += [f"  note, {line}\n" for line in score_notes(report)]
    parts += [f"  WARNING, {line}\n" for line in report["flag_warnings"]]
    if report.get("rewards"):
        parts.append(text_table(reward_rows(report), "Mean reward per configuration (continuous rewards)"))
        if report["rewards"]["comparisons"]:
            parts.append(text_table(reward_comparison_rows(report), "Mean reward against the reference (paired)"))
        parts.append(f"  {REWARD_NOTE}\n")
    if report.get("merge"):
        parts.append(text_table(merge_rows(report), "Merge acceptance (human review)"))
        parts += [f"  note, {line}\n" for line in merge_notes(report)] + [f"  {MERGE_NOTE}\n"]
    if report.get("task_errors"):
        parts.append(text_table(task_error_rows(report), "Task errors: broken tasks or verifiers, left out of the rates (fix the pack)"))
    if report["comparisons"]:
        parts.append(text_table(comparison_rows(report), "Paired comparisons against the reference (Holm-adjusted)"))
    if report.get("cutoff_split"):
        parts.append(text_table(cutoff_table(report), "Before and after each model's training cutoff"))
        parts.append(f"  {CUTOFF_NOTE}\n")
    parts += [text_table(rows, title) for title, rows in audit_tables(report)]
    parts.append(text_table([[pt["index"], *pt["columns"]], *pt["rows"]], "Solved seeds per task"))
    if report["flagged_trials"]:
        parts.append(text_table(flagged_rows(report), "Flagged trials (open one with: evalharness show TRIAL)"))
    if suspicious_findings(report):
        parts.append(text_table(finding_rows(report), SUSPICIOUS_TITLE))
    parts += [f"  note, {line}\n" for line in suspicious_notes(report)]
    return "".join(parts)


def comparison_rows(report: dict[str, Any]) -> list[list[str]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "reference", "shared tasks", "difference", f"{level}% interval", "p (paired t)",
             "p (sign-flip)", "p (Holm)"]]
    for c in report["comparisons"]:
        diff = "n/a" if c["diff"] is None else f"{100 * c['diff']:+.1f} pts"
        interval = ("n/a" if c["ci_low"] is None else
                    f"[{100 * c['ci_low']:+.1f}, {100 * c['ci_high']:+.1f}]"
                    + (f" ({c['interval']})" if c.get("interval") else ""))
        rows.append([c["config"], c["reference"], str(c["n_shared"]), diff, interval,
                     *[("n/a" if c[k] is None else f"{c[k]:.4f}") for k in ("p_t", "p_signflip", "p_adjusted")]])
    return rows


def audit_tables(report: dict[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """The audit section (``report["audit"]``, set when the runs' pack was audited): headline and clean scores."""
    audit = report.get("audit")
    if not audit:
        return []
    from evalharness.report.audit import clean_rows, headline_rows

    tables = [(f"Audit of {audit['pack']} (evalharness audit report for the evidence)", headline_rows(audit))]
    if audit["clean_scores"]:
        tables.append(("Resolve rate on every task and on the tasks the audit did not flag", clean_rows(audit)))
    return tables
