"""Fidelity on real agents' patches: our grader against the official SWE-bench verdicts of CodeR (issue 23).

    PYTHONPATH=. .venv/bin/python benchmarks/predictions_fidelity.py [--pack /tmp/eh-lite2] [--work-dir DIR] \
        [--workers 2] [--run-id RUN_ID] [--official-logs DIR_OR_GIT_DIR] [--report-only]

Needs a SWE-bench Lite pack imported and validated by `benchmarks/swebench_validate.py` (its
`validation/<id>.json` reports say which tasks are `ok`: gold resolves, the empty patch does not) and
../shared/research-data/swebench-preds/coder-20240604-lite-mirrored.jsonl (CodeR's Lite predictions of June
2024 with the official harness's verdict, `official_resolved`, and the verdict re-derived from the official eval
log, `log_derived_reason`; see ../shared/research-data/SOURCES.md).

It writes the predictions of the ok tasks to WORK_DIR/coder-ok.jsonl and grades them with
`evalharness grade-predictions` (`--run-id` resumes or re-reads a run instead of starting one), then compares each
trial's outcome (resolved or not) with `official_resolved`. An empty prediction is not resolved on both sides (the
record's verdict is null: the official harness never ran it). Writes "## Fidelity on real agents' patches (CodeR,
SWE-bench Lite)" to BENCHMARKS.md: the counts, our outcomes and flags, agreement where the tests ran, every
disagreement and every trial flagged `tampered` or `suspicious_code` with its diagnosis.

Diagnoses are read by a person from both test outputs (our trial's result.json and test_output.txt, the official
eval log `logs/<id>.20240604_CodeR.eval.log` of NL2Code/CodeR at the record's commit; `--official-logs` takes a
folder of those logs or a git directory of that repository) and kept in DIAGNOSES and GUARD_DIAGNOSES below. A
disagreement or flag with no diagnosis yet is listed as `unknown`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._report import write_section  # noqa: E402

DATA = REPO.parent / "shared" / "research-data"
PREDS = DATA / "swebench-preds" / "coder-20240604-lite-mirrored.jsonl"
TITLE = "Fidelity on real agents' patches (CodeR, SWE-bench Lite)"
MODEL = "20240604_CodeR"
TESTS_RAN = {"resolved", "unresolved", "tampered"}
"""Outcomes whose test run produced per-test results. test_run_error (no test reported), tests_timed_out,
patch_apply_failed, no_patch and the infrastructure outcomes did not."""

# Disagreements, read from both test outputs: task -> (diagnosis, one line of evidence).
# diagnosis is one of: ours wrong, official environment, flaky, unknown.
DIAGNOSES: dict[str, tuple[str, str]] = {
    "mwaskom__seaborn-3190": (
        "official environment",
        "the official log's only failure is tests/_core/test_scales.py::TestContinuous::test_tick_minor (minor ticks "
        "[0, .25, .5, .75, 1] vs [.25, .5, .75, 1]) under matplotlib 3.9.0, which its unpinned install pulled in; "
        "it passes here on the environment's pinned matplotlib, as the FAIL_TO_PASS test_interval_with_bools does on "
        "both"),
    "pylint-dev__pylint-5859": (
        "ours wrong",
        "every test passes (11/11), the official log agrees; `tampered` is a false positive of the guard: the "
        "TestFixme tests are wrapped by @set_config from pylint/testutils/decorator.py (the repository's own test "
        "helper, not in the patch, which touches pylint/checkers/misc.py and adds pylint_output.txt), so their code "
        "object is that file's, which the guard reads as a test running code not from its test file"),
    "sphinx-doc__sphinx-8713": (
        "official environment",
        "the official log: `Applied Patch (pred_try)` on the clean tree, then, after the environment's install step "
        "rewrote setup.py and tox.ini, `Patch Apply Failed; (pred)` on setup.py:15 and tox.ini:4; CodeR's patch "
        "carries those same install edits (its own environment had them). Here it applies and all 46 tests pass "
        "(the napoleon fix is real)"),
}

# Trials flagged tampered or suspicious_code: task -> (diagnosis, one line of evidence). A diagnosis says whether the
# flag is a false positive of the guard (issue 23) or a real sign.
GUARD_DIAGNOSES: dict[str, tuple[str, str]] = {
    "mwaskom__seaborn-2848": (
        "false positive",
        "the frame reads are at `<decorator-gen-7>:2`, code compiled by scipy's vendored decorator "
        "(scipy/_lib/decorator.py) at import, before any test; the guard counts any code whose file name starts with "
        "`<` as written by the patch. The patch changes one line of seaborn/axisgrid.py; no static finding"),
    "mwaskom__seaborn-3010": (
        "false positive", "same as seaborn-2848: `<decorator-gen-7>:2` is scipy's generated code, not the patch "
                          "(seaborn/_stats/regression.py); no static finding"),
    "mwaskom__seaborn-3190": (
        "false positive", "same as seaborn-2848: `<decorator-gen-7>:2` is scipy's generated code, not the patch "
                          "(seaborn/_core/scales.py); no static finding"),
    "mwaskom__seaborn-3407": (
        "false positive", "same as seaborn-2848: all 9 guard notes are at `<decorator-gen-7>:2`, scipy's generated "
                          "code, not the patch (seaborn/axisgrid.py); no static finding"),
    "pydata__xarray-3364": (
        "false positive",
        "the frame reads are at `<__array_function__ internals>:180`, numpy's generated dispatch wrappers, which the "
        "guard takes for patch code (file name starting with `<`); no static finding in the patch"),
    "pydata__xarray-4493": (
        "false positive (changes the outcome)",
        "CodeR's patch only adds two one-line empty files (repro_script.py, test_reproduce.py): it changes no code. "
        "The run was stopped in test_dataset.py::TestDataset::test_unstack_sparse on ctypes.create_string_buffer/"
        "string_at at `<__array_function__ internals>:180`, i.e. numpy's dispatch wrapper on the sparse path, "
        "taken for patch code. Without the stop it would be unresolved, like the official verdict"),
    "pylint-dev__pylint-5859": (
        "false positive (changes the outcome)",
        "all 11 tests pass; the TestFixme tests are wrapped by @set_config in pylint/testutils/decorator.py (an "
        "unchanged repository test helper), so the guard sees them run code not from their test file. Official: "
        "resolved; ours would be too"),
    "sphinx-doc__sphinx-10451": (
        "false positive",
        "the patch changes only tox.ini (no Python at all); the sys._getframe read is at `<string>:1`, code compiled "
        "from a string (annotations evaluated during tests/test_ext_autodoc_configs.py::test_autodoc_type_aliases), "
        "which the guard takes for patch code. No static finding"),
    "sphinx-doc__sphinx-8282": (
        "false positive",
        "line 1250 of sphinx/ext/autodoc/__init__.py is `sig = super().format_signature(**kwargs)`, an existing call "
        "the patch only re-indented under a new `if`; the sys._getframe and f_code reads happen below it in unchanged "
        "code (the pattern of logging's findCaller under Sphinx's warnings), attributed to the first patched line "
        "on the stack. No static finding"),
    "sphinx-doc__sphinx-8721": (
        "false positive (changes the outcome)",
        "the mirror of test_viewcode_epub_default failed on `assert not (app.outdir / "
        "'_modules/spam/mod1.xhtml').exists()`: Sphinx's test fixtures share one copy of the ext-viewcode testroot "
        "(and its _build/epub) per session, and the mirror ran last, after test_viewcode_epub_enabled had written "
        "that file. An order-dependent test, not code that tells names apart. All 4 required tests pass; the "
        "official run never ran the tests (Patch Apply Failed on setup.py/tox.ini, as for sphinx-8713)"),
}


def ok_tasks(pack: Path) -> set[str]:
    ok = set()
    for path in (pack / "validation").glob("*.json"):
        if json.loads(path.read_text()).get("verdict") == "ok":
            ok.add(path.stem)
    return ok


def load_predictions(path: Path) -> dict[str, dict]:
    return {r["instance_id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def pack_name(pack: Path) -> str:
    text = (pack / "pack.yaml").read_text() if pack.is_dir() else pack.read_text()
    match = re.search(r"^name:\s*(\S+)", text, re.M)
    if not match:
        sys.exit(f"{pack}: no name in its manifest")
    return match.group(1).strip("'\"")


def grade(pack: Path, preds_file: Path, work: Path, workers: int, run_id: str | None) -> str:
    cmd = [sys.executable, "-m", "evalharness.cli", "grade-predictions", "-p", str(pack), "-j", str(workers),
           "--runs-dir", str(work / "runs"), "--report-dir", str(work / "reports")]
    cmd += ["--resume", run_id] if run_id else ["-P", str(preds_file)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    found = run_id
    for line in proc.stdout:  # exit 1 or 3 when trials failed: the table counts them
        print(line, end="", flush=True)
        match = re.match(r"run (\S+?):", line)
        if match and not found:
            found = match.group(1)
    proc.wait()
    if not found:
        sys.exit("grade-predictions printed no run id")
    return found


def official_log(logs: Path | None, record: dict) -> str | None:
    """The official eval log of one record, from a folder of logs or a git directory of NL2Code/CodeR."""
    if logs is None:
        return None
    name = record["source"]["log"]
    if (logs / "HEAD").is_file():
        proc = subprocess.run(["git", "--git-dir", str(logs), "show", f"{record['source']['commit']}:{name}"],
                              capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else None
    path = logs / Path(name).name
    return path.read_text(errors="replace") if path.is_file() else None


def official_ran(record: dict) -> bool:
    """The official eval log has test results (the prediction applied and the tests finished)."""
    reason = record.get("log_derived_reason") or ""
    return record.get("official_resolved") is not None and not any(
        word in reason for word in ("Patch Apply Failed", "Tests Timed Out", "no_log"))


def cell(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def analyse(run_dir: Path, pack: str, records: dict[str, dict], ok: set[str], logs: Path | None) -> str:
    graded = {}
    for task_id in sorted(ok & set(records)):
        path = run_dir / pack / task_id / "predictions" / MODEL / "seed-0" / "result.json"
        if path.is_file():
            graded[task_id] = json.loads(path.read_text())
    preds = sorted(ok & set(records))
    empty = [t for t in preds if not (records[t].get("model_patch") or "").strip()]
    no_verdict = [t for t in preds if records[t].get("official_resolved") is None and t not in empty]
    outcomes = Counter(r["outcome"] for r in graded.values())
    flags = Counter(f for r in graded.values() for f in r.get("flags") or [])

    rows, agree_all, ran, agree_ran, both, agree_both = [], 0, 0, 0, 0, 0
    for task_id, result in graded.items():
        official = records[task_id].get("official_resolved")
        if official is None and task_id not in empty:
            continue  # no official eval log: nothing to compare
        official = bool(official)
        ours = result["outcome"] == "resolved"
        tests_ran = result["outcome"] in TESTS_RAN
        agree_all += ours == official
        if tests_ran:
            ran += 1
            agree_ran += ours == official
            if official_ran(records[task_id]):
                both += 1
                agree_both += ours == official
        if ours != official:
            rows.append((task_id, result, official, tests_ran))
    compared = sum(1 for t in graded if not (records[t].get("official_resolved") is None and t not in empty))

    lines = [
        "`benchmarks/predictions_fidelity.py`: CodeR's SWE-bench Lite predictions (June 2024, "
        "../shared/research-data/swebench-preds/) graded with `grade-predictions` on every Lite task of the 8 mirrored "
        "repositories whose environment validates (`ok` in the offline validation above), against the official "
        "harness's verdict (`official_resolved`, from CodeR's `results.json`).",
        "",
        f"- predictions on ok tasks: **{len(preds)}**, of which {len(empty)} empty (not resolved on both sides: "
        f"`no_patch` here, never run officially) and {len(no_verdict)} with a patch but no official verdict "
        f"(no eval log; graded, not compared: {', '.join(no_verdict) or 'none'})",
        f"- graded (a trial recorded): **{len(graded)}**; compared with an official verdict: **{compared}**",
        "- our outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()),
        "- flags: " + (", ".join(f"{k} {v}" for k, v in flags.most_common()) or "none")
        + f"; trials flagged `tampered` {flags.get('tampered', 0)}, "
        f"`suspicious_code` {flags.get('suspicious_code', 0)}",
        f"- tests ran (outcome {', '.join(sorted(TESTS_RAN))}): **{ran}**; agree **{agree_ran}**, disagree "
        f"**{ran - agree_ran}**: **agreement where the tests ran {agree_ran / ran:.1%}**" if ran else "- tests ran: 0",
        f"- tests ran on both sides (ours as above, and the official log has test results: not `Patch Apply Failed` "
        f"or `Tests Timed Out`): **{both}**; agree **{agree_both}**, disagree **{both - agree_both}**: **agreement "
        f"{agree_both / both:.1%}**" if both else "- tests ran on both sides: 0",
        f"- over every compared trial (empty, not applied and errored ones too): agree {agree_all} of {compared}"
        + (f" ({agree_all / compared:.1%})" if compared else ""),
    ]
    missing = [t for t in preds if t not in graded]
    if missing:
        lines.append(f"- **not graded yet** (no result.json): {len(missing)}: {', '.join(missing[:12])}"
                     + (" …" if len(missing) > 12 else ""))

    lines += ["", "Every disagreement (ours and the official verdict differ), diagnosed from both test outputs: our "
              "trial's result.json and test_output.txt, the official eval log (its verdict re-derived: "
              "`log_derived_reason`).", "",
              "| task | ours | official | tests ran | our reason | official log | diagnosis | evidence |",
              "|---|---|---|---|---|---|---|---|"]
    for task_id, result, official, tests_ran in rows:
        kind, evidence = DIAGNOSES.get(task_id, ("unknown", "not read yet"))
        lines.append(f"| {task_id} | {result['outcome']} | {'resolved' if official else 'not resolved'} | "
                     f"{'yes' if tests_ran else 'no'} | {cell(result.get('reason') or '', 160)} | "
                     f"{cell(records[task_id].get('log_derived_reason') or '', 80)} | {kind} | {cell(evidence, 400)} |")
    if not rows:
        lines.append("| (none) | | | | | | | |")
    else:
        by_kind = Counter(DIAGNOSES.get(t, ("unknown", ""))[0] for t, _, _, _ in rows)
        lines += ["", "Disagreements by diagnosis: " + ", ".join(f"{k} {v}" for k, v in by_kind.most_common()) + "."]

    flagged = [(t, r) for t, r in graded.items() if {"tampered", "suspicious_code"} & set(r.get("flags") or [])]
    lines += ["", "Every trial flagged `tampered` or `suspicious_code` (false-positive candidates of the issue 23 "
              "guard), from result.json `reason`/`evidence` and the suspicious findings:", "",
              "| task | outcome | flags | official | evidence (ours) | diagnosis |", "|---|---|---|---|---|---|"]
    for task_id, result in flagged:
        grade_ = result.get("grade") or {}
        evidence = "; ".join(grade_.get("evidence") or []) or result.get("reason") or ""
        for finding in result.get("suspicious") or []:
            evidence += f"; {json.dumps(finding)[:200]}"
        kind, why = GUARD_DIAGNOSES.get(task_id, ("unknown", "not read yet"))
        official = records[task_id].get("official_resolved")
        lines.append(f"| {task_id} | {result['outcome']} | {', '.join(result.get('flags') or [])} | "
                     f"{'–' if official is None else 'resolved' if official else 'not resolved'} "
                     f"({cell(records[task_id].get('log_derived_reason') or '', 40)}) | {cell(evidence, 300)} | "
                     f"**{kind}**: {cell(why, 500)} |")
    if not flagged:
        lines.append("| (none) | | | | | |")
    else:
        kinds = [GUARD_DIAGNOSES.get(t, ("unknown", ""))[0] for t, _ in flagged]
        fp = sum(k.startswith("false positive") for k in kinds)
        changed = sum("changes the outcome" in k for k in kinds)
        lines += ["", f"Flagged trials diagnosed false positives of the guard: **{fp} of {len(flagged)}** "
                      f"({changed} of them change the outcome to `tampered`), {kinds.count('unknown')} not "
                      "diagnosed yet."]
    if logs is not None:
        have = sum(official_log(logs, records[t]) is not None for t, _, _, _ in rows)
        lines += ["", f"Official eval logs read for {have} of {len(rows)} disagreements (from {logs})."]
    times = [(r["started_at"], r["finished_at"]) for r in graded.values() if r.get("started_at")]
    if times:
        from datetime import datetime
        span = datetime.fromisoformat(max(f for _, f in times)) - datetime.fromisoformat(min(s for s, _ in times))
        lines += ["", f"Wall time of the grading run: {span.total_seconds() / 60:.0f} min for {len(graded)} trials "
                      "(first start to last finish, task images built as needed)."]
    lines += ["", f"Run: `{run_dir.name}` (`evalharness report {run_dir.name}`)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", type=Path, default=Path("/tmp/eh-lite2"), help="A validated SWE-bench Lite pack.")
    parser.add_argument("--predictions", type=Path, default=PREDS)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/eh-fidelity"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--run-id", default=None, help="Resume (or re-read) this grade-predictions run.")
    parser.add_argument("--report-only", action="store_true", help="With --run-id: only tabulate, run nothing.")
    parser.add_argument("--official-logs", type=Path, default=None,
                        help="Folder of <id>.20240604_CodeR.eval.log, or a git directory of NL2Code/CodeR.")
    parser.add_argument("--output", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args()
    if not (args.pack / "validation").is_dir():
        sys.exit(f"{args.pack}: no validation/ reports (run benchmarks/swebench_validate.py first)")
    records = load_predictions(args.predictions)
    ok = ok_tasks(args.pack)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    preds_file = args.work_dir / "coder-ok.jsonl"
    if not args.run_id:  # a resumed run keeps its own copy of the predictions (RUN_FOLDER/predictions/)
        preds_file.write_text("".join(
            json.dumps({k: records[t][k] for k in ("instance_id", "model_name_or_path", "model_patch")}) + "\n"
            for t in sorted(ok & set(records))))
    if args.report_only:
        if not args.run_id:
            sys.exit("--report-only needs --run-id")
        run_id = args.run_id
    else:
        run_id = grade(args.pack, preds_file, args.work_dir, args.workers, args.run_id)
    run_dir = args.work_dir / "runs" / run_id
    text = analyse(run_dir, pack_name(args.pack), records, ok, args.official_logs)
    write_section(args.output, TITLE, text)
    print(text)


if __name__ == "__main__":
    main()
