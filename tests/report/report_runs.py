"""A stored run made for the report tests: store rows plus real trial folders (patch, test output, result,
trajectory, log) under a runs folder; one trial can carry hostile text in every file the page shows."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from evalharness.store import Store, database_url

HOSTILE = "</script><script>window.__injected=1;alert(1)</script><!-- <img src=x onerror=alert(2)>"


def patch_text(task: str, marker: str = "") -> str:
    return (f"diff --git a/src/{task}.py b/src/{task}.py\n--- a/src/{task}.py\n+++ b/src/{task}.py\n"
            f"@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2  # fix {task}{marker}\n")


def write_trial(folder: Path, *, task: str, outcome: str, hostile: bool = False, missing: tuple[str, ...] = ()) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    extra = HOSTILE if hostile else ""
    files = {
        "patch.diff": patch_text(task, extra),
        "test_output.txt": "collected 3 items\n" + "." * 50 + f"\n{extra}\n=== 1 failed, 2 passed ===\n",
        "result.json": json.dumps({"outcome": outcome, "reason": f"reason of {task}{extra}", "flags": [],
                                   "exit_status": "submitted", "attempts": 1, "error": None,
                                   "grade": {"outcome": outcome, "reason": "graded", "patch_applied": True,
                                             "test_exit_code": 0, "tests": {"t::a": "passed", "t::b": "failed"},
                                             "evidence": [], "flags": [], "surface": []}}),
        "trajectory.json": json.dumps({"format": "evalharness.trajectory/1", "exit_status": "submitted", "steps": [
            {"index": 0, "kind": "model", "content": f"I will fix {task}{extra}", "tool_calls": []},
            {"index": 1, "kind": "command", "command": f"sed -i s/1/2/ src/{task}.py", "exit_code": 0,
             "output": "x" * 5000 + extra}]}),
        "trial.log": f"graded: {outcome}\n",
        "results.jsonl": '{"t": "start"}\n',
    }
    for name, text in files.items():
        if name not in missing:
            (folder / name).write_text(text)


def make_run(tmp_path: Path, *, configs: list[str], tasks: int = 4, seeds: int = 2, run_id: str = "r1",
             solved=lambda c, t, s: (c + t + s) % 2 == 0, hostile_trial: tuple[int, int, int] | None = None,
             cost: float | None = 0.01, name: str | None = None) -> tuple[Store, Path]:
    """A run of ``configs`` (``harness/model``) x ``tasks`` x ``seeds``; returns (store, runs folder)."""
    runs_dir = tmp_path / "runs"
    store = Store(database_url(runs_dir / "evalharness.db"))
    store.create_run(run_id, pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={}, name=name)
    now = datetime.now(timezone.utc)
    for c, config in enumerate(configs):
        harness, model = config.split("/")
        for t in range(tasks):
            for s in range(seeds):
                outcome = "resolved" if solved(c, t, s) else "unresolved"
                trial_id = f"toy/t{t}/{harness}__{model}/seed-{s}"
                detail = f"{run_id}/{trial_id}"
                write_trial(runs_dir / detail, task=f"t{t}", outcome=outcome, hostile=hostile_trial == (c, t, s))
                store.record_trial(dict(
                    run_id=run_id, trial_id=trial_id, pack="toy", task_id=f"t{t}", harness=harness, model=model,
                    seed=s, outcome=outcome, resolved=outcome == "resolved", infra=False, reason=f"reason {t}",
                    attempts=1, cost_usd=cost, input_tokens=100, output_tokens=10, cached_tokens=0, calls=1,
                    duration_s=1.0, started_at=now, finished_at=now, repo="", detail=detail, flags=[]))
    store.set_status(run_id, "completed")
    return store, runs_dir
