"""What a trial costs, against baselines measured in the same run (issue 13, item 4).

    .venv/bin/python benchmarks/trial_cost.py [--repeats 5] [--baseline 956d680] [--seeds 2]

1. Grading on idna 3.20 (a benchmark pack made at run time in a temp folder: the PyPI sdist, fetched by
   name and version at image build, one injected defect; its six test files hold 6,386 tests): the full
   grading cycle with the default test command against bare ``pytest -q`` on the same files in a warm
   container, and the grading cycle of the ``--baseline`` commit's grader (its tree unpacked by
   ``git archive``, run in a subprocess) with its default command, on the same image.
2. Fixed overhead per grading cycle (cycle minus the tests' own time in a warm container, quickstart pack)
   against a bare ``docker run --rm --network none IMAGE true`` on the same image.
3. Exec latency: ``DockerSandbox.exec("true")`` against mini-swe-agent's ``DockerEnvironment.execute`` on
   the same image, network none.
4. Throughput and memory: the oracle over the quickstart pack with 1, 2 and 4 workers, each run in its own
   process: trials per minute, CPU busy (/proc/stat) and the runner's peak RSS (VmHWM).
5. Containers per trial: ``evalharness run`` of oracle and null over the quickstart pack, twice with one fresh
   task-check cache (empty, then warm), every container counted from the engine's create events by role label.

Figures go to the "## Trial cost" section of BENCHMARKS.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from evalharness.grading.grade import grade  # noqa: E402
from evalharness.packs import load_pack  # noqa: E402
from evalharness.sandbox.docker import DockerSandbox  # noqa: E402
from evalharness.sandbox.engine import docker_client  # noqa: E402
from evalharness.sandbox.images import ImageBuilder  # noqa: E402

RUN_ID = "bench-trial-cost"
IDNA_FILES = ["test_idna.py", "test_idna_codec.py", "test_idna_compat.py", "test_idna_errors.py",
              "test_idna_uts46.py", "test_intranges.py"]
_GOOD, _BAD = '    if label.startswith("-") or label.endswith("-"):', '    if label.startswith("-"):'
_HUNK = '''diff --git a/idna/core.py b/idna/core.py
--- a/idna/core.py
+++ b/idna/core.py
@@ -319,7 +319,7 @@ def check_hyphen_ok(label: str) -> bool:
     """
     if label[2:4] == "--":
         raise IDNAError("Label has disallowed hyphens in 3rd and 4th position", code="hyphen_3_4")
{minus}
{plus}
         raise IDNAError("Label must not start or end with a hyphen", code="hyphen_start_end")
     return True
 
'''


def idna_pack(root: Path, test_command: str) -> Path:
    """A one-task pack on idna 3.20 from PyPI (defect: a label ending in a hyphen is accepted)."""
    pack = root / "bench-idna"
    pack.mkdir(parents=True)
    (pack / "pack.yaml").write_text(textwrap.dedent(f"""\
        name: bench-idna
        version: 1
        description: One injected defect in idna 3.20 (benchmarks/trial_cost.py).
        environment:
          base: bookworm
          source: {{kind: pypi_sdist, name: idna, version: "3.20",
                   sha256: a7db850025b95ded1eae8a46181a1a6c56c92c96f0e2b005d9ff8dc0210cab44}}
          pip: [pytest==8.3.5, pluggy==1.7.0, iniconfig==2.3.1, packaging==26.4]
          setup: []
          workdir: /testbed
        tasks: tasks.jsonl
        test_command: {test_command}
        log_parser: junit
        timeouts: {{agent_s: 600, tests_s: 900, build_s: 900, exec_s: 60}}
        """))
    p2p = ["tests/test_idna.py::IDNATests::test_encode", "tests/test_idna_codec.py::IDNACodecTests::testCodec",
           "tests/test_idna_compat.py::IDNACompatTests::testToASCII",
           "tests/test_idna_errors.py::ErrorAttributeTests::test_attributes_are_populated",
           "tests/test_intranges.py::IntrangeTests::test_ranging", "tests/test_idna_uts46.py::UTS46Tests::test_uts46_1000"]
    task = {"instance_id": "idna-hyphen-end", "repo": "idna", "base_commit": "", "version": "3.20",
            "problem_statement": "check_hyphen_ok accepts a label that ends with a hyphen.",
            "defect_patch": _HUNK.format(minus="-" + _GOOD, plus="+" + _BAD),
            "patch": _HUNK.format(minus="-" + _BAD, plus="+" + _GOOD), "test_patch": "",
            "FAIL_TO_PASS": ["tests/test_idna.py::IDNATests::test_check_hyphen_ok"], "PASS_TO_PASS": p2p}
    (pack / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    return pack


def bare_seconds(client, image, task, command: str, repeats: int) -> list[float]:
    """``command`` again and again in one warm container with the gold patch applied."""
    with DockerSandbox(client, image, run_id=RUN_ID, trial="bare").start() as box:
        box.write_file("/tmp/gold.diff", task.patch)
        assert box.exec("git apply /tmp/gold.diff").exit_code == 0
        box.exec(command, timeout=900)  # warm-up
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            box.exec(command + " > /tmp/out 2>&1", timeout=900)
            times.append(time.perf_counter() - started)
    return times


def cycle_seconds(client, image, pack, task, repeats: int) -> list[float]:
    """Container start from the pristine image to the verdict, teardown included."""
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        with DockerSandbox(client, image, run_id=RUN_ID, trial=f"cycle-{i}", role="grader",
                           workdir=pack.spec.environment.workdir) as box:
            box.start()
            outcome = grade(task, pack.spec, task.patch, box).outcome
        times.append(time.perf_counter() - started)
        assert outcome.value == "resolved", outcome
    return times


_BASELINE_SNIPPET = """
import json, sys, time
from evalharness.grading.grade import grade
from evalharness.packs import load_pack
from evalharness.sandbox.docker import DockerSandbox
from evalharness.sandbox.engine import docker_client
client = docker_client(); pack = load_pack(sys.argv[1]); task = pack.tasks[0]; image = sys.argv[2]
times = []
for i in range(int(sys.argv[3])):
    t = time.perf_counter()
    with DockerSandbox(client, image, run_id="bench-trial-cost", trial=f"base-{i}", role="grader") as box:
        box.start()
        assert grade(task, pack.spec, task.patch, box).outcome.value == "resolved"
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def baseline_cycle_seconds(commit: str, pack: Path, image: str, repeats: int, tmp: Path) -> list[float]:
    """The grading cycle of ``commit``'s grader (its own tree, its own eh_pytest.py), same pack and image."""
    tree = tmp / f"eh-{commit}"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    out = subprocess.run([sys.executable, "-c", _BASELINE_SNIPPET, str(pack), image, str(repeats)], cwd=tree,
                         env={**os.environ, "PYTHONPATH": str(tree)}, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def docker_run_true_seconds(image: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(["docker", "run", "--rm", "--network", "none", "--label", f"evalharness.run_id={RUN_ID}",
                        image, "true"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def exec_latency(client, image: str, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds per ``true``: our sandbox, then mini-swe-agent's Docker environment (docker CLI per command)."""
    ours = []
    with DockerSandbox(client, image, run_id=RUN_ID, trial="exec").start() as box:
        box.exec("true")
        for _ in range(repeats):
            started = time.perf_counter()
            box.exec("true")
            ours.append(time.perf_counter() - started)
    from minisweagent.environments.docker import DockerEnvironment

    env = DockerEnvironment(image=image, cwd="/testbed", run_args=["--rm", "--network", "none", "--label",
                                                                   f"evalharness.run_id={RUN_ID}"])
    theirs = []
    try:
        env.execute({"command": "true"})
        for _ in range(repeats):
            started = time.perf_counter()
            env.execute({"command": "true"})
            theirs.append(time.perf_counter() - started)
    finally:
        subprocess.run(["docker", "rm", "-f", env.container_id], capture_output=True)
    return ours, theirs


_RUN_SNIPPET = """
import json, sys, tempfile, time
from pathlib import Path
from evalharness.runner import RunConfig, run
def ticks():
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(v), v[3] + v[4]
with tempfile.TemporaryDirectory() as tmp:
    config = RunConfig(pack=sys.argv[1], harnesses=["oracle"], seeds=list(range(int(sys.argv[3]))),
                       workers=int(sys.argv[2]))
    a0, i0 = ticks(); t = time.perf_counter()
    summary = run(config, runs_dir=Path(tmp))
    wall = time.perf_counter() - t; a1, i1 = ticks()
hwm = next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM"))
import os
print(json.dumps({"wall": wall, "trials": summary.total, "counts": summary.counts,
                  "busy": 1 - (i1 - i0) / (a1 - a0), "rss_kb": hwm, "load": os.getloadavg()[0]}))
"""


def run_in_process(pack: str, workers: int, seeds: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN_SNIPPET, pack, str(workers), str(seeds)], cwd=REPO,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _m(values: list[float]) -> float:
    return statistics.median(values)


def _row(what: str, values: list[float], bare: list[float]) -> str:
    return (f"| {what} | {_m(values):.2f} | {min(values):.2f} | {_m(values) / _m(bare):.2f} | "
            f"{min(values) / min(bare):.2f} |")


def _all(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default="956d680", help="commit whose grader is measured beside this one")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per task in the throughput runs")
    parser.add_argument("--skip", default="",
                        help="comma-separated parts to skip: idna,fixed,exec,runs,containers")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    client, sections = docker_client(), []
    builder = ImageBuilder(client)
    default_command = load_pack(REPO / "tasks" / "quickstart").spec.test_command
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if "idna" not in skip:
            sections.append(_idna_section(client, builder, tmp, default_command, args))
        if "fixed" not in skip:
            sections.append(_fixed_section(client, builder, args))
        if "exec" not in skip:
            sections.append(_exec_section(client, builder, args))
    if "runs" not in skip:
        sections.append(_runs_section(args))
    if "containers" not in skip:
        sections.append(_containers_section(client))
    header = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
              f"{os.cpu_count()} cores shared with other work (ratios are side by side in one run). Command: "
              f"`.venv/bin/python benchmarks/trial_cost.py --repeats {args.repeats} --baseline {args.baseline}"
              + (f" --skip {args.skip}" if args.skip else "") + "`.")
    for lines in sections:
        title = lines[0].removeprefix("### ")
        write_section(REPO / "BENCHMARKS.md", title, "\n".join([header, "", *lines[1:]]))
        print("\n".join(lines))


def _idna_section(client, builder, tmp: Path, default_command: str, args) -> list[str]:
    pack_dir = idna_pack(tmp / "new", default_command)
    pack = load_pack(pack_dir)
    task = pack.tasks[0]
    image = builder.task_image(pack, task)
    files = " ".join(task.test_files)
    old_command = ("python -m pytest -rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit_xml} "
                   "{test_files}")
    bare_q = f"python -m pytest -q -p no:cacheprovider {files}"
    bare_cold = f"PYTHONDONTWRITEBYTECODE=1 {bare_q}"  # as the grader runs: no .pyc cached from an earlier run
    r = args.repeats
    bare, cold, cycle, base = [], [], [], []
    for _ in range(r):  # interleaved: the machine's load moves under all of them alike
        bare += bare_seconds(client, image, task, bare_q, 1)
        cold += bare_seconds(client, image, task, bare_cold, 1)
        cycle += cycle_seconds(client, image, pack, task, 1)
        if args.baseline:
            base += baseline_cycle_seconds(args.baseline, idna_pack(tmp / f"old-{len(base)}", old_command), image, 1,
                                           tmp / f"t{len(base)}")
    out = [
        "### Trial cost: grading on idna 3.20 (6,386 tests in 6 files)",
        "",
        f"Median of {r}, interleaved. `bare` = the command in a warm container with the gold patch applied; "
        "`grading cycle` = container start from the pristine image to the verdict (surface, graded tree, "
        "guarded launcher with canaries, records, teardown).",
        "",
        "| what | median s | min s | median / bare | min / bare min |",
        "|---|---|---|---|---|",
        _row(f"bare `{bare_q.replace(files, '<6 files>')}` (bytecode cached by the warm-up)", bare, bare),
        _row(f"bare, `PYTHONDONTWRITEBYTECODE=1` (nothing cached, as in a fresh grading sandbox)", cold, bare),
        _row(f"grading cycle, default command `{default_command}`", cycle, bare),
    ]
    if base:
        out.append(_row(f"grading cycle of {args.baseline} (before), its default command (`-rA`)", base, bare))
    ratio, best = _m(cycle) / _m(bare), min(cycle) / min(bare)
    out += ["",
            f"- Goal: grading <= 1.3x bare `pytest -q`: median {ratio:.2f}x, best run {best:.2f}x: "
            f"**{'met' if ratio <= 1.3 else 'met on the best runs only' if best <= 1.3 else 'missed'}**."
            + (f" Before: {_m(base) / _m(bare):.2f}x (median), so grading this task is {_m(base) / _m(cycle):.1f}x "
               "cheaper." if base else ""),
            f"- Against bare pytest with nothing cached (what a fresh container can do without bytecode in the "
            f"image): {_m(cycle) / _m(cold):.2f}x median, {min(cycle) / min(cold):.2f}x best.",
            f"- All runs: bare {_all(bare)}; uncached {_all(cold)}; cycle {_all(cycle)}"
            + (f"; before {_all(base)}" if base else "") + " s.", ""]
    print("\n".join(out), flush=True)
    return out


def _fixed_section(client, builder, args) -> list[str]:
    pack = load_pack(REPO / "tasks" / "quickstart")
    rows, overheads, trues = [], [], []
    for task in pack.tasks[:4]:
        image = builder.task_image(pack, task)
        command = pack.spec.test_command.format(test_files=" ".join(task.test_files), junit_xml="/tmp/raw.xml")
        raw, cycle, true = [], [], []
        for _ in range(args.repeats):
            raw += bare_seconds(client, image, task, command, 1)
            cycle += cycle_seconds(client, image, pack, task, 1)
            true += docker_run_true_seconds(image, 1)
        overhead = _m(cycle) - _m(raw)
        overheads.append(overhead)
        trues.append(_m(true))
        rows.append(f"| {task.instance_id} | {_m(raw):.3f} | {_m(cycle):.3f} | {overhead:.3f} | {_m(true):.3f} | "
                    f"{overhead / _m(true):.2f} |")
    ratio = _m(overheads) / _m(trues)
    out = ["### Trial cost: fixed overhead per grading cycle", "",
           f"Quickstart pack, first 4 tasks, median of {args.repeats} interleaved repeats. Overhead = grading "
           "cycle minus the same test command in a warm container.", "",
           "| task | tests, warm (s) | grading cycle (s) | overhead (s) | `docker run --rm IMAGE true` (s) | "
           "overhead / docker run |", "|---|---|---|---|---|---|", *rows, "",
           f"- Median overhead {_m(overheads):.3f} s against {_m(trues):.3f} s for a bare `docker run --rm "
           f"--network none IMAGE true`: **{ratio:.2f}x** (goal <= 2x: {'met' if ratio <= 2 else 'missed'}).", ""]
    print("\n".join(out), flush=True)
    return out


def _exec_section(client, builder, args) -> list[str]:
    pack = load_pack(REPO / "tasks" / "quickstart")
    image = builder.task_image(pack, pack.tasks[0])
    ours, theirs = exec_latency(client, image, 10 * args.repeats)
    out = ["### Trial cost: exec latency", "",
           f"`true`, {10 * args.repeats} times each in one container of `{image}` (network none): "
           f"`DockerSandbox.exec` median {1000 * _m(ours):.0f} ms (min {1000 * min(ours):.0f}); mini-swe-agent "
           f"2.4.6 `DockerEnvironment.execute` median {1000 * _m(theirs):.0f} ms (min {1000 * min(theirs):.0f}): "
           f"ours is **{_m(ours) / _m(theirs):.2f}x** theirs. Ours: one engine API exec (create, start on a "
           "socket, inspect) wrapped in `timeout ... bash -c`; theirs: a `docker exec` process per command.", ""]
    print("\n".join(out), flush=True)
    return out


def _runs_section(args) -> list[str]:
    pack = str(REPO / "tasks" / "quickstart")
    runs = {n: run_in_process(pack, n, args.seeds) for n in (1, 2, 4)}
    for n, r in runs.items():
        assert r["counts"] == {"resolved": r["trials"]}, r
    one = runs[1]
    rows = [f"| {n} | {r['trials']} | {r['wall']:.1f} | {60 * r['trials'] / r['wall']:.1f} | "
            f"{one['wall'] / r['wall']:.2f}x | {r['busy']:.0%} | {r['load']:.1f} | {r['rss_kb'] / 1024:.0f} |" for n, r in runs.items()]
    per_worker = (runs[4]["rss_kb"] - runs[1]["rss_kb"]) / 3 / 1024
    bound = 1 / one["busy"]
    speedup = one["wall"] / runs[2]["wall"]
    out = ["### Trial cost: throughput and runner memory", "",
           f"Oracle harness over the quickstart pack, {args.seeds} seeds (agent sandbox, derived patch, grading "
           "sandbox, plus one gold-patch check container per task), each run in a fresh process "
           "(`evalharness.runner.run`).", "",
           "| workers | trials | wall (s) | trials/min | speed-up | CPU busy (whole machine, /proc/stat) | "
           "load average at the end | runner peak RSS (MB, VmHWM) |", "|---|---|---|---|---|---|---|---|", *rows, "",
           f"- 2 workers give **{speedup:.2f}x** the throughput of 1 (aim 1.8x). During the 1-worker run the "
           f"machine's {os.cpu_count()} cores were {one['busy']:.0%} busy (this run's engine, containerd, runc and "
           "containers beside the runner, and whatever else the machine ran: the busy share counts every process), "
           f"so a second worker could add at most {bound:.2f}x here: the bound is the free core time, not the runner.",
           f"- Runner memory: {runs[1]['rss_kb'] / 1024:.0f} MB peak with 1 worker, about {per_worker:.1f} MB more "
           "per extra worker (from 1 to 4).", ""]
    print("\n".join(out), flush=True)
    return out


def _creates_during(client, marker_image: str, work):
    """(work's result, the attributes of every container the engine created meanwhile): create events streamed
    live (the engine keeps a short backlog only), then a marker container to know the stream has caught up."""
    import threading
    import uuid

    events, stream = [], client.events(since=int(time.time()) - 1, decode=True,
                                       filters={"type": "container", "event": "create"})
    reader = threading.Thread(target=lambda: [events.append(e.get("Actor", {}).get("Attributes", {}))
                                              for e in stream], daemon=True)
    reader.start()
    try:
        result = work()
        marker = uuid.uuid4().hex
        client.containers.create(marker_image, ["true"], labels={"evalharness.benchmark-marker": marker},
                                 network_mode="none").remove()
        deadline = time.monotonic() + 60
        while not any(e.get("evalharness.benchmark-marker") == marker for e in list(events)):
            if time.monotonic() > deadline:
                raise RuntimeError("the engine's event stream never caught up")
            reader.join(0.05)
        return result, list(events)
    finally:
        stream.close()


def _containers_section(client) -> list[str]:
    from collections import Counter

    from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL
    from evalharness.sandbox.images import BASE_RECIPES

    pack = load_pack(REPO / "tasks" / "quickstart")
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, "EVALHARNESS_CACHE_DIR": str(tmp / "cache")}
        for label in ("empty task-check cache", "warm task-check cache"):
            def work():
                done = subprocess.run([str(REPO / ".venv" / "bin" / "evalharness"), "run", "-p", str(pack.root),
                                       "-H", "oracle", "-H", "null", "-j", "2", "--format", "json"], cwd=tmp,
                                      env=env, capture_output=True, text=True, check=True)
                return next(line.split()[1].rstrip(":") for line in done.stderr.splitlines()
                            if line.startswith("run "))
            run_id, events = _creates_during(client, BASE_RECIPES["bookworm"].tag, work)
            mine = [e for e in events if e.get(LABEL_RUN) == run_id]
            per_trial: dict[str, Counter] = {}
            for e in mine:
                per_trial.setdefault(e[LABEL_TRIAL], Counter())[e[LABEL_ROLE]] += 1
            by_harness = {h: [c for t, c in per_trial.items() if t.split("/")[2:3] == [h]] for h in ("oracle", "null")}
            checks = sum(c["check"] for c in per_trial.values())
            trials = sum(len(v) for v in by_harness.values())
            shape = {h: ", ".join(f"{k} {v}" for k, v in sorted(Counter(
                "+".join(f"{r}" for r in sorted(c.elements())) for c in cs).items())) for h, cs in by_harness.items()}
            rows.append(f"| {label} | {trials} | {shape['oracle']} | {shape['null']} | {checks} | "
                        f"{len(mine)} | {len(mine) / trials:.2f} |")
    out = ["### Trial cost: containers per trial", "",
           "`evalharness run -p tasks/quickstart -H oracle -H null -j 2` (8 tasks, 1 seed), run twice with one fresh "
           "`EVALHARNESS_CACHE_DIR`; every container the engine created for the run, counted from its `create` "
           "events by the `evalharness.role` label (trials: `agent+grader N` means N trials started those).", "",
           "| run | trials | oracle trials started | null trials started | task-check containers | "
           "containers in all | per trial |", "|---|---|---|---|---|---|---|", *rows, "",
           "Before issue 22 every trial started an agent and a grading container (null's too: its empty change was "
           "graded by running the tests on the unchanged tree) and every run one task-check container per task: "
           "40 containers for these 16 trials, 2.50 per trial, in every run (from that code, not measured here).", ""]
    print("\n".join(out), flush=True)
    return out


if __name__ == "__main__":
    main()
