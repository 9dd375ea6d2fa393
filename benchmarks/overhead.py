"""Fixed per-trial overhead of the sandbox and grader, and throughput with 1 and 2 workers.

    .venv/bin/python benchmarks/overhead.py [--pack tasks/quickstart] [--repeats 8] [--rounds 2]

On a shared machine the load moves, so what is compared is interleaved: per task, one raw run, then
one grading cycle, repeat after repeat; the 1-worker and 2-worker runs in turn, ``--rounds`` times.

1. Raw test time: the pack's test command run again and again in one warm container (gold patch
   applied), the floor no harness can beat.
2. Grading cycle: create a sandbox from the pristine task image (read-only root, the work tree
   rebuilt in tmpfs from the image's base commit, one git pack), list the patch's surface with the
   grader's git, decide it, move the tree to the graded state, run the guarded launcher with
   canaries, read its records, decide, tear down. Overhead = cycle - raw test time.
3. Throughput: the oracle harness over the whole pack with 1 and with 2 workers (full trials:
   agent sandbox + grading sandbox; the task-check cache is a fresh folder filled before the
   runs, so they start no task-check container), in trials per minute.

Figures go to the "## Per-trial overhead" section of BENCHMARKS.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from evalharness.grading.grade import grade  # noqa: E402
from evalharness.packs import load_pack  # noqa: E402
from evalharness.runner import RunConfig, run  # noqa: E402
from evalharness.sandbox.docker import DockerSandbox  # noqa: E402
from evalharness.sandbox.engine import docker_client  # noqa: E402
from evalharness.sandbox.images import ImageBuilder  # noqa: E402


def raw_and_cycle_seconds(client, image, pack, task, repeats: int) -> tuple[list[float], list[float]]:
    """(raw, cycle) seconds, interleaved: the test command once in one warm container, then one grading cycle."""
    command = pack.spec.test_command.format(test_files=" ".join(task.test_files), junit_xml="/tmp/raw-junit.xml")
    raw, cycle = [], []
    with DockerSandbox(client, image, run_id="bench-overhead", trial="raw").start() as box:
        box.write_file("/tmp/gold.diff", task.patch)
        box.exec("git apply /tmp/gold.diff")
        box.exec(command)  # warm-up: imports cached, files in page cache
        for i in range(repeats):
            started = time.perf_counter()
            result = box.exec(command)
            raw.append(time.perf_counter() - started)
            assert result.exit_code == 0, result.output[-2000:]
            cycle.append(grading_cycle_seconds(client, image, pack, task, i))
    return raw, cycle


def grading_cycle_seconds(client, image, pack, task, i: int) -> float:
    started = time.perf_counter()
    with DockerSandbox(client, image, run_id="bench-overhead", trial=f"cycle-{i}", role="grader").start() as box:
        outcome = grade(task, pack.spec, task.patch, box).outcome
    assert outcome.value == "resolved", outcome
    return time.perf_counter() - started


def _cpu_ticks() -> tuple[int, int]:
    """(all, idle) jiffies of the whole machine, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(values), values[3] + values[4]


@contextlib.contextmanager
def warm_check_cache(client, builder, pack):
    """A fresh task-check cache (EVALHARNESS_CACHE_DIR while the block runs) holding every task's verdict."""
    from functools import partial

    from evalharness.sandbox.base import Limits
    from evalharness.taskcheck import CACHE_ENV, CheckCache, TaskChecker

    old = os.environ.get(CACHE_ENV)
    with tempfile.TemporaryDirectory() as cache:
        checker = TaskChecker(client, pack, "bench-overhead", Limits(), partial(builder.task_image, pack),
                              cache=CheckCache(cache))
        for task in pack.tasks:
            checker.check(task)
        os.environ[CACHE_ENV] = cache
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = old


def throughput(pack_path: str, workers: int, seeds: int) -> tuple[float, int, float]:
    """Wall time of the oracle over the pack, trials, and the share of all cores that was busy."""
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(pack=pack_path, harnesses=["oracle"], seeds=list(range(seeds)), workers=workers)
        all0, idle0 = _cpu_ticks()
        started = time.perf_counter()
        summary = run(config, runs_dir=Path(tmp))
        elapsed = time.perf_counter() - started
        all1, idle1 = _cpu_ticks()
    assert summary.counts == {"resolved": summary.total}, summary.counts
    return elapsed, summary.total, 1 - (idle1 - idle0) / (all1 - all0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pack", default=str(REPO / "tasks" / "quickstart"))
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=2, help="seeds per task in the throughput runs")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the 1-worker and 2-worker runs, in turn")
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    client = docker_client()
    pack = load_pack(args.pack)
    builder = ImageBuilder(client)
    images = {t.instance_id: builder.task_image(pack, t) for t in pack.tasks}
    rows, raw_all, cycle_all = [], [], []
    for task in pack.tasks:
        raws, cycles = raw_and_cycle_seconds(client, images[task.instance_id], pack, task, args.repeats)
        raw, cycle = statistics.median(raws), statistics.median(cycles)
        raw_all.append(raw)
        cycle_all.append(cycle)
        rows.append(f"| {task.instance_id} | {raw:.3f} | {cycle:.3f} | {cycle - raw:.3f} | {cycle / raw:.2f} |")
        print(rows[-1], flush=True)
    with warm_check_cache(client, builder, pack):
        load0 = os.getloadavg()[0]
        runs: dict[int, list[tuple[float, int, float]]] = {1: [], 2: []}
        for _ in range(args.rounds):
            for workers, done in runs.items():
                done.append(throughput(args.pack, workers, args.seeds))
        load1 = os.getloadavg()[0]
    (t1, t2), n = [statistics.median(r[0] for r in runs[w]) for w in (1, 2)], runs[1][0][1]
    busy1, busy2 = [statistics.median(r[2] for r in runs[w]) for w in (1, 2)]
    rounds = ", ".join(f"{a[0] / b[0]:.2f}x" for a, b in zip(runs[1], runs[2]))
    speedup = t1 / t2
    overhead = statistics.median(c - r for c, r in zip(cycle_all, raw_all))
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {_cpus()} cores, pack `{pack.name}` "
        f"({len(pack.tasks)} tasks), median of {args.repeats} repeats per task, on a machine shared with other "
        f"work (load average {load_start:.1f} at the start, {load0:.1f} before the throughput runs, {load1:.1f} "
        "after them). Interleaved: per task one raw run, then one grading cycle, repeat after repeat; the "
        f"1-worker and 2-worker runs in turn, {args.rounds} rounds, medians. Command: "
        f"`.venv/bin/python benchmarks/overhead.py --repeats {args.repeats} --seeds {args.seeds} "
        f"--rounds {args.rounds}`.",
        "",
        "| task | raw tests, warm container (s) | grading cycle (s) | overhead (s) | cycle / raw |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"- Median fixed overhead per trial beyond the tests' own time: **{overhead:.3f} s** (target <= 0.6 s: "
        f"**{'met' if overhead <= 0.6 else 'missed'}**).",
        f"- Throughput, oracle harness, {n} full trials (agent sandbox + grading sandbox; task-check cache "
        "filled before, so no task-check container): 1 worker "
        f"{60 * n / t1:.1f} trials/min ({t1:.1f} s median), 2 workers {60 * n / t2:.1f} trials/min ({t2:.1f} s): "
        f"**{speedup:.2f}x** (target >= 1.8x: **{'met' if speedup >= 1.8 else 'missed'}**; round by round "
        f"{rounds}).",
        f"- CPU busy (all {_cpus()} cores, from /proc/stat, every process on the machine): {busy1:.0%} with 1 "
        f"worker, {busy2:.0%} with 2. "
        + (f"With 1 worker {busy1 * _cpus():.2f} cores were already busy (Docker engine, containerd, runc, the "
           "container's own processes beside the runner, and other work on the machine), so 2 workers could at "
           f"most reach {1 / busy1:.2f}x from free core time here." if busy1 < 0.95 else
           "No core time was free even with 1 worker: what a second worker gained it took from the other "
           "work on the machine, so the speed-up says little about the runner's own parallelism."),
    ]
    write_section(REPO / "BENCHMARKS.md", "Per-trial overhead", "\n".join(lines))
    print("\n".join(lines[-2:]))


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
