"""What an audit concludes: per-task flags, agreement with humans, the broken fraction, the ceiling (pure).

Inputs are the store's rows (``Store.findings``, ``Store.labels``) and, optionally, the trials
DataFrame of stored runs. Rules (``docs/audit.md``):

- **The pipeline flags a task** when any finding with status ``ok`` flags it at severity >=
  ``min_severity`` (default 2: a serious defect). An investigator's seeds are ensembled first, the most
  severe seed winning (OpenAI's rule). Findings that are ``skipped``, ``error`` or ``invalid`` never count
  as "clean": a task none of whose probes ran is ``unaudited``.
- **Human consensus** per task: the latest label of each annotator; broken when a strict majority says
  broken, ties go to broken (the severe side, as for seeds); severity is the median of the annotators'.
- **Agreement**: the pipeline's overall flag vs consensus (raw agreement, Cohen's kappa with interval,
  precision, recall, and the raw agreement of answering "broken" for every task; per probe too),
  among annotators (Cohen's kappa for two, Fleiss' kappa with a bootstrap interval for more, on tasks
  with at least two labels), Krippendorff's alpha (ordinal) of the severities. Below
  ``stats.agreement.MIN_AGREEMENT_N`` tasks a kappa or alpha says "too few labels" instead of a value.
- **Broken fraction**: the flagged share corrected by the pipeline's precision and recall against the
  humans (``stats.prevalence``); the humans' own share when every task is labelled; ``correction`` says
  which was used.
- **Score ceiling**: 1 - the share of tasks broken in a *blocking* family (a correct fix fails or cannot
  be known: validity, overly_strict, underspecified, environment). Too-weak tests and solution leaks make
  a task easier, not impossible; they inflate a score instead (counted in the broken fraction).
- **Clean-subset scores**: each configuration's resolve rate on every task and on the tasks the audit
  did not flag, each with its task-level interval (``stats.score``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np

from evalharness.audit.findings import FAMILIES
from evalharness.stats.agreement import MIN_AGREEMENT_N, agreement_table, cohen_kappa, fleiss, krippendorff_alpha, \
    too_few_note
from evalharness.stats.prevalence import corrected_prevalence, labelled_share

ENSEMBLE_SEED = -1
"""The seed under which the investigator's ensemble of seeds is stored (``audit.verdicts.ENSEMBLE_SEED``)."""
BLOCKING = ("validity", "overly_strict", "underspecified", "environment")
"""Families whose defect keeps a correct fix from being graded resolved (they set the ceiling)."""
MIN_SEVERITY = 2


@dataclass
class TaskFlag:
    task_id: str
    flagged: bool
    severity: int
    families: list[str] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    audited: bool = True
    """False when no probe ran to completion on the task (every finding skipped, error or invalid)."""


def _ensembled(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, probe): an investigator's seeds reduced to the most severe ok seed."""
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_key[(r["task_id"], r["probe"])].append(r)
    out = []
    for group in by_key.values():
        combined = [r for r in group if r["seed"] == ENSEMBLE_SEED]
        if combined:  # the investigator's stored ensemble of its seeds
            out.append(combined[0])
            continue
        ok = [r for r in group if r["status"] == "ok"]
        out.append(max(ok, key=lambda r: (bool(r["flagged"]), r["severity"])) if ok else group[0])
    return out


def task_flags(findings: list[dict[str, Any]], task_ids: Iterable[str], *,
               min_severity: int = MIN_SEVERITY, probes: Iterable[str] | None = None) -> dict[str, TaskFlag]:
    """Per task: flagged or not by the pipeline (or by the named ``probes`` only), with families and reasons."""
    wanted = set(probes) if probes is not None else None
    rows = [r for r in _ensembled(findings) if wanted is None or r["probe"] in wanted]
    out = {t: TaskFlag(t, False, 0, audited=False) for t in task_ids}
    for r in rows:
        flag = out.get(r["task_id"])
        if flag is None:
            continue
        if r["status"] == "ok":
            flag.audited = True
        if r["status"] == "ok" and r["flagged"] and r["severity"] >= min_severity:
            flag.flagged = True
            flag.severity = max(flag.severity, r["severity"])
            flag.families = sorted({*flag.families, r["family"]})
            flag.probes = sorted({*flag.probes, r["probe"]})
            flag.reasons.append(f"{r['probe']}: {r['reason']}")
    return out


@dataclass
class Consensus:
    task_id: str
    broken: bool
    severity: float
    annotators: int
    families: list[str]


def consensus(labels: list[dict[str, Any]]) -> dict[str, Consensus]:
    """The humans' verdict per task from the latest label of each annotator (module doc)."""
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in labels:
        by_task[r["task_id"]].append(r)
    out = {}
    for task, rows in by_task.items():
        broken = sum(bool(r["broken"]) for r in rows)
        families = Counter(r["family"] for r in rows if r["broken"] and r["family"])
        out[task] = Consensus(task, broken * 2 >= len(rows), float(np.median([r["severity"] for r in rows])),
                              len(rows), [f for f, _ in families.most_common()])
    return out


def _kappa_vs_humans(flags: dict[str, TaskFlag], humans: dict[str, Consensus], level: float,
                     family: str | None = None) -> dict[str, Any]:
    """Pipeline (or one probe) against the human consensus; for one probe's ``family``, a task counts as broken
    for the humans when they call it broken in that family (or name none)."""
    tasks = [t for t in humans if t in flags and flags[t].audited]
    if not tasks:
        return {"n": 0, "note": "no task carries both an audit finding and a human label"}

    def broken(c: Consensus) -> bool:
        return c.broken and (family is None or not c.families or family in c.families)

    pipeline = ["flag" if flags[t].flagged else "clean" for t in tasks]
    human = ["flag" if broken(humans[t]) else "clean" for t in tasks]
    table = agreement_table(pipeline, human, ["flag", "clean"])
    summary = cohen_kappa(table, level=level, min_n=MIN_AGREEMENT_N,
                          raters=("the audit's flags", "the human consensus")).to_dict()
    summary["table"] = {"tp": int(table[0, 0]), "fp": int(table[0, 1]), "fn": int(table[1, 0]),
                        "tn": int(table[1, 1])}
    # the raw agreement of a pipeline that calls every task broken is the humans' broken share
    summary["always_broken"] = float(table[:, 0].sum() / len(tasks))
    return summary


def among_humans(labels: list[dict[str, Any]], *, level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> dict[str, Any]:
    """Agreement among annotators on broken/clean (kappa with interval) and on severity (Krippendorff, ordinal)."""
    annotators = sorted({r["annotator"] for r in labels})
    tasks = sorted({r["task_id"] for r in labels})
    if len(annotators) < 2:
        return {"annotators": len(annotators), "note": "agreement among humans needs at least 2 annotators"}
    a_index, t_index = {a: i for i, a in enumerate(annotators)}, {t: i for i, t in enumerate(tasks)}
    broken = np.full((len(annotators), len(tasks)), np.nan)
    severity = np.full_like(broken, np.nan)
    for r in labels:
        broken[a_index[r["annotator"]], t_index[r["task_id"]]] = float(bool(r["broken"]))
        severity[a_index[r["annotator"]], t_index[r["task_id"]]] = float(r["severity"])
    shared = np.isfinite(broken).sum(0) >= 2
    out: dict[str, Any] = {"annotators": len(annotators), "tasks_with_2_or_more": int(shared.sum())}
    if shared.sum() < 2:
        out["note"] = "fewer than 2 tasks carry labels of 2 annotators"
        return out
    if len(annotators) == 2:
        both = np.isfinite(broken).all(0)
        table = agreement_table(broken[0, both].astype(int), broken[1, both].astype(int), [1, 0])
        out["kappa"] = {"method": "cohen", **cohen_kappa(table, level=level, min_n=MIN_AGREEMENT_N,
                                                         raters=(annotators[0], annotators[1])).to_dict()}
    else:
        out["kappa"] = _fleiss_with_interval(broken[:, shared], level, n_boot, seed)
    for key, data, scale in (("severity_alpha", severity, "ordinal"), ("broken_alpha", broken, "nominal")):
        out[key] = krippendorff_alpha(data[:, shared], level=scale, n_boot=n_boot, seed=seed, min_n=MIN_AGREEMENT_N)
    return out


def _fleiss_with_interval(broken: np.ndarray, level: float, n_boot: int, seed: int) -> dict[str, Any]:
    """Fleiss' kappa over tasks (each task's count of broken/clean labels) with a percentile bootstrap over tasks."""
    counts = np.stack([np.nansum(broken, 0), np.isfinite(broken).sum(0) - np.nansum(broken, 0)], axis=1)
    full = counts.sum(1) == counts.sum(1).max()  # Fleiss' kappa needs the same number of ratings per task
    counts = counts[full]
    if len(counts) < MIN_AGREEMENT_N:
        nan = float("nan")
        return {"method": "fleiss", "kappa": nan, "ci_low": nan, "ci_high": nan, "level": level,
                "n": int(len(counts)), "too_few": True, "note": too_few_note(len(counts), MIN_AGREEMENT_N)}
    kappa = fleiss(counts)
    rng = np.random.default_rng(seed)
    boots = [fleiss(counts[rng.integers(0, len(counts), len(counts))]) for _ in range(n_boot)]
    boots = [b for b in boots if np.isfinite(b)]
    lo, hi = (np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if len(boots) >= 10 else (np.nan, np.nan))
    return {"method": "fleiss", "kappa": kappa, "ci_low": float(lo), "ci_high": float(hi), "level": level,
            "n": int(len(counts))}


def broken_fraction(flags: dict[str, TaskFlag], humans: dict[str, Consensus], *, level: float = 0.95,
                    families: Iterable[str] | None = None) -> dict[str, Any]:
    """The share of broken tasks (in ``families``, default any), corrected for the pipeline's measured errors."""
    fams = set(families) if families is not None else set(FAMILIES)
    audited = [t for t, f in flags.items() if f.audited]
    if not audited:
        return {"estimate": float("nan"), "note": "no task was audited", "correction": "none: no task was audited"}

    def pipe(t: str) -> bool:
        return flags[t].flagged and bool(fams & set(flags[t].families))

    def human(t: str) -> bool:
        fam = humans[t].families
        return humans[t].broken and (not fam or bool(fams & set(fam)))

    labelled = [t for t in audited if t in humans]
    if len(labelled) >= len(audited):
        return labelled_share(sum(human(t) for t in labelled), len(labelled), len(audited), level=level).to_dict()
    cells = Counter((pipe(t), human(t)) for t in labelled)
    return corrected_prevalence(sum(pipe(t) for t in audited), len(audited), cells[(True, True)],
                                cells[(True, False)], cells[(False, True)], cells[(False, False)],
                                level=level).to_dict()


def clean_scores(trials, flags: dict[str, TaskFlag], *, level: float = 0.95) -> list[dict[str, Any]]:
    """Each configuration's resolve rate on all tasks and on the unflagged ones (``stats.score``)."""
    from evalharness.stats._frame import config_labels
    from evalharness.stats.score import score

    if trials is None or len(trials) == 0:
        return []
    flagged = {t for t, f in flags.items() if f.flagged}
    rows = []
    for config, df in trials.groupby(config_labels(trials), sort=True):
        raw, clean = score(df, level=level), score(df[~df["task_id"].isin(flagged)], level=level)
        rows.append({"config": config, "raw": _rate(raw), "clean": _rate(clean),
                     "tasks_removed": int(df.loc[df["task_id"].isin(flagged), "task_id"].nunique())})
    return rows


def _rate(s) -> dict[str, Any]:
    return {"rate": s.resolve_rate, "ci_low": s.ci_low, "ci_high": s.ci_high, "n_tasks": s.n_tasks,
            "interval": s.interval}


def audit_results(task_ids: list[str], findings: list[dict[str, Any]], labels: list[dict[str, Any]],
                  trials=None, *, min_severity: int = MIN_SEVERITY, level: float = 0.95) -> dict[str, Any]:
    """Everything an audit report shows (JSON-able)."""
    flags = task_flags(findings, task_ids, min_severity=min_severity)
    humans = {t: c for t, c in consensus(labels).items() if t in flags}
    probes = sorted({r["probe"] for r in findings})
    per_probe = {}
    for p in probes:
        pf = task_flags(findings, task_ids, min_severity=1, probes=[p])
        status = Counter(r["status"] for r in findings if r["probe"] == p and r["seed"] != ENSEMBLE_SEED)
        per_probe[p] = {"flagged": sum(f.flagged for f in pf.values()), "audited": sum(f.audited for f in pf.values()),
                        "status": dict(status),
                        "vs_humans": _kappa_vs_humans(pf, humans, level, _family_of(findings, p))}
    blocking = broken_fraction(flags, humans, level=level, families=BLOCKING)
    return {
        "tasks": len(task_ids), "audited": sum(f.audited for f in flags.values()),
        "flagged": sum(f.flagged for f in flags.values()), "min_severity": min_severity,
        "by_family": dict(Counter(fam for f in flags.values() for fam in f.families)),
        "per_task": {t: asdict(f) for t, f in flags.items()},
        "per_probe": per_probe,
        "labels": {"labels": len(labels), "tasks": len(humans), "annotators": len({r["annotator"] for r in labels}),
                   "broken": sum(c.broken for c in humans.values())},
        "pipeline_vs_humans": _kappa_vs_humans(flags, humans, level),
        "overall_rule": f"broken when any probe flags the task at severity >= {min_severity}",
        "min_agreement_n": MIN_AGREEMENT_N,
        "no_environment": no_environment(findings),
        "among_humans": among_humans(labels, level=level),
        "broken_fraction": broken_fraction(flags, humans, level=level),
        "blocking_fraction": blocking,
        "ceiling": _ceiling(blocking),
        "clean_scores": clean_scores(trials, flags, level=level),
    }


def no_environment(findings: list[dict[str, Any]]) -> dict[str, str]:
    """Tasks whose probes that need an environment were skipped because the task has none, with the reason."""
    return {r["task_id"]: r["evidence"]["no_environment"] for r in findings
            if r["status"] == "skipped" and (r.get("evidence") or {}).get("no_environment")}


def _family_of(findings: list[dict[str, Any]], probe: str) -> str | None:
    """The one family a probe looks for (None for the investigator, which names any)."""
    families = {r["family"] for r in findings if r["probe"] == probe}
    return families.pop() if len(families) == 1 and probe != "investigator" else None


def _ceiling(blocking: dict[str, Any]) -> dict[str, Any]:
    est = blocking.get("estimate", float("nan"))
    return {"estimate": 1 - est, "ci_low": 1 - blocking.get("ci_high", float("nan")),
            "ci_high": 1 - blocking.get("ci_low", float("nan")), "method": blocking.get("method", ""),
            "families": list(BLOCKING)}
