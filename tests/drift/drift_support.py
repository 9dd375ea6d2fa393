"""What the drift tests share: a scripted model server in a subprocess, scripts per task, the CLI."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
EVALHARNESS = [sys.executable, "-m", "evalharness.cli"]
QUICKSTART = REPO / "tasks" / "quickstart"
KEY_ENV = "DRIFT_TEST_KEY"


def quickstart_tasks(ids: list[str]) -> dict[str, dict]:
    rows = [json.loads(line) for line in (QUICKSTART / "tasks.jsonl").read_text().splitlines() if line.strip()]
    return {r["instance_id"]: r for r in rows if r["instance_id"] in ids}


def write_script(path: Path, tasks: dict[str, dict], solved: set[str]) -> Path:
    """One scenario per task, matched on its statement's first line: a solved task applies its gold patch
    and submits; any other submits at once (no patch: unresolved, the agent's own failure)."""
    submit = {"text": "Done.", "tool_calls": [{"name": "submit", "arguments": {}}]}
    scenarios = []
    for task_id, row in tasks.items():
        patch = row["patch"] if row["patch"].endswith("\n") else row["patch"] + "\n"
        fix = {"bash": f"cat > /tmp/fix.diff <<'EOF_FIX'\n{patch}EOF_FIX\ngit apply /tmp/fix.diff", "text": "Fixing."}
        scenarios.append({"name": task_id, "prompt": re.escape(row["problem_statement"].splitlines()[0]),
                          "replies": [fix, submit] if task_id in solved else [submit]})
    path.write_text(yaml.safe_dump({"on_exhausted": "cycle", "scenarios": scenarios}, sort_keys=False))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    return {**os.environ, KEY_ENV: "sk-drift-test", "PYTHONPATH": str(REPO)}


class ModelServer:
    """`evalharness model-server --script FILE --port PORT` in a subprocess (a fixed port: restarts keep the URL)."""

    def __init__(self, script: Path, port: int, log: Path):
        self.script, self.port, self.log, self.proc = script, port, log, None

    def start(self, script: Path | None = None) -> "ModelServer":
        self.script = script or self.script
        with self.log.open("a") as log:
            self.proc = subprocess.Popen([*EVALHARNESS, "model-server", "--script", str(self.script),
                                          "--port", str(self.port)], stdout=subprocess.PIPE, stderr=log, text=True,
                                         env=env())
        line = self.proc.stdout.readline()
        if "127.0.0.1" not in line:
            self.stop()
            raise RuntimeError(f"model server did not start: {line!r}; see {self.log}")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


def cli(home: Path, *args: str, timeout: float = 900, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*EVALHARNESS, *args], cwd=home, capture_output=True, text=True, timeout=timeout,
                          env={**env(), **(extra_env or {})})


def run_day(home: Path, day: str, label: str, *, timeout: float = 900) -> tuple[int, dict]:
    """``drift run --day DAY --format json`` through the CLI: its exit code and its one JSON document (the test
    fails, showing both streams, when stdout is anything else). Its stderr is appended to ``home/drift.stderr``."""
    import pytest

    done = cli(home, "drift", "run", "--config", "drift.yaml", "--day", day, "--format", "json", timeout=timeout)
    with (home / "drift.stderr").open("a") as log:
        log.write(f"--- {label} ({day}), exit {done.returncode}\n{done.stderr}")
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{label}: stdout is not one JSON document (exit {done.returncode}):\n{done.stdout[-2000:]}\n"
                    f"{done.stderr[-3000:]}")


def trial_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM trials").fetchone()[0]


def drift_yaml(home: Path, *, port: int, tasks: list[str], baseline_days: int = 30, **extra) -> Path:
    stream = {"name": "qs", "pack": str(QUICKSTART), "harness": "minimal", "model": "openai/scripted",
              "api_base": f"http://127.0.0.1:{port}/v1", "api_key_env": KEY_ENV, "tasks": tasks,
              "baseline_days": baseline_days, "short_baseline": True, "workers": 2, "infra_retries": 0, **extra}
    path = home / "drift.yaml"
    path.write_text(yaml.safe_dump({"store": "runs/evalharness.db", "runs_dir": "runs", "streams": [stream]},
                                   sort_keys=False))
    return path


def wait_port_closed(port: int, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.1)


def store_day(tables, day: str, outcomes: list[tuple[str, bool, bool]], planned: int, stream: str = "s") -> None:
    """One run for the day, all its trials started at the same wall-clock time (not the drift day)."""
    run_id = f"run-{day}"
    store = tables.store
    store.create_run(run_id, pack="p", pack_hash="h", version="0", git_commit=None, config={})
    wall = datetime(2030, 6, 1, tzinfo=timezone.utc)  # the same real time for every day: it must not matter
    for i, (task, resolved, infra) in enumerate(outcomes):
        store.record_trial({
            "run_id": run_id, "trial_id": f"p/{task}/h/m/seed-0", "pack": "p", "task_id": task, "harness": "h",
            "model": "m", "seed": 0, "outcome": "model_unavailable" if infra else ("resolved" if resolved else
                                                                                  "unresolved"),
            "resolved": resolved, "infra": infra, "reason": "", "attempts": 1, "cost_usd": None,
            "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "calls": 0, "duration_s": 1.0,
            "started_at": wall, "finished_at": wall, "repo": "r", "detail": "", "flags": []})
    store.set_status(run_id, "completed")
    from evalharness.drift.days import day_status

    status = day_status(store.trial_rows([run_id]), planned)
    tables.put_day(stream, day, run_id=run_id, **{k: v for k, v in status.to_dict().items()})
