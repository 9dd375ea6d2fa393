"""`run --created-after/--created-before` and a model's `training_cutoff`, end to end through the CLI.

Pins: tasks without a created_at disappeared from a date-filtered run without a word, and a model's
training cutoff could be written nowhere, so no report could say how it did on tasks it cannot
have seen. Here the quickstart pack's tasks get dates around a cutoff; a scripted model (real
litellm, real HTTP, real Docker) fixes one task on each side; the run keeps the dated tasks of the
window, names the undated one, and the report splits the score at the model's cutoff.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from support import QUICKSTART, run_cli

from evalharness.models import ScriptedModelServer
from evalharness.packs import load_pack

sys.path.insert(0, str(Path(__file__).parent / "harness"))
from harness_scripts import MINIMAL, TrialScript, give_up, git_apply, solve  # noqa: E402

MODEL = "openai/scripted-gpt"
DATES = {  # created_at of the quickstart tasks in this copy
    "boltons-strutils-parse-int-list": "2023-05-01T09:00:00Z",      # before the cutoff, solved
    "boltons-mathutils-ceil-exact-match": "2024-06-30",             # the cutoff's own day: before, not solved
    "boltons-dictutils-onetoone-reassign": "2025-03-01",            # after, solved
    "boltons-iterutils-backoff-zero-start": "2025-04-01T10:00:00+02:00",  # after, not solved
    "boltons-cacheutils-lru-max-size": "",                          # undated: left out by the window, named
}


@pytest.fixture
def dated_pack(tmp_path) -> Path:
    pack = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, pack, ignore=shutil.ignore_patterns("validation", "__pycache__"))
    rows = [json.loads(line) for line in (pack / "tasks.jsonl").read_text().splitlines()]
    for row in rows:
        row["created_at"] = DATES.get(row["instance_id"], "2019-01-01")     # the others: outside the window
    (pack / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pack


def test_bad_dates_and_empty_windows_are_user_errors_before_anything_runs(tmp_path, dated_pack):
    bad = run_cli("run", "-p", str(dated_pack), "-H", "null", "--created-after", "2024-02-30", cwd=tmp_path,
                  check=False)
    assert bad.returncode == 1 and "error: --created-after: '2024-02-30' is not a date" in bad.stderr
    empty = run_cli("run", "-p", str(dated_pack), "-H", "null", "--created-after", "2030-01-01", cwd=tmp_path,
                    check=False)
    assert empty.returncode == 1 and "no task of" in empty.stderr and "1 without a date" in empty.stderr
    config = tmp_path / "models.yaml"
    config.write_text(f"models:\n  {MODEL}:\n    training_cutoff: last summer\n")
    wrong = run_cli("run", "-p", str(dated_pack), "-H", MINIMAL, "-m", MODEL, "--model-config", str(config),
                    cwd=tmp_path, check=False)
    assert wrong.returncode == 1 and "training_cutoff" in wrong.stderr and "not a date" in wrong.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.docker
@pytest.mark.slow
def test_a_date_window_and_a_cutoff_split_through_a_real_run(tmp_path, dated_pack, base_image):
    tasks = {t.instance_id: t for t in load_pack(dated_pack).tasks}
    solved = ("boltons-strutils-parse-int-list", "boltons-dictutils-onetoone-reassign")
    plans = {t: (solve(git_apply, tasks[t].patch) if t in solved else give_up()) for t in DATES}
    config = tmp_path / "models.yaml"
    config.write_text(f"timeout_s: 60\nmodels:\n  {MODEL}:\n    training_cutoff: 2024-06-30\n")
    with ScriptedModelServer(TrialScript(list(tasks.values()), plans)) as server:
        done = run_cli("run", "-p", str(dated_pack), "-H", MINIMAL, "-m", MODEL, "--api-base", f"{server.url}/v1",
                       "--model-config", str(config), "--created-after", "2020-01-01", "--created-before",
                       "2026-01-01", "--format", "json", cwd=tmp_path)
    assert "warning: 1 task(s) without a created_at are left out by the date window: " \
           "boltons-cacheutils-lru-max-size" in done.stderr
    assert "date window: 4 of 8 tasks (after 2020-01-01, before 2026-01-01)" in done.stderr
    report = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    assert {row[0] for row in report["per_task"]["rows"]} == set(DATES) - {"boltons-cacheutils-lru-max-size"}
    [split] = report["cutoff_split"]
    assert (split["config"], split["cutoff"]) == (f"{MINIMAL}/{MODEL}", "2024-06-30")
    assert (split["n_tasks_before"], split["n_tasks_after"], split["n_undated"]) == (2, 2, 0)
    assert split["resolve_rate_before"] == split["resolve_rate_after"] == 0.5
    manifest = json.loads(next((tmp_path / "runs").glob("*/manifest.json")).read_text())
    assert (manifest["run"]["created_after"], manifest["run"]["created_before"]) == ("2020-01-01", "2026-01-01")
    assert manifest["run"]["models"][0]["training_cutoff"] == "2024-06-30"
    assert manifest["task_created_at"]["boltons-mathutils-ceil-exact-match"] == "2024-06-30"
