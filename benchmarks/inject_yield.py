"""Injected defects in real PyPI libraries: how many mutants are tried, how many become validated tasks, and
what each costs; then oracle and null runs of each pack.

    .venv/bin/python benchmarks/inject_yield.py [--lib cachetools --lib inflection] [--count 30] [-j 2]
                                                [--report-only]

For each library, `evalharness packs inject --pack benchmarks/inject/<lib> --count N --out tasks/inject-<lib>`
(the sdist fetched by name, version and sha256 at image build time; its own test suite), then
`evalharness run -p tasks/inject-<lib> -H oracle -H null`, then writes BENCHMARKS.md ("## Injected defects,
yield"): per library the mutants tried and kept, verdicts, rejections by reason, modules never mutated as test
code, per class tried/kept, kept per module, pre-screen seconds per mutant, validation seconds per candidate,
oracle and null resolve rates.
`--report-only` skips the injection and runs and reads what the packs and run logs already hold.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402

TITLE = "Injected defects, yield"
EVALHARNESS = [str(REPO / ".venv" / "bin" / "evalharness")]


def inject(lib: str, count: int, workers: int, seed: int) -> None:
    out = REPO / "tasks" / f"inject-{lib}"
    subprocess.run([*EVALHARNESS, "packs", "inject", "--pack", str(REPO / "benchmarks" / "inject" / lib),
                    "--count", str(count), "--out", str(out), "--seed", str(seed), "-j", str(workers), "--force"],
                   cwd=REPO, check=False)


def run_pack(lib: str) -> dict:
    out = REPO / "tasks" / f"inject-{lib}"
    done = subprocess.run([*EVALHARNESS, "run", "-p", str(out), "-H", "oracle", "-H", "null", "--format", "json",
                           "-j", "2"], cwd=REPO, capture_output=True, text=True, check=False)
    return save_run(out, done.stdout, done.stderr)


def save_run(out: Path, stdout: str, stderr: str = "") -> dict:
    """The JSON report of `evalharness run --format json` (the object starting on a line of its own)."""
    start = next((i for i, line in enumerate(stdout.splitlines(keepends=True)) if line.startswith("{")), None)
    if start is None:
        raise SystemExit(f"no JSON report in the run's output; stderr ends:\n{stderr[-2000:]}")
    text = "".join(stdout.splitlines(keepends=True)[start:])
    report, _ = json.JSONDecoder().raw_decode(text)
    (out / "run-oracle-null.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def section(libs: list[str], notes: list[str] = ()) -> str:
    rows, classes, lines = [], [], []
    for lib in libs:
        out = REPO / "tasks" / f"inject-{lib}"
        report = json.loads((out / "injection-report.json").read_text())
        run_path = out / "run-oracle-null.json"
        scores = {}
        if run_path.exists():
            run = json.loads(run_path.read_text())
            scores = {s["config"]: s for s in run.get("scores", [])}

        def rate(name: str) -> str:
            s = next((v for k, v in scores.items() if k.startswith(name)), None)
            return f"{s['resolve_rate']:.0%} of {s['n_tasks']}" if s else "not run"

        kept_classes = [c for c, v in report["by_class"].items() if v["kept"]]
        decided = report["tried"] - report["by_verdict"].get("not_needed", 0)
        rows.append(f"| {report['library']} | {report['sites']} | {report['tried']} | {report['kept']} | "
                    f"{report['kept'] / decided:.0%} of {decided} | {len(kept_classes)} | "
                    f"{report['prescreen_s_per_mutant']} | {report['validate_s_per_candidate']} | "
                    f"{report['seconds'] / 60:.0f} min | {rate('oracle')} | {rate('null')} |")
        for name, v in report["by_class"].items():
            classes.append(f"| {report['library']} | {name} | {v['tried']} | {v['kept']} | "
                           + ", ".join(f"{k} {n}" for k, n in v.items() if k not in ("tried", "kept", "ok")) + " |")
        lines.append(f"- {report['library']}: verdicts " + ", ".join(f"{k} {n}" for k, n in report["by_verdict"].items())
                     + "; kept by module " + ", ".join(f"{m} {n}" for m, n in report["kept_by_module"].items())
                     + _gate_line(report))
    return "\n".join([
        "`evalharness packs inject --pack benchmarks/inject/LIB --count 30` on two PyPI sdists (their own test",
        "suites, no network in the sandboxes), then `evalharness run -H oracle -H null` on each pack. Measured on",
        "the 2-core development machine shared with other jobs (load average 3 to 9), so seconds are upper",
        "bounds. Yield: kept tasks over the mutants that got a final verdict (`not_needed`: pre-screened",
        "candidates left unvalidated once enough tasks were kept). Pre-screen: one run of the suite per mutant (stopping at the first failure) in one sandbox;",
        "validation: discovery (1 run of each side) plus validation (1 empty, 2 gold runs), fresh sandboxes, a",
        "task image per candidate. Produced by `benchmarks/inject_yield.py`.",
        "",
        "| library | sites | mutants tried | tasks kept | yield | classes kept | pre-screen s/mutant | "
        "validation s/candidate | wall | oracle | null |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows, "", *lines, "",
        *[f"- {note}" for note in notes], "",
        "| library | class | tried | kept | other verdicts |", "|---|---|---|---|---|", *classes])


def _gate_line(report: dict) -> str:
    """Rejections by reason and modules never mutated, or a note for a report older than the gate."""
    if "rejected_by_reason" not in report:
        return "; (report made before the injection gate: no rejection reasons)"
    rejected = ", ".join(f"{v} {r['count']}" for v, r in report["rejected_by_reason"].items()) or "none"
    excluded = ", ".join(f"{p} ({why})" for p, why in report["excluded_modules"].items()) or "none"
    return f"; rejected by reason {rejected}; never mutated (test code) {excluded}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append", default=None)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--note", action="append", default=[], help="A line added under the table (repeatable).")
    parser.add_argument("--run-output", nargs=2, metavar=("LIB", "FILE"), action="append", default=[],
                        help="Take LIB's oracle/null run report from FILE (the stdout of a run --format json).")
    args = parser.parse_args()
    libs = args.lib or ["cachetools", "inflection"]
    for lib, path in args.run_output:
        save_run(REPO / "tasks" / f"inject-{lib}", Path(path).read_text())
    if not args.report_only:
        for lib in libs:
            inject(lib, args.count, args.workers, args.seed)
            run_pack(lib)
    write_section(REPO / "BENCHMARKS.md", TITLE, section(libs, args.note))


if __name__ == "__main__":
    main()
