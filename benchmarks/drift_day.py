"""What a drift day of the quickstart stream costs: wall time of `evalharness drift run`, day after day.

    .venv/bin/python benchmarks/drift_day.py [--days 5] [--no-write]

The stream is the one of docs/drift.md's example and tests/drift/test_drift_e2e.py: two quickstart tasks
(boltons-strutils-parse-int-list, boltons-mathutils-ceil-exact-match), one seed, 2 workers, the `minimal`
harness against the scripted model server (`evalharness model-server`, one task solved, one not) instead of
a paid model. Beside it, the same panel with the `oracle` harness (no model calls: the floor a day's
containers set). Each day is one `drift run --day D` subprocess in a fresh temporary folder, timed from
start to exit; a warm-up day first (task images built if missing, not counted), then ``--days`` days, then
the last day again (a finished day: nothing runs, the floor of the CLI and the store). The trials' own
durations come from the store. The machine's load average is read before, between days and after.
Writes the "## Drift day" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "drift"))
from benchmarks._report import write_section  # noqa: E402
from drift_support import ModelServer, cli, drift_yaml, free_port, quickstart_tasks, write_script  # noqa: E402

TITLE = "Drift day"
TASKS = ["boltons-strutils-parse-int-list", "boltons-mathutils-ceil-exact-match"]
START = date(2026, 1, 1)


def _day(i: int) -> str:
    return (START + timedelta(days=i)).isoformat()


def _drift_day(home: Path, i: int) -> dict:
    started = time.perf_counter()
    done = cli(home, "drift", "run", "--config", "drift.yaml", "--day", _day(i), "--format", "json", timeout=1800)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 10):
        raise SystemExit(f"drift run --day {_day(i)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    stream = json.loads(done.stdout)["streams"][0]
    with sqlite3.connect(home / "runs" / "evalharness.db") as conn:
        trials = [r[0] for r in conn.execute("SELECT duration_s FROM trials WHERE run_id = ?", (stream["run_id"],))]
    return {"wall": wall, "trials_run": stream["trials_run"], "status": stream["status"]["status"],
            "resolved": stream["status"]["resolved"], "trial_s": trials if stream["trials_run"] else [],
            "load": os.getloadavg()[0]}


def measure(harness: str, days: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"drift-day-{harness}-") as tmp:
        home = Path(tmp)
        server = None
        if harness == "minimal":
            script = write_script(home / "script.yaml", quickstart_tasks(TASKS), solved={TASKS[0]})
            port = free_port()
            drift_yaml(home, port=port, tasks=TASKS)
            server = ModelServer(script, port, home / "model-server.log").start()
        else:
            drift_yaml(home, port=0, tasks=TASKS, harness=harness, model=None, api_base=None, api_key_env=None)
        try:
            warm = _drift_day(home, 0)
            measured = []
            for i in range(1, days + 1):
                measured.append(_drift_day(home, i))
                print(f"{harness} day {i}: {measured[-1]['wall']:.1f} s ({measured[-1]['status']}, "
                      f"{measured[-1]['resolved']} resolved, load {measured[-1]['load']:.1f})", flush=True)
            again = _drift_day(home, days)
        finally:
            if server:
                server.stop()
    return {"warm": warm, "days": measured, "again": again}


def _stats(values: list[float]) -> str:
    return (f"{statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} | "
            f"{statistics.pstdev(values):.1f}")


def section(results: dict[str, dict], days: int, load_before: tuple, load_after: tuple) -> str:
    rows = ["| stream | days | median s | min s | max s | sd s | trial s (median) | day again s | warm-up day s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    label = {"minimal": "`minimal` + scripted model server (the e2e stream)", "oracle": "`oracle` (no model calls)"}
    for harness, r in results.items():
        walls = [d["wall"] for d in r["days"]]
        trial_s = [t for d in r["days"] for t in d["trial_s"]]
        rows.append(f"| {label[harness]} | {len(walls)} | {_stats(walls)} | {statistics.median(trial_s):.1f} | "
                    f"{r['again']['wall']:.1f} | {r['warm']['wall']:.1f} |")
    minimal = results.get("minimal")
    loads = [d["load"] for r in results.values() for d in r["days"]]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, {os.cpu_count()} "
        f"cores shared with other work. Command: `.venv/bin/python benchmarks/drift_day.py --days {days}`.",
        "",
        "A drift day = one `evalharness drift run --config drift.yaml --day D` process, start to exit, on a "
        "two-task panel of the quickstart pack (one seed, 2 workers; the stream of docs/drift.md's example and "
        "tests/drift/test_drift_e2e.py, with the scripted model server in place of a paid model)."
        " `trial s` = the trials' own durations from the "
        "store (the 2 run side by side); `day again` = the same day run a second time (finished: nothing runs); "
        "`warm-up day` = the first day of a fresh store, not counted.",
        "",
        *rows,
        "",
    ]
    if minimal:
        walls = [d["wall"] for d in minimal["days"]]
        lines.append(f"- A drift day of the quickstart stream: **{statistics.median(walls):.0f} s** (median of "
                     f"{len(walls)}, {min(walls):.0f}-{max(walls):.0f} s) on this machine at this load.")
    lines.append(f"- Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; after: "
                 f"{', '.join(f'{x:.1f}' for x in load_after)}; at the end of each day: "
                 f"{min(loads):.1f}-{max(loads):.1f} (on {os.cpu_count()} cores).")
    for harness, r in results.items():
        lines.append(f"- {harness}, every day: " + ", ".join(f"{d['wall']:.1f}" for d in r["days"]) + " s.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--harness", action="append", choices=["minimal", "oracle"],
                        help="streams to measure (default: both)")
    parser.add_argument("--no-write", action="store_true", help="print the section; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = {h: measure(h, args.days) for h in (args.harness or ["minimal", "oracle"])}
    text = section(results, args.days, load_before, os.getloadavg())
    print(text)
    if not args.no_write:
        write_section(REPO / "BENCHMARKS.md", TITLE, text)


if __name__ == "__main__":
    main()
