"""SWE-bench Lite, built offline and validated for real: does the gold patch resolve, and what does it cost?

    .venv/bin/python benchmarks/swebench_validate.py [--pack-dir DIR] [--reruns 3] [--workers 2] [--repo R ...]

Imports the Lite records from ../shared/research-data/swebench-lite/ into a pack whose repositories
come from the offline mirrors in ../shared/research-data/swebench-repos/ (the 134 tasks of the 8
repositories mirrored there), runs `evalharness packs validate --run` on every one of them (reports
already in the pack folder are kept, so an interrupted benchmark resumes), then writes to
BENCHMARKS.md ("## SWE-bench Lite, offline validation"):

- per repository: tasks, verdicts, gold-resolves fraction; every task that is not ok, with its reason;
- per environment: build time and image size; per task: the size its task image adds to the
  environment image and its build time; grading time (one gold run) per task.

Build times are those measured when each image was built (a report keeps them); an image that
already existed before any report was written has no build time, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402

DATA = REPO.parent / "shared" / "research-data"
LITE = DATA / "swebench-lite" / "swe-bench-lite.json"
MIRRORS = DATA / "swebench-repos"
TITLE = "SWE-bench Lite, offline validation"
MB = 1024 * 1024
GOAL_MB = 10
"""A task layer is the base commit packed plus what git does not track (data/prepare_task.sh)."""


def mirrored_repos(mirrors: Path) -> set[str]:
    return {p.name[:-4].replace("__", "/", 1) for p in mirrors.glob("*.git")}


def run_validation(pack_dir: Path, task_ids: list[str], reruns: int, workers: int) -> None:
    cmd = [sys.executable, "-m", "evalharness.cli", "packs", "validate", str(pack_dir), "--run", "--reruns",
           str(reruns), "-j", str(workers)]
    for task_id in task_ids:
        cmd += ["--task", task_id]
    subprocess.run(cmd, check=False)  # exit 1 when some task is not ok: the table says which and why


def image_sizes(tags: set[str]) -> dict[str, int]:
    import docker

    client = docker.from_env()
    sizes = {}
    for tag in tags:
        try:
            sizes[tag] = client.images.get(tag).attrs["Size"]
        except docker.errors.ImageNotFound:
            pass
    return sizes


def environment_images(key: str) -> set[str]:
    import docker

    images = docker.from_env().images.list(filters={"label": f"evalharness.environment={key}"})
    return {t for image in images for t in image.tags if t.startswith("evalharness/env.")}


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "–"


def table(reports: dict[str, dict], repo_of: dict[str, str], reruns: int) -> str:
    by_repo: dict[str, Counter] = defaultdict(Counter)
    for task_id, report in reports.items():
        by_repo[repo_of[task_id]][report["verdict"]] += 1
    verdicts = sorted({v for c in by_repo.values() for v in c}, key=lambda v: (v != "ok", v))
    ok = sum(c["ok"] for c in by_repo.values())
    runs = Counter(r.get("reruns", reruns) for r in reports.values() if "runs" in r)
    how = ", ".join(f"{n} gold run{'s' if n != 1 else ''} for {count} task{'s' if count != 1 else ''}"
                    for n, count in sorted(runs.items(), reverse=True))
    lines = [f"{len(reports)} tasks (every Lite task of the 8 mirrored repositories); one empty-patch run each and "
             f"{how or 'no run'}. **Gold resolves on {ok}/{len(reports)} = {ok / len(reports):.1%}.**", "",
             "| repository | tasks | " + " | ".join(verdicts) + " |", "|---|---:|" + "---:|" * len(verdicts)]
    for repo in sorted(by_repo):
        counts = by_repo[repo]
        lines.append(f"| {repo} | {sum(counts.values())} | " + " | ".join(str(counts.get(v, 0)) for v in verdicts) + " |")
    bad = sorted((r["verdict"], t, r["reason"]) for t, r in reports.items() if r["verdict"] != "ok")
    if bad:
        lines += ["", "Tasks that are not ok, with the measured reason (`validation/<id>.json` holds the test output):",
                  "", "| task | verdict | reason |", "|---|---|---|"]
        lines += [f"| {t} | {v} | {reason[:300].replace('|', '/')} |" for v, t, reason in bad]

    envs: dict[str, dict] = {}
    for report in reports.values():
        if "env_image" in report or "image" in report:
            env = envs.setdefault(report["environment"], {"tasks": 0, "build_s": None, "tags": set(),
                                                          "task_build_s": [], "grade_s": [], "images": []})
            env["tasks"] += 1
            if report.get("env_image"):
                env["tags"].add(report["env_image"])
            if report.get("env_build_s") is not None:
                env["build_s"] = report["env_build_s"]
            if report.get("task_build_s") is not None:
                env["task_build_s"].append(report["task_build_s"])
            env["images"].append(report.get("image"))
            env["grade_s"] += [g["seconds"] for g in report.get("runs", {}).get("gold", [])]
    for key, env in envs.items():
        if not env["tags"]:  # a report written before reports named their environment image
            env["tags"] |= environment_images(key)
    tags = {t for e in envs.values() for t in e["tags"]} | {i for e in envs.values() for i in e["images"] if i}
    sizes = image_sizes(tags)
    lines += ["", "Per environment (one image per repository and version): build time, image size, and per task "
              "the size its task image adds and its build time (medians); grading time is one gold run, container "
              "start to verdict (median).", "",
              "| environment | tasks | env build s | env image MB | task layer MB (median / max) | task build s | "
              "grading s |", "|---|---:|---:|---:|---:|---:|---:|"]
    all_layers, all_grades = [], []
    for key in sorted(envs):
        env = envs[key]
        env_size = max((sizes.get(t, 0) for t in env["tags"]), default=0)
        layers = [(sizes[i] - env_size) / MB for i in env["images"] if i in sizes and env_size]
        all_layers += layers
        all_grades += env["grade_s"]
        layer = f"{statistics.median(layers):.1f} / {max(layers):.1f}" if layers else "–"
        build = f"{env['build_s']:.0f}" if env["build_s"] is not None else "(built earlier)"
        lines.append(f"| {key} | {env['tasks']} | {build} | {env_size / MB:.0f} | {layer} | "
                     f"{_median(env['task_build_s'])} | {_median(env['grade_s'])} |")
    if all_layers:
        within = sum(layer <= GOAL_MB for layer in all_layers)
        lines += ["", f"Task layers: median {statistics.median(all_layers):.1f} MB, max {max(all_layers):.1f} MB; "
                      f"{within}/{len(all_layers)} within the {GOAL_MB} MB goal (issue 22: median at most "
                      f"{GOAL_MB} MB; before it, median 56.6 MB, max 101.1 MB, the work tree stored four times). "
                      "Grading: median "
                      f"{statistics.median(all_grades):.0f} s per gold run over {len(all_grades)} runs."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack-dir", type=Path, default=Path("/tmp/evalharness-bench/swebench-lite"))
    parser.add_argument("--reruns", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repo", action="append", default=None, help="Only these repositories (owner/name).")
    parser.add_argument("--report-only", action="store_true", help="Tabulate the reports already in --pack-dir.")
    parser.add_argument("--output", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    if not LITE.is_file() or not MIRRORS.is_dir():
        sys.exit(f"needs {LITE} and {MIRRORS} (see ../shared/research-data/SOURCES.md)")
    if not args.report_only:
        subprocess.run([sys.executable, "-m", "evalharness.cli", "packs", "import", "swebench", str(LITE), "--out",
                        str(args.pack_dir), "--repo-mirror", str(MIRRORS), "--force"], check=True)
    records = json.loads(LITE.read_text())
    repos = set(args.repo) if args.repo else mirrored_repos(MIRRORS)
    repo_of = {r["instance_id"]: r["repo"] for r in records}
    task_ids = [r["instance_id"] for r in records if r["repo"] in repos]
    if not args.report_only:
        run_validation(args.pack_dir, task_ids, args.reruns, args.workers)
    reports = {}
    for task_id in task_ids:
        path = args.pack_dir / "validation" / f"{task_id}.json"
        if path.is_file():
            reports[task_id] = json.loads(path.read_text())
    missing = sorted(set(task_ids) - set(reports))
    text = table(reports, repo_of, args.reruns)
    if missing:
        text += f"\n\n{len(missing)} task(s) have no report yet: {', '.join(missing[:10])}"
    write_section(args.output, TITLE, "`benchmarks/swebench_validate.py`. " + text)
    print(text)


if __name__ == "__main__":
    main()
