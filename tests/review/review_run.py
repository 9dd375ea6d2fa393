"""A stored run made without Docker for the review tests: real store rows and trial folders (patch.diff,
result.json with the grader's test statuses, trajectory.json) of the quickstart pack, two configurations.

Harness and model names are distinctive (``HARNESS``, ``MODELS``) so a test can grep any answer for them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from support import QUICKSTART

from evalharness.packs import load_pack
from evalharness.rundir import trial_dir, write_trial
from evalharness.store import Store

RUN_ID = "run-review-demo"
HARNESS = "zorbharness"
MODELS = ("quuxmodel-a", "quuxmodel-b")
SECRETS = (HARNESS, *MODELS, RUN_ID, "seed-")


def agent_patch(gold: str, n: int) -> str:
    """A real diff of the task's file: the gold patch with a comment line added to its first hunk."""
    lines = gold.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("@@"))
    return "".join(lines[:first + 1]) + f"+# agent change {n}\n" + "".join(lines[first + 1:])


def make_run(tmp_path: Path, *, tasks: int = 4, with_empty: bool = True) -> tuple[Store, Path, str]:
    """Store + runs folder with run ``RUN_ID``: per model, ``tasks`` trials with patches (one per task; model b
    fails its FAIL_TO_PASS), an oracle trial per task, and one trial with an empty patch (not reviewed)."""
    pack = load_pack(QUICKSTART)
    runs_dir = tmp_path / "runs"
    run_dir = runs_dir / RUN_ID
    run_dir.mkdir(parents=True)
    store = Store(f"sqlite:///{runs_dir / 'evalharness.db'}")
    config = {"pack": {"name": pack.name, "hash": pack.content_hash, "path": str(pack.root),
                       "version": pack.spec.version}, "harnesses": {HARNESS: {"kind": "minimal"}}}
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": RUN_ID, **config}))
    store.create_run(RUN_ID, pack=pack.name, pack_hash=pack.content_hash, version="0", git_commit=None, config=config)
    now = datetime.now(timezone.utc)
    n = 0
    for task in pack.tasks[:tasks]:
        for harness, model, resolved in ((HARNESS, MODELS[0], True), (HARNESS, MODELS[1], False),
                                         ("oracle", "gold", True)):
            n += 1
            patch = task.patch if harness == "oracle" else agent_patch(task.patch, n)
            _trial(store, runs_dir, run_dir, pack, task, harness, model, 1, patch, resolved, now)
    if with_empty:
        _trial(store, runs_dir, run_dir, pack, pack.tasks[0], HARNESS, MODELS[0], 2, "", False, now)
    store.set_status(RUN_ID, "complete")
    return store, runs_dir, RUN_ID


def _trial(store, runs_dir, run_dir, pack, task, harness, model, seed, patch, resolved, now) -> None:
    folder = trial_dir(run_dir, pack.name, task.instance_id, harness, model, seed)
    statuses = {t: "passed" for t in task.PASS_TO_PASS}
    statuses.update({t: "passed" if resolved else "failed" for t in task.FAIL_TO_PASS})
    outcome = "resolved" if resolved else "unresolved"
    trajectory = {"format": "evalharness.trajectory/1", "harness": harness, "model": model, "steps": [
        {"index": 0, "kind": "model", "content": f"I am {model}; let me look", "tool_calls": []},
        {"index": 1, "kind": "command", "command": "grep -rn def .", "exit_code": 0, "output": ""},
        {"index": 2, "kind": "model", "content": "Done: fixed it.", "tool_calls": []}]}
    write_trial(folder, {"patch.diff": patch, "trajectory.json": trajectory, "trial.log": "",
                         "result.json": {"outcome": outcome, "task_id": task.instance_id, "harness": harness,
                                         "model": model, "seed": seed, "run_id": RUN_ID,
                                         "grade": {"outcome": outcome, "tests": statuses}},
                         "test_output.txt": "tests ran\n"})
    store.record_trial(dict(
        run_id=RUN_ID, trial_id=f"{pack.name}/{task.instance_id}/{harness}/{model}/seed-{seed}", pack=pack.name,
        task_id=task.instance_id, harness=harness, model=model, seed=seed, outcome=outcome, resolved=resolved,
        infra=False, reason="", attempts=1, cost_usd=0.01, input_tokens=10, output_tokens=10, cached_tokens=0,
        calls=1, duration_s=1.0, started_at=now, finished_at=now, repo="boltons",
        detail=str(folder.relative_to(runs_dir)), flags=[]))
