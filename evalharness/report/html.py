"""The HTML report: one self-contained file (inline CSS, script and SVG; nothing fetched at view time) in which every
number links down to its trials.

Decisions:
- The summary (tables, plots, heatmap) is HTML the server writes; the trials are data. ``report["trials"]`` is
  embedded as one JSON index, and each trial's details (patch, test output, result, trajectory, log; truncated,
  ``trials.LIMITS_NOTE``) in gzip+base64 chunks of ``CHUNK`` trials, decoded by the browser's DecompressionStream
  only when a trial is opened. A 10,000-trial run is therefore a page of a few dozen DOM tables, not 10,000
  sections (benchmarks/report_size.py measures it).
- Views are URL hashes, so the back button works and a link can be shared: ``#trials/config/C``,
  ``#trials/cell/C/TASK``, ``#pair/I`` (paired tasks of comparison I), ``#trial/I`` (trial I of the index).
- Everything from the run is text: Jinja autoescapes the summary, the script sets ``textContent`` only, and the
  embedded JSON has ``<``, ``>`` and ``&`` escaped so no ``</script>`` or ``<!--`` in a patch can end its block.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader

from evalharness.report import plots
from evalharness.report.build import infra_line
from evalharness.report.cutoff import CUTOFF_NOTE, cutoff_table
from evalharness.report.fmt import money as _money
from evalharness.report.fmt import pct as _pct
from evalharness.report.flags import LISTED as FLAGS_LISTED
from evalharness.report.flags import flags_cell
from evalharness.report.merge import MERGE_NOTE, merge_cell, merge_notes, merge_rows
from evalharness.report.suspicious import finding_rows
from evalharness.report.rewards import NOTE as REWARD_NOTE, reward_comparison_rows, reward_rows
from evalharness.report.task_errors import task_error_rows
from evalharness.report.trials import LIMITS_NOTE, trial_details

CHUNK = 50
"""Trials per compressed chunk: opening a trial decodes only its chunk."""
GZIP_LEVEL = 5
"""4% larger than level 6 and 1.7x faster to build (measured on benchmarks/report_size.py's trials)."""
TEMPLATES = Path(__file__).parent / "templates"


def safe_json(value: Any) -> str:
    """JSON that cannot end or comment out the <script> element it sits in."""
    text = json.dumps(value, separators=(",", ":"), default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def headline_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The headline table; a cell is text or (text, href)."""
    level = int(round(report["level"] * 100))
    reviewed = bool(report.get("merge"))
    rows = [["configuration", "resolve rate", f"{level}% interval", "method", "cost/trial", "cost/resolved",
             *(["merge rate"] if reviewed else []), "tasks", "trials", "infra", "flags"]]
    for s in report["scores"]:
        rows.append([s["config"], (_pct(s.get("resolve_rate")), plots.config_href(s["config"])),
                     f"[{_pct(s.get('ci_low'))}, {_pct(s.get('ci_high'))}]", s.get("interval") or "-",
                     _money(s.get("mean_cost_usd")), _money(s.get("cost_per_resolved")),
                     *([merge_cell(report, s["config"])] if reviewed else []),
                     str(s["n_tasks"]), (str(s["n_trials"]), plots.config_href(s["config"])), str(s["n_infra"]),
                     flags_cell(report, s["config"])])
    return rows


def comparison_rows(report: dict[str, Any]) -> list[list[Any]]:
    level = int(round(report["level"] * 100))
    rows = [["configuration", "reference", "shared tasks", "difference", f"{level}% interval", "method",
             "p (paired t)", "p (sign-flip)", "p (Holm)"]]
    for i, c in enumerate(report["comparisons"]):
        diff = "n/a" if c.get("diff") is None else f"{100 * c['diff']:+.1f} pts"
        interval = ("n/a" if c.get("ci_low") is None else f"[{100 * c['ci_low']:+.1f}, {100 * c['ci_high']:+.1f}]")
        rows.append([c["config"], c["reference"], (str(c["n_shared"]), f"#pair/{i}"), (diff, f"#pair/{i}"),
                     interval, c.get("interval") or "-",
                     *[("n/a" if c.get(k) is None else f"{c[k]:.4f}") for k in ("p_t", "p_signflip", "p_adjusted")]])
    return rows


def _cell(text: str) -> list[int] | None:
    if not text or "/" not in text:
        return None
    k, n = text.split("/", 1)
    return [int(k), int(n)]


def heat_data(report: dict[str, Any]) -> dict[str, Any]:
    """Tasks, configurations and per cell [solved seeds, usable seeds] (None: no usable trial)."""
    pt = report["per_task"]
    return {"configs": pt["columns"], "tasks": [row[0] for row in pt["rows"]],
            "cells": [[_cell(c) for c in row[1:]] for row in pt["rows"]]}


def heat_rows(heat: dict[str, Any]) -> list[dict[str, Any]]:
    """Per task its cells: text, href, background shade (k/n), for the template."""
    rows = []
    for task, cells in zip(heat["tasks"], heat["cells"]):
        out = []
        for config, cell in zip(heat["configs"], cells):
            href = f"#trials/cell/{quote(config, safe='')}/{quote(task, safe='')}"
            if cell is None:
                out.append({"text": "–", "href": href, "shade": None})
            else:
                out.append({"text": f"{cell[0]}/{cell[1]}", "href": href,
                            "shade": round(cell[0] / cell[1], 3) if cell[1] else None})
        rows.append({"task": task, "cells": out})
    return rows


def outcome_rows(report: dict[str, Any]) -> list[list[Any]]:
    kinds = sorted({k for counts in report["outcomes"].values() for k in counts})
    rows = [["configuration", *kinds]]
    rows += [[cfg, *[str(counts.get(k, 0)) for k in kinds]] for cfg, counts in report["outcomes"].items()]
    return rows


def flagged_rows(report: dict[str, Any], where: dict[str, int]) -> list[list[Any]]:
    rows = [["trial", "configuration", "outcome", "flags"]]
    listed = report["flagged_trials"]
    for t in listed[:FLAGS_LISTED]:
        i = where.get(t["trial"])
        rows.append([(t["trial"], f"#trial/{i}") if i is not None else t["trial"], t["config"], t["outcome"],
                     ", ".join(t["flags"])])
    if len(listed) > FLAGS_LISTED:
        rows.append([f"... and {len(listed) - FLAGS_LISTED} more (--format json lists all)", "", "", ""])
    return rows


def suspicious_rows(report: dict[str, Any], where: dict[str, int]) -> list[list[Any]] | None:
    """The suspicious-code table (``suspicious.finding_rows``), each trial linked to its view; None when empty."""
    rows = finding_rows(report)
    if len(rows) == 1:
        return None
    return [rows[0]] + [[(row[0], f"#trial/{where[row[0]]}") if row[0] in where else row[0], *row[1:]]
                        for row in rows[1:]]


def chunks(report: dict[str, Any]) -> list[str]:
    """Each chunk of CHUNK trials' details as gzip+base64 JSON, in index order."""
    runs_dir = Path(report.get("runs_dir") or ".")
    trials = report.get("trials") or []
    out = []
    for start in range(0, len(trials), CHUNK):
        details = [trial_details(runs_dir, t.get("detail")) for t in trials[start:start + CHUNK]]
        raw = json.dumps(details, separators=(",", ":"), default=str).encode()
        out.append(base64.b64encode(gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)).decode("ascii"))
    return out


def page_index(report: dict[str, Any], heat: dict[str, Any]) -> dict[str, Any]:
    """What the script needs at load: the trial index (columns + rows), the heatmap cells, the comparisons."""
    trials = report.get("trials") or []
    fields = ["run_id", "trial_id", "task_id", "config", "seed", "outcome", "resolved", "infra", "reason",
              "cost_usd", "flags", "detail", "merged"]
    return {"fields": fields, "trials": [[t.get(f) for f in fields] for t in trials], "chunk": CHUNK,
            "heat": heat, "comparisons": [{"config": c["config"], "reference": c["reference"],
                                           "diff": c.get("diff"), "ci_low": c.get("ci_low"),
                                           "ci_high": c.get("ci_high")} for c in report["comparisons"]],
            "limits": LIMITS_NOTE}


def drift_rows(report: dict[str, Any]) -> list[list[Any]]:
    rows = [["run", "stream", "day", "trials", "resolved"]]
    for d in report.get("drift") or []:
        rows.append([d["run_id"], d["stream"], d["day"], str(d["n_trials"]), str(d["n_resolved"])])
    return rows


def render_html(report: dict[str, Any]) -> str:
    from evalharness.report.render import audit_tables, score_notes, suspicious_notes

    env = Environment(loader=PackageLoader("evalharness.report", "templates"), autoescape=True)
    heat = heat_data(report)
    where = {t.get("detail"): i for i, t in enumerate(report.get("trials") or [])}
    level = report["level"]
    return env.get_template("report.html.j2").render(
        report=report, css=(TEMPLATES / "report.css").read_text(), script=(TEMPLATES / "report.js").read_text(),
        headline=headline_rows(report), notes=score_notes(report), warnings=report["flag_warnings"],
        forest=plots.forest_plot(report["scores"], level),
        differences=plots.difference_plot(report["comparisons"], level) if report["comparisons"] else None,
        comparisons=comparison_rows(report) if report["comparisons"] else None,
        cost=plots.cost_plot(report["scores"], level),
        merge_plot=plots.merge_plot(report["merge"], level) if report.get("merge") else None,
        merge=merge_rows(report) if report.get("merge") else None, merge_notes=merge_notes(report),
        merge_note=MERGE_NOTE, heat_configs=heat["configs"], heat=heat_rows(heat),
        task_errors=task_error_rows(report) if report.get("task_errors") else None,
        rewards=reward_rows(report) if report.get("rewards") else None, reward_note=REWARD_NOTE,
        reward_comparisons=reward_comparison_rows(report) if (report.get("rewards") or {}).get("comparisons") else None,
        cutoff=cutoff_table(report) if report.get("cutoff_split") else None, cutoff_note=CUTOFF_NOTE,
        audit=audit_tables(report), drift=drift_rows(report) if report.get("drift") else None,
        outcomes=outcome_rows(report), infra=infra_line(report),
        flagged=flagged_rows(report, where) if report["flagged_trials"] else None,
        suspicious=suspicious_rows(report, where), suspicious_notes=suspicious_notes(report),
        index_json=safe_json(page_index(report, heat)), chunks=chunks(report), limits=LIMITS_NOTE)
