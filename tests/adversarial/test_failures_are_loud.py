"""What goes wrong is said where people look: flags in the console and every report, broken tasks
named with a non-zero exit, a killed run shown as interrupted and its containers removable.

Pins issue 7 (classes 9, 11, 12): `touched_test_files` / `touched_test_config` existed only in
result.json; a task whose image could not be built became `infra_error`, was left out of the rate
and the run exited 0 (oracle showed 100%); a `git` source with a `file://` URL failed with a raw
traceback; after SIGKILL the run stayed `running` and its containers kept running.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest
from adversary import (EVALHARNESS, FORCE_PASS, TINYPACK, ModelServer, attack, cli, cli_env, containers_of,
                       module_run, put, remove_containers, write_script)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FLAGGED = [
    attack("9a", 9, "a pytest plugin named in pyproject.toml (touched_config)", put("forcepass.py", FORCE_PASS),
           put("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-p forcepass"\n')),
    attack("9b", 9, "the failing test weakened (touched_tests)",
           "sed -i 's/== 10$/== 11/' tests/test_calc.py"),
]
FLAG_WORDS = ("touched_config", "touched_tests", "tampered", "flag")


@pytest.fixture(scope="module")
def flagged_run(tmp_path_factory, base_image):
    yield from module_run(FLAGGED, tmp_path_factory, "flags")


def test_9_flags_are_in_the_console_summary(flagged_run):
    stored = {a: t.result.get("flags") for a, t in flagged_run.trials.items()}
    console = flagged_run.stdout + flagged_run.stderr
    assert all(stored.values()), f"the trials carry no flags to show: {stored}"
    assert any(w in console for w in ("touched_config", "touched_tests", "tampered")), console[-3000:]


@pytest.mark.parametrize("fmt", ["table", "md", "json", "html"])
def test_9_flags_are_in_every_report(flagged_run, fmt):
    done = flagged_run.cli("report", flagged_run.run_id, "--format", fmt, "--runs-dir", "runs")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    if fmt == "html":
        text += "".join(p.read_text() for p in (flagged_run.home / "reports").glob(f"{flagged_run.run_id}*.html"))
    assert "touched_config" in text or "touched config" in text.lower(), f"report --format {fmt}:\n{text[-2000:]}"


def _pack_with(home, extra_task: dict | None = None, source: dict | None = None):
    pack = home / "pack"
    shutil.copytree(TINYPACK, pack)
    if extra_task:
        with (pack / "tasks.jsonl").open("a") as f:
            f.write(json.dumps(extra_task) + "\n")
    if source:
        import yaml
        spec = yaml.safe_load((pack / "pack.yaml").read_text())
        spec["environment"]["source"] = source
        (pack / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return pack


def _clamp_task() -> dict:
    return json.loads((TINYPACK / "tasks.jsonl").read_text().splitlines()[0])


def _outcomes(home, run_stdout: str) -> dict[str, str]:
    db = sqlite3.connect(home / "runs" / "evalharness.db")
    rows = db.execute("select task_id, harness, outcome from trials").fetchall()
    db.close()
    return {f"{t}/{h}": o for t, h, o in rows}


def test_11_a_task_whose_defect_does_not_apply_is_a_loud_task_error(tmp_path, base_image):
    broken = {**_clamp_task(), "instance_id": "tiny-broken",
              "defect_patch": _clamp_task()["defect_patch"].replace("return high", "return nothing_like_this")}
    pack = _pack_with(tmp_path, extra_task=broken)
    done = cli(tmp_path, "run", "-p", str(pack), "-H", "oracle", "--task", "tiny-clamp", "--task", "tiny-broken",
               "--runs-dir", "runs", "--report-dir", "reports")
    outcomes = _outcomes(tmp_path, done.stdout)
    assert outcomes.get("tiny-clamp/oracle") == "resolved", outcomes
    assert outcomes.get("tiny-broken/oracle") == "task_error", outcomes
    assert done.returncode != 0, f"a broken task and exit code 0:\n{done.stdout[-2000:]}"
    assert "tiny-broken" in done.stdout + done.stderr


def test_11_a_task_whose_gold_patch_does_not_apply_is_a_loud_task_error(tmp_path, base_image):
    broken = {**_clamp_task(), "instance_id": "tiny-bad-gold",
              "patch": _clamp_task()["patch"].replace("return value\n+", "return nothing_like_this\n+")}
    pack = _pack_with(tmp_path, extra_task=broken)
    done = cli(tmp_path, "run", "-p", str(pack), "-H", "oracle", "--task", "tiny-bad-gold",
               "--runs-dir", "runs", "--report-dir", "reports")
    outcomes = _outcomes(tmp_path, done.stdout)
    assert outcomes.get("tiny-bad-gold/oracle") == "task_error", outcomes
    assert done.returncode != 0 and "tiny-bad-gold" in done.stdout + done.stderr, done.stdout[-2000:]


def test_11_a_git_source_with_a_file_url_builds_or_fails_clearly(tmp_path, base_image):
    repo = tmp_path / "srcrepo"
    shutil.copytree(TINYPACK / "src", repo)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    pack = _pack_with(tmp_path, source={"kind": "git", "url": f"file://{repo}"})
    done = cli(tmp_path, "run", "-p", str(pack), "-H", "oracle", "--task", "tiny-clamp",
               "--runs-dir", "runs", "--report-dir", "reports")
    assert "Traceback" not in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    outcomes = _outcomes(tmp_path, done.stdout) if (tmp_path / "runs" / "evalharness.db").exists() else {}
    assert outcomes.get("tiny-clamp/oracle") == "resolved", (outcomes, done.stdout[-1500:], done.stderr[-1500:])


SLEEPER = [attack("12a", 12, "an agent sleeping when the runner is SIGKILLed", "sleep 25; echo woke", kind="hygiene")]


def test_12_a_killed_run_is_interrupted_and_gc_leaves_no_container(tmp_path, base_image):
    server = ModelServer(write_script(SLEEPER, tmp_path / "script.yaml"), tmp_path / "model-server.log")
    before = set(_labelled_runs())
    proc = subprocess.Popen([*EVALHARNESS, "run", "-p", str(TINYPACK), "--task", "tiny-clamp", "-H", "minimal",
                             "-m", f"openai/{SLEEPER[0].model}", "--api-base", f"{server.url}/v1", "--api-key-env",
                             "EH_ADVERSARIAL_KEY", "--runs-dir", "runs", "--report-dir", "reports"],
                            cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_id = None
    try:
        deadline = time.monotonic() + 120
        while run_id is None and time.monotonic() < deadline:
            fresh = set(_labelled_runs()) - before
            run_id = next(iter(fresh), None)
            time.sleep(0.5)
        assert run_id, "no container of the run appeared within 120 s"
        deadline = time.monotonic() + 120
        while not _sleeping(run_id):  # the agent's command is running: the kill lands mid-trial
            assert proc.poll() is None and time.monotonic() < deadline, "the agent's sleep never started"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        listed = cli(tmp_path, "runs", "--runs-dir", "runs").stdout
        line = next((ln for ln in listed.splitlines() if run_id in ln), "")
        gc = cli(tmp_path, "sandbox", "gc")
        left = containers_of(run_id)
        assert "running" not in line and "interrupted" in line, f"`evalharness runs` after SIGKILL: {line!r}"
        assert left == [], f"containers left after `sandbox gc` ({gc.stdout.strip()}): {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()
        if run_id:
            remove_containers(run_id)


def _sleeping(run_id: str) -> bool:
    for cid in containers_of(run_id):
        top = subprocess.run(["docker", "top", cid, "-eo", "pid,args"], capture_output=True, text=True)
        if top.returncode == 0 and "sleep 25" in top.stdout:
            return True
    return False


def _labelled_runs() -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "--filter", "label=evalharness.run_id", "--format",
                          '{{.Label "evalharness.run_id"}}'], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.split() if ln]
