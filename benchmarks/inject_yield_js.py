"""Injected defects in JavaScript/TypeScript libraries (Stryker's mutators): mutants tried, tasks kept, why the
rest were rejected, what each step costs; then oracle and null runs of each pack.

    .venv/bin/python benchmarks/inject_yield_js.py --repo semver=../shared/research-data/mining-repos/npm__node-semver.git
        [--repo ts-pattern=...gvergnaud__ts-pattern.git] [--count 10] [--out-root tasks] [--resume] [--report-only]
        [--note ...]

For each NAME=REPO (a git URL, folder or bare repository, cloned to a work tree first), `evalharness packs
inject --repo CLONE --count N --out OUT_ROOT/inject-js-NAME`, then `evalharness run -p OUT -H oracle -H null`,
then writes BENCHMARKS.md ("## Injected defects in JavaScript/TypeScript, yield"). `--report-only` reads what
the packs and their saved runs already hold. Rows of repositories not named this time are kept as they were.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402
from benchmarks.inject_yield import EVALHARNESS, _gate_line, save_run  # noqa: E402

TITLE = "Injected defects in JavaScript/TypeScript, yield"


def clone(source: str, into: Path) -> Path:
    """A work-tree clone of ``source`` (a bare repository is copied first: a read-only one lacks refs/)."""
    path = Path(source)
    if path.is_dir() and not (path / ".git").exists():
        copy = into / path.name
        shutil.copytree(path, copy)
        (copy / "refs").mkdir(exist_ok=True)
        source = str(copy)
    target = into / "repo"
    subprocess.run(["git", "clone", "-q", source, str(target)], check=True)
    return target


def inject(name: str, source: str, out: Path, count: int, seed: int, resume: bool = False) -> None:
    """``packs inject`` on a clone kept beside the pack (``OUT_ROOT/.clone-NAME``): the pack's source names it, and the
    oracle and null runs that follow build task images from it (a temporary clone was gone by then). ``resume``
    keeps an earlier clone, so an interrupted injection's validated mutants are taken up again."""
    keep = out.parent / f".clone-{name}"
    if resume and (keep / "repo" / ".git").is_dir():
        repo = keep / "repo"
    else:
        shutil.rmtree(keep, ignore_errors=True)
        keep.mkdir(parents=True)
        repo = clone(source, keep)
    subprocess.run([*EVALHARNESS, "packs", "inject", "--repo", str(repo), "--count", str(count), "--out",
                    str(out), "--seed", str(seed), "--force"], cwd=REPO, check=False)


def run_pack(out: Path) -> dict:
    done = subprocess.run([*EVALHARNESS, "run", "-p", str(out), "-H", "oracle", "-H", "null", "--format", "json"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    return save_run(out, done.stdout, done.stderr)


def kept_rows(old: str, names: set[str]) -> tuple[list[str], list[str]]:
    """The table rows and verdict lines the section already holds for repositories not measured this time, so a
    run on one repository keeps the other's figures (its notes are given again with ``--note``)."""
    rows = [line for line in old.splitlines() if line.startswith("| ") and not line.startswith("| repository")
            and line.split("|")[1].strip() not in names]
    lines = [line for line in old.splitlines() if line.startswith("- ") and ": verdicts " in line
             and line[2:].split(":")[0] not in names]
    return rows, lines


def _kept_by_module(report: dict) -> str:
    """'; kept by module M n, ...', most first ('' for a report without the count)."""
    kept = sorted((report.get("kept_by_module") or {}).items(), key=lambda item: (-item[1], item[0]))
    return "; kept by module " + ", ".join(f"{module} {n}" for module, n in kept) if kept else ""


def section(packs: dict[str, Path], notes: list[str], old: str = "") -> str:
    rows, lines = kept_rows(old, set(packs))
    for name, out in packs.items():
        report = json.loads((out / "injection-report.json").read_text())
        run_path = out / "run-oracle-null.json"
        scores = {s["config"]: s for s in json.loads(run_path.read_text()).get("scores", [])} \
            if run_path.exists() else {}

        def rate(harness: str) -> str:
            s = next((v for k, v in scores.items() if k.startswith(harness)), None)
            if not s:
                return "not run"
            return f"{s['resolve_rate']:.0%} of {s['n_tasks']}" if s.get("resolve_rate") is not None else "no usable trial"

        decided = report["tried"] - report["by_verdict"].get("not_needed", 0)
        rows.append(f"| {name} | {report['sites']} | {report['base_tests_passing']} | {report['tried']} | "
                    f"{report['kept']} of {report['count']} | {report['kept'] / max(decided, 1):.0%} of {decided} | "
                    f"{report['prescreen_s_per_mutant']} | {report['validate_s_per_candidate']} | "
                    f"{report['seconds'] / 60:.0f} min | {rate('oracle')} | {rate('null')} |")
        lines.append(f"- {name}: verdicts " + ", ".join(f"{k} {n}" for k, n in report["by_verdict"].items())
                     + "; by Stryker mutator (tried/kept) " + ", ".join(
                         f"{c} {v['tried']}/{v['kept']}" for c, v in report["by_class"].items())
                     + _gate_line(report) + _kept_by_module(report))
    return "\n".join([
        "`evalharness packs inject --repo REPO --count N` on the shared JavaScript/TypeScript repositories",
        "(Stryker's instrumenter 8.7.1 in the pack's image; the pack's own runner and report), then `evalharness",
        "run -H oracle -H null` on each pack. Produced by `benchmarks/inject_yield_js.py`; seconds are those of the",
        "machine it ran on (named in the notes), pre-screen: the whole suite once per mutant.",
        "",
        "| repository | sites | tests passing at base | mutants tried | kept | yield | pre-screen s/mutant | "
        "validation s/candidate | wall | oracle | null |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows, "", *lines, "", *[f"- {note}" for note in notes]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", default=[], metavar="NAME=REPO", required=True)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-root", type=Path, default=REPO / "tasks")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--resume", action="store_true",
                        help="Keep OUT_ROOT/.clone-NAME from an interrupted run (its validated mutants are reused).")
    parser.add_argument("--note", action="append", default=[], help="A line added under the table (repeatable).")
    args = parser.parse_args()
    packs = {}
    for item in args.repo:
        name, _, source = item.partition("=")
        out = args.out_root / f"inject-js-{name}"
        if not args.report_only:
            inject(name, source, out, args.count, args.seed, args.resume)
            run_pack(out)
        packs[name] = out
    bench = REPO / "BENCHMARKS.md"
    held = bench.read_text().partition(f"## {TITLE}\n")[2].partition("\n## ")[0] if bench.exists() else ""
    write_section(bench, TITLE, section(packs, args.note, held))


if __name__ == "__main__":
    main()
