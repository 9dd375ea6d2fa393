"""Benchmark: build and open the HTML report of a 10,000-trial run.

Synthesizes a stored run (SQLite store rows + trial folders with realistic files: a ~3 KB patch, ~12 KB of test
output, a 24-step trajectory with ~1.2 KB outputs, a result.json with 40 tests; texts of Zipf-distributed words,
which gzip like real logs), 4 configurations x 500 tasks x 5 seeds, then times ``assemble`` +
``render(report, "html")`` (the build), the file's size, and in headless Chromium the time from navigation start
to the page's own "report-ready" mark (its script has parsed the trial index and the page is usable), the load
event, opening one trial's details (decode its chunk, render patch, test output, trajectory) and opening one
configuration's trial list. The baseline, measured in the same process, is the same for a 100-trial run
(4 x 5 x 5). Writes the "## Report build and open" section of BENCHMARKS.md.

    .venv/bin/python benchmarks/report_size.py [--trials 10000] [--repeats 3] [--no-write] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import write_section  # noqa: E402

from evalharness.report.assemble import assemble  # noqa: E402
from evalharness.report.render import render  # noqa: E402
from evalharness.store import Store, database_url, trials  # noqa: E402

SECTION = "Report build and open"
BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
CONFIGS, SEEDS = 4, 5
WORDS = None


def _words(rng: np.random.Generator) -> np.ndarray:
    global WORDS
    if WORDS is None:
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz_"))
        WORDS = np.array(["".join(rng.choice(letters, rng.integers(2, 11))) for _ in range(3000)])
    return WORDS


def _line(rng: np.random.Generator, n: int) -> str:
    """Words drawn Zipf-distributed (a=1.3), as in real text and code: it compresses about 5x with gzip, where
    the quickstart pack's real test output compresses 6.3x (uniform words would compress 2.3x)."""
    w = _words(rng)
    return " ".join(w[np.minimum(rng.zipf(1.3, n) - 1, len(w) - 1)])


def _text(rng: np.random.Generator, chars: int, prefix: str = "") -> str:
    lines, size = [], 0
    while size < chars:
        line = prefix + "    " * int(rng.integers(0, 3)) + _line(rng, int(rng.integers(3, 12)))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def trial_files(rng: np.random.Generator, task: str, outcome: str) -> dict[str, str]:
    hunks = []
    for h in range(3):
        hunks.append(f"@@ -{10 + 40 * h},8 +{10 + 40 * h},9 @@\n" + _text(rng, 300, " ") + "\n"
                     + _text(rng, 250, "-") + "\n" + _text(rng, 350, "+"))
    patch = f"diff --git a/src/{task}.py b/src/{task}.py\n--- a/src/{task}.py\n+++ b/src/{task}.py\n" + "\n".join(hunks)
    tests = {f"tests/test_{task}.py::test_{_line(rng, 1)}_{i}": ("passed" if rng.random() < .9 else "failed")
             for i in range(40)}
    output = "=== test session starts ===\n" + _text(rng, 11_000) + "\n=== 3 failed, 37 passed ===\n"
    steps = []
    for i in range(24):
        if i % 2 == 0:
            steps.append({"index": i, "kind": "model", "content": _text(rng, 400), "tool_calls": [],
                          "duration_s": 2.0, "t_start": "2026-12-01T00:00:00+00:00"})
        else:
            steps.append({"index": i, "kind": "command", "command": "grep -rn " + _line(rng, 2), "exit_code": 0,
                          "output": _text(rng, 1200), "duration_s": 0.3, "t_start": "2026-12-01T00:00:00+00:00"})
    result = {"outcome": outcome, "reason": "3 of 12 required tests not passing", "flags": [], "attempts": 1,
              "error": None, "exit_status": "submitted",
              "grade": {"outcome": outcome, "reason": "graded", "patch_applied": True, "test_exit_code": 1,
                        "tests": tests, "evidence": [], "flags": [],
                        "surface": [{"path": f"src/{task}.py", "change": "M", "action": "applied"}]}}
    return {"patch.diff": patch, "test_output.txt": output, "result.json": json.dumps(result),
            "trajectory.json": json.dumps({"format": "evalharness.trajectory/1", "steps": steps}),
            "trial.log": "graded\n", "results.jsonl": '{"t": "start"}\n' * 40}


def synthesize(root: Path, n_trials: int, seed: int = 0) -> tuple[Store, Path, str]:
    """A completed run of ``n_trials`` (CONFIGS x tasks x SEEDS) in a store under ``root/runs``."""
    rng = np.random.default_rng(seed)
    runs_dir = root / "runs"
    store = Store(database_url(runs_dir / "evalharness.db"))
    run_id = f"bench-{n_trials}"
    store.create_run(run_id, pack="bench", pack_hash="0" * 64, version="bench", git_commit=None, config={})
    tasks = n_trials // (CONFIGS * SEEDS)
    difficulty = rng.beta(1.2, 0.9, tasks)
    now = datetime.now(timezone.utc)
    rows = []
    for c in range(CONFIGS):
        for t in range(tasks):
            for s in range(SEEDS):
                resolved = bool(rng.random() < min(1.0, difficulty[t] + 0.05 * c))
                outcome = "resolved" if resolved else "unresolved"
                trial_id = f"bench/task-{t:04d}/h{c}__model/seed-{s}"
                folder = runs_dir / run_id / trial_id
                folder.mkdir(parents=True)
                for name, text in trial_files(rng, f"task_{t:04d}", outcome).items():
                    (folder / name).write_text(text)
                rows.append(dict(run_id=run_id, trial_id=trial_id, pack="bench", task_id=f"task-{t:04d}",
                                 harness=f"h{c}", model="model", seed=s, outcome=outcome, resolved=resolved,
                                 infra=False, reason="", attempts=1,
                                 cost_usd=float(0.02 + 0.01 * c + rng.random() / 100), input_tokens=20_000,
                                 output_tokens=2_000, cached_tokens=0, calls=12, duration_s=90.0, started_at=now,
                                 finished_at=now, repo="", detail=f"{run_id}/{trial_id}", flags=[]))
    with store.engine.begin() as conn:
        conn.execute(trials.insert(), rows)
    store.set_status(run_id, "completed")
    return store, runs_dir, run_id


def build(store: Store, runs_dir: Path, run_id: str, out: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    report, _ = assemble(store, [run_id], runs_dir)
    t1 = time.perf_counter()
    page = render(report, "html")
    t2 = time.perf_counter()
    out.write_text(page)
    return {"assemble_s": t1 - t0, "render_s": t2 - t1, "build_s": t2 - t0, "bytes": out.stat().st_size,
            "trials": len(report["trials"])}


def browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(120)
    return driver


OPEN_TRIAL = """
const [i, done] = arguments;
const t0 = performance.now();
location.hash = '#trial/' + i;
(function wait() {
  if (document.documentElement.dataset.trial === String(i)) done(performance.now() - t0);
  else setTimeout(wait, 2);
})();
"""
OPEN_LIST = """
const [config, done] = arguments;
const t0 = performance.now();
location.hash = '#trials/config/' + encodeURIComponent(config);
requestAnimationFrame(() => done(performance.now() - t0));
"""


def open_page(driver, page: Path, n_trials: int) -> dict[str, float]:
    """One fresh load: navigation start to the ready mark and to the load event, one trial, one list."""
    driver.get("about:blank")
    driver.get(page.as_uri())
    ready = driver.execute_script("return performance.getEntriesByName('report-ready')[0].startTime")
    nav = driver.execute_script("const n = performance.getEntriesByType('navigation')[0];"
                                "return [n.domContentLoadedEventEnd, n.loadEventEnd]")
    driver.set_script_timeout(60)
    trial_ms = driver.execute_async_script(OPEN_TRIAL, n_trials // 2 + 7)
    assert driver.execute_script("return document.getElementById('patch') !== null"), "the trial shows no patch"
    list_ms = driver.execute_async_script(OPEN_LIST, "h0/model")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    if errors:
        raise AssertionError(f"console errors: {errors}")
    return {"ready_ms": ready, "dcl_ms": nav[0], "load_ms": nav[1], "trial_ms": trial_ms, "list_ms": list_ms}


def measure(n_trials: int, root: Path, driver, repeats: int) -> dict[str, float]:
    t0 = time.perf_counter()
    store, runs_dir, run_id = synthesize(root, n_trials)
    synth_s = time.perf_counter() - t0
    builds = [build(store, runs_dir, run_id, root / "report.html") for _ in range(repeats)]
    opens = [open_page(driver, root / "report.html", n_trials) for _ in range(repeats)]
    folders = sum(f.stat().st_size for f in (runs_dir / run_id).rglob("*") if f.is_file())
    out = {"trials": builds[0]["trials"], "bytes": builds[0]["bytes"], "folder_bytes": folders, "synth_s": synth_s}
    for key in ("assemble_s", "render_s", "build_s"):
        out[key] = statistics.median(b[key] for b in builds)
    for key in ("ready_ms", "dcl_ms", "load_ms", "trial_ms", "list_ms"):
        out[key] = statistics.median(o[key] for o in opens)
    return out


def section(big: dict[str, float], base: dict[str, float], repeats: int) -> str:
    def ratio(key):
        return f"{big[key] / base[key]:.1f}x" if base[key] else "-"

    rows = [("build: assemble (store + statistics)", "assemble_s", "{:.2f} s"),
            ("build: render html (read trial folders, compress)", "render_s", "{:.2f} s"),
            ("build: total", "build_s", "{:.2f} s"), ("file size", "bytes", None),
            ("open: navigation start to the page's ready mark", "ready_ms", "{:.0f} ms"),
            ("open: DOMContentLoaded", "dcl_ms", "{:.0f} ms"), ("open: load event", "load_ms", "{:.0f} ms"),
            ("open one trial (decode its chunk, render its files)", "trial_ms", "{:.0f} ms"),
            ("open a configuration's trial list", "list_ms", "{:.0f} ms")]
    lines = [f"`benchmarks/report_size.py`: a synthesized stored run of {big['trials']:,} trials ({CONFIGS} "
             f"configurations x {big['trials'] // (CONFIGS * SEEDS)} tasks x {SEEDS} seeds; trial folders with a "
             f"~3 KB patch, ~12 KB test output, a 24-step trajectory; {big['folder_bytes'] / 1e6:,.0f} MB on disk), "
             f"against a {base['trials']:,}-trial run of the same shape measured in the same process. `assemble` + "
             f"`render(report, \"html\")`, then the file opened from disk in headless Chromium (Debian's "
             f"chromium, Selenium); medians of {repeats} builds and {repeats} fresh loads.",
             "", f"| quantity | {big['trials']:,} trials | {base['trials']:,} trials | ratio |", "|---|---|---|---|"]
    for label, key, fmt in rows:
        if key == "bytes":
            cells = (f"{big[key] / 1e6:.1f} MB", f"{base[key] / 1e3:.0f} KB")
        else:
            cells = (fmt.format(big[key]), fmt.format(base[key]))
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {ratio(key)} |")
    lines += ["", f"Machine: {platform.machine()}, {platform.python_version()}, 2 cores shared with other work. "
              "The ready mark is set by the page's script after it has parsed the trial index and routed the URL "
              "hash: the page is usable from then on. Trial details are not in the DOM until opened: each is "
              "decoded from its gzip+base64 chunk of 50 trials (DecompressionStream) on demand."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--baseline", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--keep", type=Path, default=None, help="keep the synthesized runs under this folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="report-size-"))
    driver = browser(root / "profile")
    try:
        base = measure(args.baseline, root / f"run-{args.baseline}", driver, args.repeats)
        big = measure(args.trials, root / f"run-{args.trials}", driver, args.repeats)
    finally:
        driver.quit()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    text = section(big, base, args.repeats)
    print(text)
    print(json.dumps({"big": big, "base": base}, indent=1))
    if not args.no_write:
        write_section(BENCHMARKS_MD, SECTION, text)


if __name__ == "__main__":
    main()
