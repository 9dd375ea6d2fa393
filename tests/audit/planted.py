"""The planted-defect pack: a small library (``planted_library``) in a git repository, 24 tasks on it with known
defects or none (``planted_tasks``), and five stored "models" as SWE-bench predictions files, built in a folder.

``build(root)`` writes ``root/shelf`` (the repository: one base commit holding every task's bug and a test
suite that passes), ``root/pack`` (a ``git`` source pack on the bookworm base, pytest pinned as the quickstart
pack pins it; gold patches and test patches made by git from the edits) and ``root/predictions/*.jsonl``.
The truth table says, per task, the planted family (or ``clean``), the families it also belongs to, and what
was planted. Scoring a probe against it: ``score``.
"""

from __future__ import annotations

import ast
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from planted_library import FILES
from planted_tasks import TASKS, Planted

PIP = ["pytest==8.3.5", "pluggy==1.7.0", "iniconfig==2.3.1", "packaging==26.4"]
MANIFEST = """name: planted
version: 1
description: Defects planted in tasks on a small library (tests/audit/planted.py), with clean tasks beside them.
environment:
  base: bookworm
  source: {{kind: git, url: ../shelf, ref: {ref}}}
  pip: {pip}
  setup: []
  workdir: /testbed
tasks: tasks.jsonl
test_command: python -m pytest -rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={{junit_xml}} {{test_files}}
log_parser: junit
timeouts: {{agent_s: 120, tests_s: 60, build_s: 900, exec_s: 60}}
"""


def _configs(i: int, t: Planted) -> dict[str, str]:
    """What each stored model submits for task ``i``: gold, wrong, partial or empty. No model solves the
    universal-failure tasks; some solve the rest (``alpha`` every one of them)."""
    hard = t.family == "universal_failure"
    weak = "partial" if t.partial else "wrong" if t.wrong else "empty"
    return {"alpha": "wrong" if hard else "gold",
            "beta": weak if hard or t.partial or (t.wrong and i % 2 == 0) else "gold",
            "gamma": weak if hard or i % 3 else "gold",
            "delta": "empty",
            "epsilon": ("partial" if t.partial else "empty") if hard or i % 2 == 0 else "gold"}


@dataclass
class PlantedPack:
    root: Path
    repo: Path
    pack: Path
    base: str
    truth: dict[str, dict]
    predictions: dict[str, Path]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True, env={"HOME": str(repo), "PATH": "/usr/bin:/bin",
                                                               "GIT_CONFIG_NOSYSTEM": "1"}).stdout


def _diff(repo: Path, edits: list[tuple[str, str, str]], new_files: dict[str, str] = {}) -> str:
    """The patch git makes of ``edits`` (each old text must occur once) and new files, the tree then restored."""
    for path, old, new in edits:
        text = (repo / path).read_text()
        if text.count(old) != 1:
            raise ValueError(f"{path}: {old!r} occurs {text.count(old)} times")
        (repo / path).write_text(text.replace(old, new))
    for path, text in new_files.items():
        (repo / path).write_text(text)
    git(repo, "add", "-N", *new_files) if new_files else None
    patch = git(repo, "diff")
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-fdq")
    return patch


def test_file(t: Planted) -> str:
    return f"tests/test_{t.id.replace('-', '_')}.py"


def _tests_of(path: str, text: str) -> list[str]:
    return [f"{path}::{n.name}" for n in ast.parse(text).body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def _task(repo: Path, base: str, t: Planted) -> dict:
    path = test_file(t)
    listed = _tests_of(path, t.tests)
    return {"instance_id": t.id, "repo": "planted/shelf", "base_commit": base, "problem_statement": t.statement,
            "patch": _diff(repo, t.fix), "test_patch": _diff(repo, [], {path: t.tests}),
            "FAIL_TO_PASS": [n for n in listed if n not in t.p2p], "PASS_TO_PASS": list(t.p2p),
            "metadata": {"planted": t.family}}


def build(root: Path) -> PlantedPack:
    repo, pack = root / "shelf", root / "pack"
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "shelf: base")
    base = git(repo, "rev-parse", "HEAD").strip()
    tasks = [_task(repo, base, t) for t in TASKS]
    pack.mkdir(parents=True)
    (pack / "pack.yaml").write_text(MANIFEST.format(ref=base, pip=json.dumps(PIP)))
    (pack / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    patches = {"gold": {t.id: task["patch"] for t, task in zip(TASKS, tasks)}, "empty": {t.id: "" for t in TASKS},
               "wrong": {t.id: _diff(repo, t.wrong) for t in TASKS if t.wrong},
               "partial": {t.id: _diff(repo, t.partial) for t in TASKS if t.partial}}
    predictions = {}
    (root / "predictions").mkdir()
    for model in ("alpha", "beta", "gamma", "delta", "epsilon"):
        rows = [{"instance_id": t.id, "model_name_or_path": model, "model_patch": patches[_configs(i, t)[model]][t.id]}
                for i, t in enumerate(TASKS)]
        predictions[model] = root / "predictions" / f"{model}.jsonl"
        predictions[model].write_text("".join(json.dumps(r) + "\n" for r in rows))
    truth = {t.id: {"family": t.family, "also": list(t.also), "plant": t.plant or "nothing (clean)"} for t in TASKS}
    return PlantedPack(root, repo, pack, base, truth, predictions)


def score(truth: dict[str, dict], findings: list[dict], probe: str, family: str) -> dict:
    """Precision and recall of one probe against the truth table, over tasks where it answered (status ok).

    Relevant: tasks planted with ``family``. A flag is right on a task planted with ``family`` or listing it in
    ``also``; a flag elsewhere (a clean task, another family) is a false positive. Skipped and error findings
    are neither (their count is kept)."""
    rows = {f["task_id"]: f for f in findings if f["probe"] == probe and f["seed"] == 0}
    answered = {k: f for k, f in rows.items() if f["status"] == "ok"}
    flagged = {k for k, f in answered.items() if f["flagged"]}
    right = {k for k in flagged if truth[k]["family"] == family or family in truth[k]["also"]}
    relevant = {k for k, t in truth.items() if t["family"] == family}
    found = flagged & relevant
    clean_flagged = sorted(k for k in flagged if truth[k]["family"] == "clean")
    return {"probe": probe, "family": family, "answered": len(answered), "not_answered": len(truth) - len(answered),
            "flagged": len(flagged), "tp": len(right), "fp": len(flagged - right), "via_also": len(right - relevant),
            "precision": len(right) / len(flagged) if flagged else None,
            "relevant": len(relevant), "relevant_answered": len(relevant & set(answered)), "found": len(found),
            "recall": len(found) / len(relevant) if relevant else None,
            "false_positives": sorted(flagged - right), "missed": sorted(relevant - found),
            "clean_flagged": clean_flagged}


def table(scores: list[dict]) -> str:
    def pct(x):
        return "-" if x is None else f"{x:.0%}"

    lines = ["| probe | family | answered | flagged | precision | recall | false positives | missed |",
             "|---|---|---|---|---|---|---|---|"]
    for s in scores:
        lines.append(f"| {s['probe']} | {s['family']} | {s['answered']}/{s['answered'] + s['not_answered']} | "
                     f"{s['flagged']} | {pct(s['precision'])} ({s['tp']}/{s['flagged']}"
                     f"{', %d via also' % s['via_also'] if s['via_also'] else ''}) | {pct(s['recall'])} "
                     f"({s['found']}/{s['relevant']}) | {', '.join(s['false_positives']) or '-'} | "
                     f"{', '.join(s['missed']) or '-'} |")
    return "\n".join(lines)
