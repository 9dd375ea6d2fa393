"""The audit report: text, Markdown, JSON and a self-contained HTML page (``evalharness audit report``)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from jinja2 import Environment, PackageLoader

from evalharness.report.fmt import pct as _pct
from evalharness.report.render import markdown_table, text_table


def _num(x: Any, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _interval(d: dict[str, Any], key: str = "estimate") -> str:
    return f"{_pct(d.get(key))} [{_pct(d.get('ci_low'))}, {_pct(d.get('ci_high'))}]"


def _kappa(vs: dict[str, Any], key: str = "kappa") -> str:
    """A kappa (or alpha) with its interval, or why there is none."""
    if vs.get("too_few") or vs.get("degenerate"):
        return vs.get("note", "too few labels")
    if not vs.get("n", vs.get("n_items", 0)):
        return "no labels"
    return f"{_num(vs.get(key))} [{_num(vs.get('ci_low'))}, {_num(vs.get('ci_high'))}]"


def _correction(bf: dict[str, Any]) -> str:
    """Which correction the broken fraction used, and its caveat (the uncorrected share's note says it again)."""
    note = bf.get("note", "") if bf.get("method") != "flag-share" else ""
    return f"correction: {bf.get('correction') or bf.get('method', '')}" + (f"; {note}" if note else "")


def headline_rows(r: dict[str, Any]) -> list[list[str]]:
    bf, bl, ceiling = r["broken_fraction"], r["blocking_fraction"], r["ceiling"]
    rows = [["what", "value", "how"],
            ["tasks audited", f"{r['audited']}/{r['tasks']}", "at least one probe ran to completion"],
            ["flagged by the pipeline", str(r["flagged"]), f"a probe flags at severity >= {r['min_severity']}"],
            ["broken fraction", _interval(bf), _correction(bf)],
            ["blocking defects", _interval(bl), "validity, overly strict, underspecified, environment"],
            ["score ceiling", _interval(ceiling), "1 - blocking fraction: the best score a correct solver can get"]]
    missing = r.get("no_environment") or {}
    if missing:
        reasons = sorted(set(missing.values()))
        rows.append(["tasks without an environment", str(len(missing)),
                     "probes that need one skipped them: " + " | ".join(reasons)[:300]])
    hum = r["labels"]
    rows.append(["human labels", f"{hum['labels']} labels, {hum['tasks']} tasks, {hum['annotators']} annotators",
                 f"{hum['broken']} tasks broken by consensus"])
    return rows


def probe_rows(r: dict[str, Any]) -> list[list[str]]:
    """One row per probe (a flag at any severity), then the pipeline's overall flag, each against the humans."""
    rows = [["probe", "flagged", "audited", "status", "agreement", "kappa vs humans [95%]", "precision", "recall",
             "always broken", "n labelled"]]
    for name, p in r["per_probe"].items():
        rows.append(_vs_row(name, p["flagged"], p["audited"],
                            ", ".join(f"{k} {v}" for k, v in sorted(p["status"].items())), p["vs_humans"]))
    rows.append(_vs_row(f"overall flag (any probe, severity >= {r['min_severity']})", r["flagged"], r["audited"],
                        f"of {r['tasks']} tasks", r["pipeline_vs_humans"]))
    return rows


def _vs_row(name: str, flagged: int, audited: int, status: str, vs: dict[str, Any]) -> list[str]:
    """``always broken``: the raw agreement of calling every labelled task broken (the bar to beat)."""
    labelled = bool(vs.get("n"))
    return [name, str(flagged), str(audited), status, _pct(vs.get("raw_agreement")) if labelled else "",
            _kappa(vs), _pct(vs.get("precision")), _pct(vs.get("recall")),
            _pct(vs.get("always_broken")) if labelled else "", str(vs.get("n", 0))]


def agreement_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = [["agreement", "value [95%]", "n", "note"]]
    vs = r["pipeline_vs_humans"]
    rows.append(["pipeline's overall flag vs human consensus (Cohen's kappa)", _kappa(vs), str(vs.get("n", 0)),
                 "" if vs.get("too_few") or vs.get("degenerate") else vs.get("note", "")])
    hum = r["among_humans"]
    k = hum.get("kappa") or {}
    rows.append([f"among annotators ({k.get('method', 'Cohen or Fleiss').capitalize()}'s kappa)",
                 _kappa(k) if k else "n/a", str(hum.get("tasks_with_2_or_more", 0)), hum.get("note", "")])
    alpha = hum.get("severity_alpha") or {}
    rows.append(["among annotators, severity (Krippendorff's alpha, ordinal)",
                 _kappa(alpha, "alpha") if alpha else "n/a", str(alpha.get("n_items", 0)), ""])
    return rows


def clean_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = [["configuration", "all tasks [95%]", "clean tasks [95%]", "tasks removed"]]
    for c in r["clean_scores"]:
        rows.append([c["config"], _interval(c["raw"], "rate"), _interval(c["clean"], "rate"), str(c["tasks_removed"])])
    return rows


def flagged_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = [["task", "severity", "families", "reasons"]]
    for t, f in sorted(r["per_task"].items()):
        if f["flagged"]:
            rows.append([t, str(f["severity"]), ", ".join(f["families"]), " | ".join(f["reasons"])[:300]])
    return rows


def render_audit(r: dict[str, Any], fmt: str, *, findings: list[dict[str, Any]] | None = None) -> str:
    """``r`` is ``audit.results.audit_results``'s output (with ``pack``)."""
    sections = [("Audit of " + str(r.get("pack", "")), headline_rows(r)), ("Probes", probe_rows(r)),
                ("Agreement", agreement_rows(r))]
    if r["clean_scores"]:
        sections.append(("Scores on every task and on the tasks the audit did not flag", clean_rows(r)))
    if r["flagged"]:
        sections.append(("Flagged tasks", flagged_rows(r)))
    if fmt == "json":
        return json.dumps(r, indent=1, default=str)
    if fmt == "md":
        return "\n".join(f"## {title}\n\n{markdown_table(rows)}\n" for title, rows in sections)
    if fmt == "table":
        return "".join(text_table(rows, title) for title, rows in sections)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings or []:
        by_task[f["task_id"]].append({**f, "evidence_json": json.dumps(f["evidence"], indent=1, default=str)[:20000]})
    env = Environment(loader=PackageLoader("evalharness.report", "templates"), autoescape=True)
    return env.get_template("audit.html.j2").render(r=r, sections=sections, by_task=dict(sorted(by_task.items())),
                                                    per_task=r["per_task"])


def audit_section(store, pack_names: list[str], df) -> dict[str, Any] | None:
    """The audit of the runs' pack, for ``evalharness report``: None when the pack was never audited."""
    from evalharness.audit.results import audit_results

    for pack in pack_names:
        findings = store.findings(pack)
        if findings:
            tasks = sorted({r["task_id"] for r in findings} | set(df["task_id"]))
            out = audit_results(tasks, findings, store.labels(pack), df)
            out["pack"] = pack
            return out
    return None
