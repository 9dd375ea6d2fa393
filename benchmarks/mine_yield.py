"""Mining tasks from real history: how many candidates become validated tasks, and what each costs.

    .venv/bin/python benchmarks/mine_yield.py [--repo more-itertools|humanize|node-semver|ts-pattern ...]
        [--workers 2] [--mining-root DIR] [--report-only]

For each repository of ../shared/research-data/mining-repos/ (full histories), runs `evalharness packs mine`
over the window chosen below (resumable: finished candidates are kept), then `evalharness run -H oracle -H null`
on the mined pack (its result is kept beside the pack, `oracle-null.json`), and writes to BENCHMARKS.md
("## Mining tasks from history"): commits in the window, candidates (commits changing tests and library
code: `.py` files, or a Node project's `.js`/`.ts` and kin), validated tasks, the yield (validated / candidates), seconds per candidate examined in Docker
(discovery and validation together), every verdict's count, the reason of each rejection made in Docker (Node rows), and the oracle and null resolve
rates. A repository's ``workers`` (candidates at once) replaces --workers where set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from evalharness.quality.gate import VERDICTS as GATE_VERDICTS  # noqa: E402

MINING = REPO.parent / "shared" / "research-data" / "mining-repos"
TITLE = "Mining tasks from history"
WINDOWS = {
    "more-itertools": {
        "repo": "more-itertools__more-itertools.git", "since": "2020-01-01", "until": "2023-01-01",
        "why": "the flat layout and a test suite that runs on Python 3.11 with today's pytest; from 2023 on, "
               "tests/test_more.py holds a few slow tests (a 17 s DFT round trip, concurrency tests) that make one "
               "graded run take about 50 s on this loaded 2-core machine against about 10 s for a 2021 base, and a "
               "candidate takes 5 runs; before 2020 the suite targets Python 2.7/3.5",
        "note": "Before the quality gate and the per-base install (2026-12-01), the same window validated 55 of 70 "
                "candidates."},
    "humanize": {
        "repo": "python-humanize__humanize.git", "since": "2020-03-01", "until": None,
        "why": "after the move to a src/ layout and pyproject.toml (February 2020); the earlier history (2010-2014) "
               "is Python 2 code. Each task image installs the project again at its own base commit "
               "(`environment.task_setup`), so no test sees the tip's version",
        "note": "Before the quality gate and the per-base install (2026-12-01), the same window validated 42 of the "
                "same 67 candidates."},
}
WINDOWS.update({
    "node-semver": {
        "repo": "npm__node-semver.git", "since": "2023-06-01", "until": None, "max": 13, "language": "node",
        "workers": 1,
        "why": "tap 16 at every base (it arrived in March 2022) and a wider window than the first Node measurement "
               "(`--since 2024-01-01 --max 8`, docs/languages.md), cut (`--max`) where a 40-minute budget ran out (at the table's "
               "seconds per candidate, mined at the same time as ts-pattern)",
        "note": "Oracle and null ran with the pack's test command given tap's `--timeout=300` after mining (as Node "
                "packs are now detected): a first run with tap's own 30 s per file, on this loaded machine, had tap "
                "cut `test/bin/semver.js` short and graded the oracle unresolved on `3905343045dc` (tap's cut is "
                "now an unreadable run, never failed tests)."},
    "ts-pattern": {
        "repo": "gvergnaud__ts-pattern.git", "since": "2024-01-01", "until": None, "max": 9, "language": "node",
        "workers": 1,
        "why": "jest + ts-jest with a package-lock at every base; from 2024 the history is mostly merged fix "
               "branches touching `src/` and `tests/`, cut (`--max`) where a 40-minute budget ran out (at the table's seconds "
               "per candidate, mined at the same time as node-semver); earlier windows add the v4/v5 rewrites the gate "
               "rejects as too large"},
})
DISCOVER_RERUNS, RERUNS = 1, 3
DOCKER_REJECTIONS = 8  # reasons listed per repository, the rest counted


def repository(root: Path, cfg: dict) -> Path:
    """The full history a window is mined from; a bare copy missing ``refs/`` (which git then refuses) is an
    error naming the cure, not a mining run that finds no commits."""
    path = root / cfg["repo"]
    if not path.is_dir():
        sys.exit(f"no {path}: the benchmark needs the shared mining repositories")
    if (path / "objects").is_dir() and not (path / "refs").is_dir():
        sys.exit(f"{path} has no refs/ folder, so git does not take it for a repository: copy it, add empty "
                 "refs/heads and refs/tags, and pass the copy's folder as --mining-root")
    return path


def mine(name: str, cfg: dict, pack: Path, workers: int, root: Path = MINING) -> None:
    cmd = [sys.executable, "-m", "evalharness.cli", "packs", "mine", "--repo", str(repository(root, cfg)),
           "--out", str(pack), "--since", cfg["since"], "--discover-reruns", str(DISCOVER_RERUNS),
           "--reruns", str(RERUNS), "-j", str(cfg.get("workers", workers))] + (
               ["--until", cfg["until"]] if cfg["until"] else []) + (["--max", str(cfg["max"])] if cfg.get("max") else [])
    subprocess.run(cmd, check=False)  # 0/1/3: the report says which candidates ended how


def oracle_null(pack: Path, workers: int, runs_dir: Path, run_id: str | None = None) -> dict:
    """Resolve rates of oracle and null on the mined pack (run once, or read from the runs ``run_id`` names, comma
    separated, made earlier; the result is kept beside the pack with a digest of the tasks it covers)."""
    kept = pack / "oracle-null.json"
    tasks = hashlib.sha256((pack / "tasks.jsonl").read_bytes()).hexdigest()
    if run_id is None and kept.exists() and json.loads(kept.read_text()).get("tasks_sha256") == tasks:
        return json.loads(kept.read_text())
    cmd = (["report", *run_id.split(","), "--format", "json"] if run_id else
           ["run", "-p", str(pack), "-H", "oracle", "-H", "null", "--workers", str(workers), "--format", "json"])
    done = subprocess.run([sys.executable, "-m", "evalharness.cli", *cmd, "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, check=False)
    report = json.loads(done.stdout[done.stdout.index("{"):done.stdout.rindex("}") + 1])
    run_id = run_id or (report.get("runs") or [{}])[0].get("run_id")
    result = {"tasks_sha256": tasks, "exit_code": done.returncode, "run_id": run_id,
              "rates": {s["config"]: s["resolve_rate"] for s in report["scores"]},
              "n_tasks": {s["config"]: s["n_tasks"] for s in report["scores"]}, "outcomes": report["outcomes"]}
    kept.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def gate_now(pack: Path) -> dict:
    """Today's pure gate over the kept tasks (``packs gate``, no Docker): checks added after the pack was mined
    (a rerun keeps validated tasks as they are) reject some of them; their ids and verdicts."""
    subprocess.run([sys.executable, "-m", "evalharness.cli", "packs", "gate", str(pack)], capture_output=True,
                   check=False)
    report = json.loads((pack / "gate-report.json").read_text())
    return {"tasks": report["totals"]["tasks"], "rejected": {t["instance_id"]: t["verdicts"] for t in report["tasks"]
                                                              if not t["passed"]}}


def section(rows: list[tuple[str, dict, dict, dict | None]], language: str = "python",
            pack_gate: dict | None = None) -> str:
    pack_gate = pack_gate or {}
    lines = ["| repository | window | commits | candidates | validated | yield | s per candidate in Docker "
             "(mean / median) | oracle | null |", "|---|---|---|---|---|---|---|---|---|"]
    details = []
    for name, cfg, report, runs in rows:
        t = report["totals"]
        seconds = [c["seconds"] for c in report["candidates"] if c.get("examined")]
        window = f"{cfg['since']} to {cfg['until'] or 'the snapshot'}" + (
            f", newest {cfg['max']} candidates" if cfg.get("max") else "")
        rate = (lambda k: f"{runs['rates'][k]:.0%} of {runs['n_tasks'][k]}" if runs and k in runs["rates"] else "not run")
        lines.append(f"| {name} | {window} | {t['commits']} | {t['candidates']} | {t['validated']} | "
                     f"{t['yield']:.0%} | {statistics.mean(seconds):.0f} / {statistics.median(seconds):.0f} | "
                     f"{rate('oracle/none')} | {rate('null/none')} |" if seconds and t["yield"] is not None else
                     f"| {name} | {window} | {t['commits']} | {t['candidates']} | {t['validated']} | - | - | - | - |")
        counts = ", ".join(f"{v} {n}" for v, n in t["by_verdict"].items())
        gated = {v: n for v, n in t["by_verdict"].items() if v in GATE_VERDICTS}
        gate = (f" The quality gate (statement, gold patch) rejected {sum(gated.values())} of {t['candidates']} "
                "candidates before Docker: " + ", ".join(f"{v} {n}" for v, n in gated.items()) + ".") if gated else ""
        docker = docker_rejections(report) + regated(pack_gate.get(name)) if language != "python" else ""
        text = (f"- **{name}**: window chosen for {cfg['why']}. Verdicts: {counts}.{gate}{docker} "
                f"{cfg.get('note', '')}").rstrip()
        details.append(text + (f" Oracle/null run `{runs['run_id']}` (exit {runs['exit_code']})." + misses(runs)
                               if runs else ""))
    files = "library `.py` files" if language == "python" else "library `.js`/`.ts` files (and kin)"
    workers = " or ".join(sorted({str(cfg.get("workers", 2)) for _, cfg, _, _ in rows})) + " candidate(s) at once"
    return "\n".join([
        f"`benchmarks/mine_yield.py`: `evalharness packs mine` on the full histories in "
        f"`../shared/research-data/mining-repos/`, discovery from {DISCOVER_RERUNS} run per side, validation with "
        f"{RERUNS} gold reruns, {workers}, on a 2-core machine shared with other validation work "
        f"(times are wall-clock under that load). A candidate is a first-parent commit changing test files and "
        f"{files}; yield = validated / candidates. Every commit's verdict and reason: "
        "`mining-report.json` in the pack.", "", *lines, "", *details])


def docker_rejections(report: dict) -> str:
    """The candidates that reached Docker and were rejected there, each with the start of its reason."""
    examined = [c for c in report["candidates"] if c.get("examined")]
    rejected = [c for c in examined if c["verdict"] != "ok"]
    if not rejected:
        return f" {len(examined)} candidates reached Docker, none rejected there."
    shown = [f"`{c['commit'][:10]}` {c['verdict']} ({c['reason'].splitlines()[0][:160].rstrip()})"
             for c in rejected[:DOCKER_REJECTIONS]]
    more = f"; and {len(rejected) - DOCKER_REJECTIONS} more" if len(rejected) > DOCKER_REJECTIONS else ""
    return (f" {len(examined)} candidates reached Docker, {len(rejected)} rejected there: " + "; ".join(shown)
            + more + ".")


def regated(now: dict | None) -> str:
    if not now:
        return ""
    if not now["rejected"]:
        return f" Today's gate (`packs gate`) passes all {now['tasks']} kept tasks."
    return (f" Today's gate (`packs gate`; checks added after this run) rejects {len(now['rejected'])} of the "
            f"{now['tasks']} kept tasks: " + ", ".join(f"`{i}` {'/'.join(v)}" for i, v in now["rejected"].items()) + ".")


def misses(runs: dict) -> str:
    """Every outcome of oracle and null when oracle missed a task or null resolved one (a task error is not an
    agent's outcome: the counts say which it was)."""
    rates = runs.get("rates", {})
    if rates.get("oracle/none") == 1 and rates.get("null/none") == 0:
        return ""
    outcomes = runs.get("outcomes", {})
    return " Not as expected; outcomes: " + "; ".join(
        f"{config} " + ", ".join(f"{k} {n}" for k, n in sorted(outcomes.get(config, {}).items()))
        for config in ("oracle/none", "null/none")) + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", choices=sorted(WINDOWS), help="Only these (repeatable).")
    parser.add_argument("--pack-root", type=Path, default=REPO / "tasks", help="Where the mined packs go.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs-dir", type=Path, default=REPO / "runs")
    parser.add_argument("--report-only", action="store_true", help="Only write the section from existing reports.")
    parser.add_argument("--skip-run", action="store_true", help="Do not run oracle/null (reuse a kept result).")
    parser.add_argument("--from-run", action="append", default=[], metavar="NAME=RUN_ID",
                        help="Read a repository's oracle/null rates from runs made earlier (RUN_A,RUN_B; in --runs-dir).")
    parser.add_argument("--mining-root", type=Path, default=MINING,
                        help="Folder of the full histories (a copy, when the shared one lacks refs/).")
    parser.add_argument("--output", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    from_run = dict(item.split("=", 1) for item in args.from_run)
    rows: dict[str, list] = {}
    gates: dict[str, dict] = {}
    for name in args.repo or sorted(WINDOWS):
        cfg, pack = WINDOWS[name], args.pack_root / f"mined-{name}"
        if not args.report_only:
            mine(name, cfg, pack, args.workers, args.mining_root)
        report = json.loads((pack / "mining-report.json").read_text())
        runs = None
        if name in from_run:
            runs = oracle_null(pack, args.workers, args.runs_dir, from_run[name])
        elif not (args.report_only or args.skip_run):
            runs = oracle_null(pack, args.workers, args.runs_dir)
        elif (pack / "oracle-null.json").exists():
            runs = json.loads((pack / "oracle-null.json").read_text())
        rows.setdefault(cfg.get("language", "python"), []).append((name, cfg, report, runs))
        if cfg.get("language", "python") != "python":
            gates[name] = gate_now(pack)
    for language, found in rows.items():
        title = TITLE if language == "python" else f"{TITLE}: {language.capitalize()}"
        write_section(args.output, title, section(found, language, gates))
        print(f"{args.output}: section '{title}' written")


if __name__ == "__main__":
    main()
