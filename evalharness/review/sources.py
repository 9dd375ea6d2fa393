"""Where review items come from: the store's trials of the runs, their trial folders, and the runs' pack.

- A run's pack is loaded from the path its configuration snapshot names (``config["pack"]["path"]``, also in the
  run folder's ``manifest.json``); a pack changed since the run (another content hash) is refused, since its
  statements and gold patches might not be the ones the agents worked on.
- An agent item's tests are the grader's statuses of the task's FAIL_TO_PASS and PASS_TO_PASS tests
  (``result.json`` ``grade.tests``; ``missing`` when the grader did not reach them).
- A gold item's tests, so that it reads like any agent item: the statuses an ``oracle`` trial of the same task in
  these runs measured, when there is one; else what the pack requires of its gold patch and validation checks:
  every listed test passes.
- The ids' secret is kept in ``runs_dir/.review-secret`` (made on first use, readable by its owner only): the same
  secret for every queue of that runs folder, so exported ids can be imported again there.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from evalharness.errors import UserError
from evalharness.review.queue import SKIPPED_HARNESSES, Item, item_key, opaque_id
from evalharness.rundir import UnsafeTrialPath, read_trial_text, trial_folder

SECRET_FILE = ".review-secret"
COMMANDS_SHOWN = 40
TEXT_MAX = 4000
PATCH_MAX = 100_000
"""Bytes of a patch the page shows (the rest is said to be cut): a review page for a patch a person can read."""


def secret_for(runs_dir: Path) -> bytes:
    """The runs folder's id secret, made (owner-only) when missing."""
    path = Path(runs_dir) / SECRET_FILE
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def run_pack(store: Any, run_id: str, cache: dict[str, Any]):
    """The pack run ``run_id`` was made with (UserError when it cannot be found or has changed)."""
    from evalharness.packs import load_pack

    info = (store.get_run(run_id)["config"] or {}).get("pack") or {}
    path = info.get("path")
    if not path:
        raise UserError(f"run {run_id} does not record its pack's path", "it predates review; review newer runs")
    if path not in cache:
        if not Path(path).exists():
            raise UserError(f"run {run_id} was made with the pack at {path}, which is not there any more",
                            "run review from the folder the run was started in")
        cache[path] = load_pack(path)
    pack = cache[path]
    if info.get("hash") and pack.content_hash != info["hash"]:
        raise UserError(f"the pack at {path} changed since run {run_id}",
                        "review needs the statements and gold patches the agents worked on")
    return pack


def load_items(store: Any, runs_dir: Path, run_ids: list[str], secret: bytes, *,
               trajectories: bool = False) -> tuple[list[Item], list[Item]]:
    """(agent items, gold candidates) of ``run_ids``: every trial with a non-empty patch, one gold per task."""
    packs: dict[str, Any] = {}
    by_run = {run_id: run_pack(store, run_id, packs) for run_id in run_ids}
    agent, oracle_tests, tasks = [], {}, {}
    for row in store.trial_rows(run_ids):
        pack = by_run[row["run_id"]]
        try:
            task = pack.task(row["task_id"])
        except KeyError:
            continue
        try:
            folder = trial_folder(runs_dir, row["detail"])
        except UnsafeTrialPath:
            continue  # not a folder of this runs folder: nothing of it is shown
        tests = _tests(task, folder)
        if row["harness"] in SKIPPED_HARNESSES:
            if row["resolved"] and tests:
                oracle_tests.setdefault((pack.name, task.instance_id), tests)
            continue
        patch = _read(folder / "patch.diff")
        if row["infra"] or not patch.strip():
            continue
        tasks[(pack.name, task.instance_id)] = task
        agent.append(Item(
            item_id=opaque_id(secret, item_key("agent", pack.name, task.instance_id, row["run_id"], row["trial_id"])),
            arm="agent", pack=pack.name, task_id=task.instance_id, patch=patch, statement=task.problem_statement,
            tests=tests or _listed(task, "missing"), run_id=row["run_id"], trial_id=row["trial_id"],
            config=f"{row['harness']}/{row['model']}",
            trajectory=_trajectory(folder / "trajectory.json") if trajectories else None))
    gold = [Item(item_id=opaque_id(secret, item_key("gold", pack_name, task.instance_id)), arm="gold",
                 pack=pack_name, task_id=task.instance_id, patch=task.patch, statement=task.problem_statement,
                 tests=oracle_tests.get((pack_name, task.instance_id)) or _listed(task, "passed"))
            for (pack_name, _), task in sorted(tasks.items()) if task.patch.strip()]
    return agent, gold


def _read(path: Path) -> str:
    """The patch as the page shows it: its first ``PATCH_MAX`` bytes, with a line saying how much was cut; empty
    when absent or not a regular file of the folder (a symbolic link is never followed)."""
    try:
        text, size = read_trial_text(path.parent, path.name, head=PATCH_MAX)
    except (FileNotFoundError, IsADirectoryError, UnsafeTrialPath):
        return ""
    if size > PATCH_MAX:
        text = text.rsplit("\n", 1)[0] + (f"\n[evalharness: patch cut here, {size - PATCH_MAX:,} more bytes of "
                                           f"{size:,}; the whole patch is the trial folder's patch.diff]\n")
    return text


def _listed(task: Any, status: str) -> dict[str, dict[str, str]]:
    return {"FAIL_TO_PASS": {t: status for t in task.FAIL_TO_PASS},
            "PASS_TO_PASS": {t: status for t in task.PASS_TO_PASS}}


def _tests(task: Any, folder: Path) -> dict[str, dict[str, str]] | None:
    """The grader's status of each listed test, or None when the trial was not graded."""
    try:
        result = json.loads(read_trial_text(folder, "result.json")[0])
    except (FileNotFoundError, IsADirectoryError, UnsafeTrialPath, json.JSONDecodeError):
        return None
    if not isinstance(result, dict):
        return None
    statuses = ((result.get("grade") or {}).get("tests")) or {}
    if not statuses:
        return None
    return {"FAIL_TO_PASS": {t: str(statuses.get(t, "missing")) for t in task.FAIL_TO_PASS},
            "PASS_TO_PASS": {t: str(statuses.get(t, "missing")) for t in task.PASS_TO_PASS}}


def _trajectory(path: Path) -> dict[str, Any]:
    """Steps, model calls, the commands run and the final message of a trial's trajectory."""
    try:
        steps = json.loads(read_trial_text(path.parent, path.name)[0])
    except (FileNotFoundError, IsADirectoryError, UnsafeTrialPath, json.JSONDecodeError):
        return {"steps": 0, "model_calls": 0, "commands": [], "final_message": ""}
    steps = steps.get("steps", []) if isinstance(steps, dict) else steps
    commands = [str(s.get("command") or s.get("action") or "")[:300] for s in steps
                if s.get("kind", "command") == "command"]
    messages = [str(s.get("content") or "") for s in steps if s.get("kind") == "model" and s.get("content")]
    return {"steps": len(steps), "model_calls": sum(s.get("kind") == "model" for s in steps),
            "commands": commands[:COMMANDS_SHOWN], "more_commands": max(0, len(commands) - COMMANDS_SHOWN),
            "final_message": (messages[-1] if messages else "")[:TEXT_MAX]}


def review_items(store: Any, runs_dir: Path, run_ids: list[str], *, sample: int | None = None,
                 gold: int | None = None, seed: int = 0, trajectories: bool = False) -> list[Item]:
    """The queue's items: the agent items (all, or ``sample`` of them stratified by configuration) and ``gold``
    gold items (None: one per ``GOLD_EVERY`` agent items; 0: none). Trajectories leave the gold arm out: a gold
    patch has no trajectory, and a missing one would give it away."""
    from evalharness.review.queue import gold_count, pick_gold, sample_agent

    if trajectories and gold:
        raise UserError("--trajectories shows agents' trajectories, which a gold patch does not have",
                        "review with trajectories and --no-gold, or without trajectories to mix gold patches in")
    agent, gold_items = load_items(store, runs_dir, run_ids, secret_for(runs_dir), trajectories=trajectories)
    chosen = sample_agent(agent, sample, seed)
    try:
        count = 0 if trajectories else gold_count(len(chosen), gold, len({(i.pack, i.task_id) for i in chosen}))
    except ValueError as e:
        raise UserError(str(e)) from e
    return chosen + pick_gold(chosen, gold_items, count, seed)
