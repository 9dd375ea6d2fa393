"""Check every task of a pypi_sdist pack for real, without Docker (the `--gold` audit by hand).

Usage: .venv/bin/python tasks/quickstart/verify.py [PACK_DIR] [--task ID ...] [--keep]

Mirrors how the sandbox builds a task: download the sdist with pip and check its sha256,
install the pack's `pip` requirements into a fresh venv, copy the sdist's top folder, run the
`setup` commands, apply `defect_patch` with `git apply` and commit. Then, per task:

  empty   no patch: every FAIL_TO_PASS test fails, every PASS_TO_PASS test passes
  gold    the gold `patch` applied with `git apply`: every listed test passes
  fresh   `git apply --check` of the gold patch on the pristine sdist fails
          (it fixes the injected defect, not the released code)

Results are parsed from the test command's JUnit XML by the grader's own parser.
Exits 1 when any check fails. Needs git, network access to PyPI, and the project's venv.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from evalharness.grading.parsers import TestRun, TestStatus, parse
from evalharness.packs import Pack, load_pack
from evalharness.types import TaskSpec

HERE = Path(__file__).resolve().parent
GIT_ID = ["-c", "user.name=verify", "-c", "user.email=verify@localhost", "-c", "commit.gpgsign=false"]


def _run(cmd: list[str] | str, cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 600,
         check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout, shell=isinstance(cmd, str))
    if check and proc.returncode != 0:
        raise RuntimeError(f"command failed ({proc.returncode}): {cmd}\n{proc.stdout}\n{proc.stderr}")
    return proc


def fetch_sdist(pack: Pack, into: Path) -> Path:
    """Download the pinned sdist with pip, check its sha256, extract it; return its top folder."""
    src = pack.spec.environment.source
    if src.kind != "pypi_sdist":
        raise SystemExit(f"error: verify.py handles pypi_sdist sources only, not {src.kind!r}")
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
          f"{src.name}=={src.version}", "-d", str(into / "dl")], into)
    archive = next((into / "dl").iterdir())
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if src.sha256 and digest != src.sha256:
        raise SystemExit(f"error: {archive.name} has sha256 {digest}, the manifest says {src.sha256}")
    print(f"sdist {archive.name} sha256 {digest} ({'matches' if src.sha256 else 'not pinned'})")
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 refuses unsafe members
            tar.extractall(into / "src", filter="data")
        else:
            tar.extractall(into / "src")
    (top,) = (into / "src").iterdir()
    return top


def make_venv(pack: Pack, into: Path) -> dict[str, str]:
    """A fresh venv with the pack's pip requirements; returns the environment with it first on PATH."""
    venv = into / "venv"
    _run(["python3", "-m", "venv", str(venv)], into)
    if pack.spec.environment.pip:
        _run([str(venv / "bin" / "pip"), "install", "-q", *pack.spec.environment.pip], into)
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", VIRTUAL_ENV=str(venv))
    env.pop("PYTHONPATH", None)
    return env


def build_tree(pack: Pack, task: TaskSpec, pristine: Path, dest: Path, env: dict[str, str]) -> None:
    """What the image build does: copy, setup commands, defect patch, one commit."""
    shutil.copytree(pristine, dest)
    for command in pack.spec.environment.setup:
        _run(command, dest, env=env, timeout=pack.spec.timeouts.build_s)
    _run(["git", "init", "-q"], dest)
    if task.defect_patch:
        _run(["git", "apply", "-"], dest, stdin=task.defect_patch)
    _run(["git", "add", "-A"], dest)
    _run(["git", *GIT_ID, "commit", "-q", "-m", "task base"], dest)


def run_tests(pack: Pack, task: TaskSpec, tree: Path, env: dict[str, str]) -> dict[str, TestStatus]:
    junit = tree.parent / f"{tree.name}.junit.xml"
    junit.unlink(missing_ok=True)
    command = pack.spec.test_command.format(test_files=" ".join(task.test_files), junit_xml=str(junit))
    proc = _run(command, tree, env=env, timeout=pack.spec.timeouts.tests_s, check=False)
    xml = junit.read_text() if junit.exists() else None
    return parse(pack.spec.log_parser, TestRun(log=proc.stdout + proc.stderr, exit_code=proc.returncode,
                                               junit_xml=xml))


def _wrong(results: dict[str, TestStatus], tests: list[str], want_pass: bool) -> list[str]:
    """Tests whose status is not what we want (a missing test counts as wrong)."""
    bad = []
    for test in tests:
        status = results.get(test)
        passed = status is TestStatus.PASSED
        if status is None or passed != want_pass:
            bad.append(f"{test}={status.value if status else 'missing'}")
    return bad


def verify_task(pack: Pack, task: TaskSpec, pristine: Path, work: Path, env: dict[str, str]) -> dict[str, str]:
    tree = work / task.instance_id
    build_tree(pack, task, pristine, tree, env)
    before = run_tests(pack, task, tree, env)
    empty = _wrong(before, task.FAIL_TO_PASS, False) + _wrong(before, task.PASS_TO_PASS, True)
    applied = _run(["git", "apply", "-"], tree, stdin=task.patch, check=False)
    if applied.returncode != 0:
        gold = [f"gold patch does not apply: {' '.join(applied.stderr.split())}"]
    else:
        gold = _wrong(run_tests(pack, task, tree, env), task.FAIL_TO_PASS + task.PASS_TO_PASS, True)
    fresh = _run(["git", "apply", "--check", "-"], pristine, stdin=task.patch, check=False)
    return {"empty": "; ".join(empty) or "ok", "gold": "; ".join(gold) or "ok",
            "fresh": "ok" if fresh.returncode != 0 else "gold patch applies to the pristine sdist"}


def _verify_or_report(pack: Pack, task: TaskSpec, pristine: Path, work: Path, env: dict[str, str]) -> dict[str, str]:
    """One task's failure (defect patch that does not apply, a timeout) is a row, not a crash."""
    try:
        return verify_task(pack, task, pristine, work, env)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        reason = str(e).splitlines()[0]
        return {"empty": f"build or test run failed: {reason}", "gold": "not run", "fresh": "not run"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pack", nargs="?", default=str(HERE))
    ap.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder and print its path")
    args = ap.parse_args(argv)
    pack = load_pack(args.pack)
    unknown = sorted(set(args.task) - {t.instance_id for t in pack.tasks})
    if unknown:
        raise SystemExit(f"error: no task {', '.join(unknown)} in pack {pack.name}")
    tasks = [t for t in pack.tasks if not args.task or t.instance_id in args.task]
    work = Path(tempfile.mkdtemp(prefix=f"verify-{pack.name}-"))
    try:
        pristine = fetch_sdist(pack, work)
        env = make_venv(pack, work)
        rows = [(t, _verify_or_report(pack, t, pristine, work / "trees", env)) for t in tasks]
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\n| task | F2P | P2P | empty patch | gold patch | gold on pristine |\n|---|---|---|---|---|---|")
    for t, r in rows:
        print(f"| {t.instance_id} | {len(t.FAIL_TO_PASS)} | {len(t.PASS_TO_PASS)} | "
              f"{r['empty']} | {r['gold']} | {r['fresh']} |")
    failed = [t.instance_id for t, r in rows if set(r.values()) != {"ok"}]
    print(f"\n{len(rows) - len(failed)}/{len(rows)} tasks verified" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
