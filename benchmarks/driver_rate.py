"""How many trials per second the driver can record, and how much each result weighs on the wire.

    .venv/bin/python benchmarks/driver_rate.py [--trials 2000]

The driver alone writes the store and the run folders (executors/__init__.py), so at scale it is the
ceiling of any executor: N nodes can finish trials no faster than the driver records them. Measured here
with the real recording path (``runner._record``: the trial folder's files, then one store row) on
1. SQLite (the default file store) and
2. PostgreSQL on 127.0.0.1 (a real server started for the run, when initdb/pg_ctl are installed),
for trial outputs the size of real ones (test output, JUnit file, trajectory of 30 steps); plus the pickled
size of one TrialOutput, which is what a Ray worker sends to the driver.

Figures go to the "## Driver recording rate" section of BENCHMARKS.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from evalharness.grading.grade import GradeResult  # noqa: E402
from evalharness.packs import load_pack  # noqa: E402
from evalharness.runner import _record  # noqa: E402
from evalharness.store import Store, database_url  # noqa: E402
from evalharness.trial import Trial, TrialOutput  # noqa: E402
from evalharness.types import AgentResult, ModelEndpoint, Outcome, Usage  # noqa: E402


def _output(i: int) -> TrialOutput:
    now = datetime.now(timezone.utc)
    steps = [{"role": "assistant", "content": f"step {k}: " + "x" * 400,
              "command": "grep -rn thing src/ | head", "output": "y" * 1500} for k in range(30)]
    grade = GradeResult(Outcome.RESOLVED if i % 2 else Outcome.UNRESOLVED, "all listed tests pass",
                        test_output="tests/test_x.py::test_%d PASSED\n" * 800, junit_xml="<testsuite/>" * 300)
    agent = AgentResult(patch="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" * 20, trajectory=steps,
                        usage=Usage(input_tokens=40_000, output_tokens=2_000, calls=30, cost_usd=0.12))
    return TrialOutput(grade.outcome, grade.reason, agent, grade, now, now, {"agent_s": 50.0, "grade_s": 9.0},
                       ["image x", "graded"], patch=agent.patch.encode())


def _rate(store_url: str, runs_dir: Path, trials: list[Trial], outputs: list[TrialOutput]) -> float:
    store = Store(store_url)
    store.create_run("bench", pack="quickstart", pack_hash="h", version="bench", git_commit=None, config={})
    run_dir = runs_dir / "bench"
    started = time.perf_counter()
    for trial, out in zip(trials, outputs):
        _record(store, run_dir, "bench", "quickstart", trial, out, 1, "node-a")
    return len(trials) / (time.perf_counter() - started)


def _postgres(data: Path):
    """A real PostgreSQL server on 127.0.0.1; (url, stop) or None when its binaries are missing."""
    def find(name):
        return shutil.which(name) or next(iter(sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None)

    initdb, pg_ctl = find("initdb"), find("pg_ctl")
    if not initdb or not pg_ctl:
        return None
    as_user = (lambda argv: ["runuser", "-u", "postgres", "--", *argv]) if os.geteuid() == 0 else (lambda argv: argv)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(data, user.pw_uid, user.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(as_user([str(initdb), "-D", str(data / "db"), "-U", "eh", "--auth=trust"]), check=True,
                   capture_output=True)
    subprocess.run(as_user([str(pg_ctl), "-D", str(data / "db"), "-w", "-l", str(data / "log"), "-o",
                            f"-h 127.0.0.1 -p {port} -k {data}", "start"]), check=True, capture_output=True)

    def stop():
        subprocess.run(as_user([str(pg_ctl), "-D", str(data / "db"), "-m", "immediate", "stop"]), capture_output=True)

    return f"postgresql+psycopg://eh@127.0.0.1:{port}/postgres", stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print the section instead of writing BENCHMARKS.md")
    args = parser.parse_args()
    pack = load_pack(REPO / "tasks" / "quickstart")
    harness = SimpleNamespace(name="minimal", config=lambda: {})
    model = ModelEndpoint(name="openai/m")
    trials = [Trial(pack.tasks[i % len(pack.tasks)], harness, model, i // len(pack.tasks)) for i in range(args.trials)]
    outputs = [_output(i) for i in range(args.trials)]
    wire = len(pickle.dumps(outputs[0], protocol=pickle.HIGHEST_PROTOCOL))
    rates = {}
    with tempfile.TemporaryDirectory(prefix="eh-bench-driver-") as tmp:
        rates["SQLite file"] = _rate(database_url(Path(tmp) / "runs" / "evalharness.db"), Path(tmp) / "runs", trials,
                                     outputs)
        pg_dir = Path(tempfile.mkdtemp(prefix="eh-bench-pg-"))
        server = _postgres(pg_dir)
        if server is not None:
            url, stop = server
            try:
                rates["PostgreSQL, 127.0.0.1"] = _rate(url, Path(tmp) / "runs-pg", trials, outputs)
            finally:
                stop()
                shutil.rmtree(pg_dir, ignore_errors=True)
        folder_mb = sum(f.stat().st_size for f in (Path(tmp) / "runs" / "bench").rglob("*") if f.is_file()) / 1e6
    lines = [f"Measured {datetime.now(timezone.utc):%Y-%m-%d} on {platform.machine()}, {os.cpu_count()} cores. "
             f"Command: `.venv/bin/python benchmarks/driver_rate.py --trials {args.trials}`. The real recording path "
             "(`runner._record`: the trial folder's files written atomically, then one store row) for trial outputs "
             "the size of real ones (30-step trajectory, 800-line test output, JUnit file).", "",
             "| store | trials recorded per second | per trial (ms) |", "|---|---:|---:|"]
    lines += [f"| {name} | {rate:.0f} | {1000 / rate:.1f} |" for name, rate in rates.items()]
    lines += ["", f"- One TrialOutput pickled (what a Ray worker sends the driver): **{wire / 1024:.0f} KiB**.",
              f"- Run folder on disk: {folder_mb / args.trials * 1000:.0f} KB per trial.",
              f"- At the slowest store above, the driver records at most "
              f"**{min(rates.values()) * 60:,.0f} trials per minute**; a trial that takes 60 s of a worker slot means "
              f"the driver saturates beyond about {min(rates.values()) * 60:,.0f} slots (docs/scale.md)."]
    text = "\n".join(lines)
    if args.no_write:
        print(text)
    else:
        write_section(REPO / "BENCHMARKS.md", "Driver recording rate", text)
        print(text)


if __name__ == "__main__":
    main()
