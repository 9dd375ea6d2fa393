"""Grade a patch in a fresh sandbox from the pristine task image (docs/threat-model.md).

1. **Surface.** As root, in a grader-owned git (evalharness.grading.surface) whose objects are the
   image's read-only copy of the base commit, the patch is applied to a scratch index and git lists
   what it changes (``--raw -z``). ``policy.decide_surface`` decides each path: applied, restored to
   base (test files, runner configuration and extensions), dropped, or rejected (``.git``).
2. **Graded tree.** The task's test_patch is applied to the same index and the work tree is moved
   from the base commit to that tree by git itself (``read-tree -m -u``): no other program writes it,
   nothing follows a symlink out of it, and a restore that fails is an outcome, never ignored.
3. **Guarded run** (pytest packs). The grader owns the invocation: plugin autoloading off, only the
   pack's ``-p`` plugins, a launcher (``data/eh_pytest.py``) whose settings and nonce come on a
   root-opened standard input and whose results go to a root-opened descriptor, and two canary
   tests planted beside the task's tests. ``verdict.decide_guarded`` judges the records.
   A test command that is not a plain pytest invocation runs as the pack wrote it (unguarded) and is
   judged by ``decide`` from its log and JUnit XML, cross-checked with the exit code; a Node pack's gets
   canaries in its required tests' own files and mirror tests beside them first (``canary_js``,
   ``mirror_js``).
"""

from __future__ import annotations

import json
import random
import secrets
import shlex
from dataclasses import dataclass, field
from importlib import resources

from evalharness.errors import FileTooLarge
from evalharness.grading.attribution import written_lines
from evalharness.grading import canary_js, mirror_js
from evalharness.grading.canary import Canaries, make_canaries
from evalharness.grading.mirror import MirrorPlan, plan_mirrors, recheck_alone, unmirrorable_args
from evalharness.grading.parsers import TestRun, TestStatus, consistent_with_exit_code, match_test_ids, parse
from evalharness.grading.extract import BASE_OBJECTS, SCRATCH_GIT
from evalharness.grading.policy import blobs_needed, decide_surface, in_trees, test_trees
from evalharness.grading.suspicious import scan_patch
from evalharness.grading.surface import (GIT_SAFE_CONFIG, INFO_ATTRIBUTES, RAW_DIFF_ARGS, parse_numstat_z, parse_raw_z,
                                         sandbox_git_env)
from evalharness.grading.verdict import decide_guarded
from evalharness.languages import node_surface
from evalharness.languages.node_surface import grading_language, is_node_command, is_python_command
from evalharness.packs import PackSpec
from evalharness.sandbox.base import GRADER_DIR, Sandbox, files_tar
from evalharness.templating import fill
from evalharness.types import Flag, Outcome, TaskSpec

WORK = "/tmp"
JUNIT_XML = f"{GRADER_DIR}/priv/junit.xml"
"""Where an unguarded test command writes JUnit XML (the placeholder {junit_xml})."""
PASSING = (TestStatus.PASSED, TestStatus.XFAIL)
SCANNED = {"python": ("python",), "node": ("python", "javascript")}
"""File kinds the suspicious-code scan reads, by the pack's language (a Python pack's scan is unchanged)."""
PRIV, PUB = f"{GRADER_DIR}/priv", f"{GRADER_DIR}/pub"
LAUNCHER = f"{PUB}/eh_pytest.py"
MAX_RESULTS_BYTES = 32 * 1024 * 1024
OUTPUT_HEAD_TAIL = 1_000_000
_STRIPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONBREAKPOINT",
                 "PYTEST_DEBUG", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONWARNINGS", "COV_CORE_SOURCE")


@dataclass
class GradeResult:
    outcome: Outcome
    reason: str
    tests: dict[str, str] = field(default_factory=dict)
    """Status of every FAIL_TO_PASS and PASS_TO_PASS test ('missing' when the run did not report it)."""
    all_tests: dict[str, str] = field(default_factory=dict)
    """Status of every test the run reported, listed or not (what discovering a task's lists reads)."""
    test_exit_code: int | None = None
    test_output: str = ""
    junit_xml: str | None = None
    patch_applied: bool = False
    touched_test_files: list[str] = field(default_factory=list)
    touched_test_config: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    surface: list[dict[str, str]] = field(default_factory=list)
    """Every path the patch touches and what the grader did with it."""
    evidence: list[str] = field(default_factory=list)
    """Why a run was judged tampered, or what the audit hook noted, one line each."""
    recheck: list[tuple[str, str]] = field(default_factory=list)
    """Mirror pairs that disagreed in the session, run alone before the verdict (not stored)."""
    session_status: dict[str, str] = field(default_factory=dict)
    suspicious: list[dict] = field(default_factory=list)
    """Suspicious added lines of the patch (grading.suspicious.Finding.to_dict); result.json's top-level
    "suspicious" (trial.py moves it there, redacted, and leaves it out of result.json's "grade")."""
    runner: str = "guarded"
    results: bytes | None = None
    """The guarded run's records (results.jsonl in the run folder)."""
    nonce: str = ""
    canaries: list[str] = field(default_factory=list)
    canary_token: str = ""
    node_mirrors: dict[str, str] = field(default_factory=dict)
    """A Node pack's mirrored FAIL_TO_PASS tests: required id -> its mirror's id (``grading/mirror_js.py``)."""
    workdir: str = "/testbed"

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("results", "recheck", "session_status")}
        return {**out, "outcome": self.outcome.value, "flags": sorted(self.flags)}


_SURFACE_SCRIPT = r"""
set -u
x=$1 base=$2; shift 2
""" + SCRATCH_GIT + r"""
git "$@" read-tree "$base" 2>"$x/err" || exit 71
if [ -s "$x/patch.diff" ]; then
  git "$@" apply --cached --whitespace=nowarn "$x/patch.diff" 2>"$x/err"     || git "$@" apply --cached --whitespace=nowarn --recount -C1 "$x/patch.diff" 2>>"$x/err" || exit 10
fi
git "$@" """ + " ".join(RAW_DIFF_ARGS) + r""" "$base" -- > "$x/raw" 2>"$x/err" || exit 72
: > "$x/tp"
if [ -s "$x/test_patch.diff" ]; then git "$@" apply --numstat -z "$x/test_patch.diff" > "$x/tp" 2>"$x/err" || exit 20; fi
printf '%s
' "$(stat -c %s "$x/raw")"; cat "$x/raw" "$x/tp"
"""

_TREE_SCRIPT = r"""
set -u
x=$1 base=$2 work=$3; shift 3
if [ -n "$EH_BUNDLE" ]; then tar -x -C / --no-overwrite-dir -f - || exit 70; fi
g() { env $EH_GITENV git "$@"; }    # the grader's git: its environment only for git, not for the tests
g0() { env $EH_GITENV GIT_INDEX_FILE="$x/index0" git "$@"; }
g "$@" update-index -z --index-info < "$x/reset" 2>"$x/err" || exit 23
if [ -s "$x/test_patch.diff" ]; then g "$@" apply --cached --whitespace=nowarn "$x/test_patch.diff" 2>"$x/err" || exit 20; fi
tree=$(g "$@" write-tree 2>"$x/err") || exit 21
g0 "$@" read-tree "$base" 2>"$x/err" || exit 71
g0 "$@" update-index -q --refresh >/dev/null 2>&1
g0 "$@" read-tree -m -u "$base" "$tree" 2>"$x/err" || exit 22
chown -R 1000:1000 "$work"
# no bytecode cache is read in the guarded run: the image's own are dropped (the launcher stops a run that reads one)
find "$work" -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null
if [ -s "$x/canary.py" ]; then install -o 1000 -g 1000 -m 0644 "$x/canary.py" "$work/$EH_CANARY" 2>"$x/err" || exit 24; fi
# mirror tests: copies of the FAIL_TO_PASS tests' files under random names (root writes them, from the task's own
# restored files); a copy that cannot be made turns mirrors off for this run, which the verdict then says
if [ -s "$x/mirror.json" ]; then
  python3 -s -I "$x/eh_mirror.py" "$work" < "$x/mirror.json" 2>"$x/mirror.err" || cp "$x/stdin.plain" "$x/stdin"
fi
# the task's test files, the canaries' and the mirrors' stay root's through the run (code under test that a
# conftest imports cannot rewrite a test module before pytest reads it)
if [ -s "$x/protect" ]; then python3 -s -I "$x/eh_protect.py" "$work" < "$x/protect" >/dev/null 2>"$x/err" || exit 25; fi
[ -n "$EH_RUN" ] || exit 0
"""

_KILL_LEFTOVERS = r"""
setpriv --reuid=1000 --regid=1000 --clear-groups kill -9 -1 2>/dev/null
# what is left of uid 1000 when no process can be started (a fork bomb at the pids limit): stopped, then killed,
# with the shell's builtins only, so the pipe's last writer goes and the reader ends
for sig in STOP KILL KILL; do
  for d in /proc/[0-9]*; do
    while read -r k v rest; do
      if [ "$k" = "Uid:" ]; then [ "$v" = 1000 ] && kill -s "$sig" "${d#/proc/}" 2>/dev/null; break; fi
    done < "$d/status" 2>/dev/null
  done
done
"""
"""Root ends every process of uid 1000 once a test run has returned: nothing the code under test left behind
writes after it (the results pipe's last writer, or a file the grader is about to read)."""


def end_leftovers(sandbox: Sandbox) -> None:
    """``_KILL_LEFTOVERS`` in ``sandbox``: after a test run of the agent's user, none of its processes lives on (a
    test file a runner started in its own process group outlives the runner's time limit)."""
    code, out, _ = sandbox.exec_bytes(["sh", "-c", _KILL_LEFTOVERS + "exit 0\n"], timeout=60)
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader could not end the test run's processes (exit {code}): {out[-300:]!r}")

_RUN_SCRIPT = r"""
cd "$work" || exit 90
rm -f "$x/channel"
# the results channel: a pipe root drains as the run goes (no seek, no rewrite, nothing to read back), into a
# root-only file; the test process holds only the write end
mkfifo -m 600 "$x/channel" || exit 91
: > "$x/results" && chmod 600 "$x/results" || exit 91
cat "$x/channel" > "$x/results" &
reader=$!
started=$(date +%s)
setpriv --reuid=1000 --regid=1000 --clear-groups env """ + " ".join(f"-u {v}" for v in _STRIPPED_ENV) + r""" \
  -u EH_RUN -u EH_CANARY -u EH_GITENV -u EH_LIMIT -u EH_LAUNCHER -u EH_MAX_RESULTS -u EH_HALF -u EH_BUNDLE \
  HOME=/home/agent PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1 \
  timeout -k 5 "$EH_LIMIT" python -s "$EH_LAUNCHER" < "$x/stdin" 3> "$x/channel" > "$x/output" 2>&1
code=$?
took=$(($(date +%s) - started))
""" + _KILL_LEFTOVERS + r"""
wait "$reader"
r=$(stat -c %s "$x/results"); o=$(stat -c %s "$x/output")
printf 'EH %s %s %s %s\n' "$code" "$r" "$o" "$took"
head -c "$EH_MAX_RESULTS" "$x/results"
if [ "$o" -le $((2 * EH_HALF)) ]; then cat "$x/output"; else
  head -c "$EH_HALF" "$x/output"; printf '\n[... %s bytes dropped by evalharness ...]\n' $((o - 2 * EH_HALF))
  tail -c "$EH_HALF" "$x/output"; fi
exit 0
"""


def pytest_args(test_command: str) -> list[str] | None:
    """The pytest arguments of a plain pytest test command (None when it is anything else).

    ``{test_files}`` stays a token of its own; ``--junitxml`` goes (the guarded run reports itself).
    """
    if any(c in test_command for c in ";&|`$<>\n"):
        return None
    tokens = shlex.split(test_command)
    for i, token in enumerate(tokens):
        if token == "pytest" or token.endswith("/pytest") or token == "py.test":
            head, rest = tokens[:i], tokens[i + 1:]
            break
        if token == "-m" and i + 1 < len(tokens) and tokens[i + 1] == "pytest":
            head, rest = tokens[:i], tokens[i + 2:]
            break
    else:
        return None
    if any(not (t.startswith("python") or "=" in t) for t in head):
        return None
    out, skip = [], False
    for i, token in enumerate(rest):
        if skip:
            skip = False
            continue
        if "{junit_xml}" in token:
            continue
        if token == "--junitxml" or token == "--junit-xml":
            skip = True
            continue
        out.append(token)
    return out


def _git_env(x: str) -> dict[str, str]:
    return {**sandbox_git_env(f"{x}/home"), "GIT_DIR": f"{x}/g", "GIT_INDEX_FILE": f"{x}/index",
            "EH_ATTRIBUTES": INFO_ATTRIBUTES.decode(), "EH_BASE_OBJECTS": BASE_OBJECTS, "GIT_LITERAL_PATHSPECS": "1"}


def _env_argv(env: dict[str, str]) -> list[str]:
    return ["env", *[f"{k}={v}" for k, v in env.items()]]


def _tree_failure(sandbox: Sandbox, result: GradeResult, code: int, env: dict[str, str], run_env: dict[str, str],
                  x: str, base: str) -> GradeResult:
    """The graded tree failed at step ``code``: build it again with no patch (``restore.PROBE_PRELUDE``, then the
    same ``_TREE_SCRIPT`` in a freshly rebuilt work tree) and let ``restore.decide_tree_failure`` say whose failure
    it is: the task's (task_error), the patch's (patch_apply_failed), or nobody's yet (infrastructure)."""
    from evalharness.errors import SandboxError
    from evalharness.grading.restore import PROBE_PRELUDE, decide_tree_failure, probe_tree

    message = _err(sandbox, x)
    tree = probe_tree(sandbox.workdir)
    git_env = " ".join(f"{k}={v}" for k, v in {**env, "GIT_WORK_TREE": tree}.items()
                       if k not in ("EH_ATTRIBUTES", "EH_BASE_OBJECTS"))
    probe_env = {**run_env, "EH_GITENV": git_env, "EH_RUN": "", "EH_BUNDLE": ""}
    probe_code, _, _ = sandbox.exec_bytes([*_env_argv(probe_env), "sh", "-c", PROBE_PRELUDE + _TREE_SCRIPT, "sh", x,
                                           base, sandbox.workdir, *GIT_SAFE_CONFIG], stdin=b"", timeout=600,
                                          max_bytes=64 * 1024)
    probe_message = _err(sandbox, x) if probe_code else ""
    decision = decide_tree_failure(code, message, probe_code, probe_message)
    if decision.outcome.is_infra:
        raise SandboxError(decision.reason)
    result.outcome, result.reason = decision.outcome, decision.reason
    result.flags |= decision.flags
    result.test_output = message + (f"\n\nwith no patch: {probe_message}" if probe_message else "")
    return result


def grade(task: TaskSpec, spec: PackSpec, patch: str | bytes, sandbox: Sandbox, *,
          rng: random.Random | None = None) -> GradeResult:
    """Grade ``patch`` for ``task`` in ``sandbox``, a fresh container from the task image."""
    data = patch.encode("utf-8", "surrogateescape") if isinstance(patch, str) else patch
    result = GradeResult(outcome=Outcome.UNRESOLVED, reason="")
    guessed = "node" if is_node_command(spec.test_command) else "python"
    _scan(result, data, guessed)
    base = sandbox.base_commit()
    x = f"{PRIV}/g"
    env = {**_git_env(x), "GIT_WORK_TREE": sandbox.workdir}
    args = pytest_args(spec.test_command)
    canaries = make_canaries(task.test_files, rng) if args is not None else None
    mirrors = plan_mirrors(task.FAIL_TO_PASS, rng) if args is not None and not unmirrorable_args(args) else None
    mirrors = mirrors if mirrors is not None and mirrors.mirrors else None
    nonce = secrets.token_hex(16)
    files = {f"{x}/patch.diff": data if data.strip() else b"",
             f"{x}/test_patch.diff": task.test_patch.encode() if task.test_patch.strip() else b"",
             f"{x}/canary.py": canaries.source.encode() if canaries else b"",
             f"{x}/mirror.json": json.dumps(mirrors.spec()).encode() if mirrors else b""}
    if mirrors:
        files[f"{x}/eh_mirror.py"] = _data_file("eh_mirror.py")
    if args is not None:
        files[LAUNCHER] = _launcher()
    bundle = files_tar(files) if hasattr(sandbox, "write_files") else None
    if bundle is None:
        write_files(sandbox, files)
    script = ("tar -x -C / --no-overwrite-dir -f - || exit 70\n" if bundle is not None else "") + _SURFACE_SCRIPT
    code, out, _ = sandbox.exec_bytes([*_env_argv(env), "sh", "-c", script, "sh", x, base, *GIT_SAFE_CONFIG],
                                      stdin=bundle, timeout=300, max_bytes=64 * 1024 * 1024)
    if code == 10:
        result.outcome, result.reason = Outcome.PATCH_APPLY_FAILED, "patch did not apply"
        result.test_output = _err(sandbox, x)
        return result
    if code == 20:
        result.outcome, result.reason = Outcome.TASK_ERROR, "the task's test_patch is not a patch git can read"
        result.test_output = _err(sandbox, x)
        return result
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader's git failed (exit {code}): {_err(sandbox, x)[-300:]}")
    size_line, _, rest = out.partition(b"\n")
    raw_size = int(size_line)
    changes = parse_raw_z(rest[:raw_size])
    test_patch_files = {p.decode("utf-8", "surrogateescape") for p, old in parse_numstat_z(rest[raw_size:])
                        for p in ((p,) if old is None else (p, old))}
    protected = set(task.test_files) | test_patch_files | set(spec.runner_files)
    language, blobs = _language_and_blobs(sandbox, env, changes, base, spec.test_command)
    if language != guessed:  # the base's root package.json made it a Node pack: its JavaScript is read too
        _scan(result, data, language)
    decision = decide_surface(changes, test_files=protected, blobs=blobs, language=language, base=base)
    result.patch_applied = bool(changes)
    result.surface = [a.to_dict() for a in decision.actions]
    result.flags |= decision.flags
    result.touched_test_files = sorted(a.path for a in decision.actions if a.flag == Flag.TOUCHED_TESTS.value)
    result.touched_test_config = sorted(a.path for a in decision.actions if a.flag == Flag.TOUCHED_CONFIG.value)
    if decision.rejected:
        result.outcome, result.reason = Outcome.PATCH_REJECTED, f"patch rejected: {decision.rejected}"
        return result
    by_raw = {c.path: c for c in changes}
    second = {f"{x}/reset": b"".join(_index_line(by_raw[a.raw]) for a in decision.reset)}
    if args is not None:
        written = written_lines(data, {a.path: a.change for a in decision.applied})
        protected = sorted(protected | ({canaries.path} if canaries else set())
                           | (set(mirrors.copy_paths) if mirrors else set()))
        for name, plan in (("stdin", mirrors), ("stdin.plain", None)):
            second[f"{x}/{name}"] = (json.dumps(_settings(task, args, canaries, nonce, sandbox.workdir,
                                                          written=written, protected=protected, mirrors=plan))
                                     + "\n").encode()
    owned = _task_paths(sandbox, env, base, test_patch_files)
    if language == "python":  # the task's test files and what else its test folders hold stay root's in the run
        trees = test_trees(protected)
        second[f"{x}/protect"] = _protect_list(sorted(set(protected) | {p for p in owned if in_trees(p, trees)}))
        second[f"{x}/eh_protect.py"] = _data_file("eh_protect.py")
    bundle = files_tar(second) if hasattr(sandbox, "write_files") else None
    if bundle is None:
        write_files(sandbox, second)
    limit = spec.timeouts.tests_s
    # the tests run in the image's own environment (its PATH, its LANG); the grader's git gets its own
    git_env = " ".join(f"{k}={v}" for k, v in env.items() if k not in ("EH_ATTRIBUTES", "EH_BASE_OBJECTS"))
    run_env = {"EH_GITENV": git_env, "EH_BUNDLE": "1" if bundle is not None else "",
               "EH_CANARY": canaries.path if canaries else "", "EH_RUN": "1" if args is not None else "",
               "EH_LIMIT": f"{limit:g}", "EH_LAUNCHER": LAUNCHER, "EH_MAX_RESULTS": str(MAX_RESULTS_BYTES),
               "EH_HALF": str(OUTPUT_HEAD_TAIL // 2)}
    script = _TREE_SCRIPT + (_RUN_SCRIPT if args is not None else "")
    code, out, _ = sandbox.exec_bytes([*_env_argv(run_env), "sh", "-c", script, "sh", x, base, sandbox.workdir,
                                       *GIT_SAFE_CONFIG], stdin=bundle or b"", timeout=300 + limit,
                                      max_bytes=MAX_RESULTS_BYTES + OUTPUT_HEAD_TAIL + 4096)
    if code in (20, 21, 22, 23, 24):  # the graded tree cannot be built: the task's failure or the patch's?
        return _tree_failure(sandbox, result, code, {**env, "GIT_INDEX_FILE": f"{x}/pindex"}, run_env, x, base)
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader could not prepare the graded tree (exit {code}): {_err(sandbox, x)[-300:]}")
    if args is None:
        result.runner = "command"
        configs = {k.split(":", 1)[1]: v.decode("utf-8", "replace") for k, v in blobs.items() if k.startswith(f"{base}:")}
        return _run_unguarded(task, spec, sandbox, result, language=language, root_configs=configs, owned=owned,
                              rng=rng)
    result = _judge_guarded(task, spec, sandbox, result, out, canaries, nonce, {a.path for a in decision.applied},
                            mirrors)
    if result.recheck:
        _recheck_mirrors(task, spec, sandbox, result, args, written, protected, run_env,
                         {a.path for a in decision.applied}, canaries, nonce)
    return result


def _protect_list(paths) -> bytes:
    """The input of ``data/eh_protect.py``: the paths, NUL-separated."""
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def _scan(result: GradeResult, data: bytes, language: str) -> None:
    """The suspicious-code scan of the patch for a pack of ``language`` (its findings replace earlier ones)."""
    result.suspicious = [f.to_dict() for f in scan_patch(data, kinds=SCANNED[language])]
    if result.suspicious:
        result.flags.add(Flag.SUSPICIOUS_CODE.value)


def _settings(task: TaskSpec, args: list[str], canaries: Canaries | None, nonce: str, workdir: str, *,
              written: dict[str, list[int] | None] | None = None, protected: list[str] | None = None,
              mirrors: MirrorPlan | None = None, only: list[str] | None = None) -> dict:
    """The launcher's settings line: pytest's arguments with the test files, the canaries and
    ``--continue-on-collection-errors``; ``argv`` is what ``sys.argv`` shows, the same with a decoy
    ``--junitxml`` first. pytest is not given the decoy (no time goes to writing XML nobody reads); a forgery
    that finds it in argv, writes it and leaves early trips."""
    files = list(task.test_files) + ([canaries.path] if canaries else []) + (mirrors.copy_paths if mirrors else [])
    if only is not None:  # node ids run alone (a mirror pair's recheck)
        files = list(only)
    argv_args: list[str] = []
    for token in cheap_report_chars(args):
        argv_args += files if token == "{test_files}" else [token]
    if "{test_files}" not in args:
        argv_args += files
    decoy = f"--junitxml={WORK}/junit-{secrets.token_hex(4)}.xml"
    # a test file the patch broke (an import it removed) must not stop the session: the canaries still run, so
    # the missing tests read as the agent's failure, not as a forgery (pytest >= 3.0 has the option)
    pytest_argv = ["--continue-on-collection-errors", *argv_args]
    # ``written``: the lines the patch wrote, by file, that the launcher's audit hook attributes events to;
    # ``protected``: the task's own test files, where that attribution stops (the test itself is not the patch)
    return {"nonce": nonce, "workdir": workdir, "args": pytest_argv, "argv": [decoy, *pytest_argv],
            "written": written or {}, "protected": protected or [], "mirrors": mirrors.selection if mirrors else {}}


def cheap_report_chars(args: list[str]) -> list[str]:
    """Pure: ``args`` with ``P`` taken out of pytest's ``-r`` characters (``A`` becomes ``fEsxXp``).

    ``P`` prints a PASSES section whose cost grows with the square of the passing tests (pytest looks up each
    one's teardown among all reports): 6,400 passing tests spend most of a minute there. The guarded verdict
    reads the launcher's records, never the printed summary, and the short summary lines stay."""
    out, value_next = [], False
    for token in args:
        if value_next:
            out.append(_without_passes(token))
            value_next = False
        elif token == "-r":
            out.append(token)
            value_next = True
        elif token.startswith("-r") and not token.startswith("-r="):
            out.append("-r" + _without_passes(token[2:]))
        else:
            out.append(token)
    return out


def _without_passes(chars: str) -> str:
    kept = "".join("fEsxXp" if c == "A" else c for c in chars if c != "P")
    return kept or "N"


def write_files(sandbox: Sandbox, files: dict[str, bytes]) -> None:
    """Root's files, in one command where the sandbox can (``write_files``)."""
    many = getattr(sandbox, "write_files", None)
    if many is not None:
        many(files, user="root")
        return
    for path, content in files.items():
        sandbox.write_file(path, content, user="root")


def _index_line(change) -> bytes:
    """``git update-index --index-info`` input that puts one path back as it is at base."""
    if change.status == "A":
        return b"0 " + b"0" * 40 + b"\t" + change.path + b"\0"
    return f"{change.old_mode} {change.old_id}\t".encode() + change.path + b"\0"


def _language_and_blobs(sandbox: Sandbox, env: dict[str, str], changes: list, base: str, command: str
                        ) -> tuple[str, dict[str, bytes]]:
    """The pack's language for the surface policy (``grading_language``: a root ``package.json`` counts), and the
    objects the policy reads. The base's own files are read first: an agent's large blobs can cut the read short,
    never hide the base's configuration."""
    if is_python_command(command) and not is_node_command(command):  # Python's rules alone, as they always were
        needed = blobs_needed(changes, language="python", base=base)
        return "python", _blobs(sandbox, env, sorted(needed)) if needed else {}
    own = [f"{base}:package.json", *(f"{base}:{n}" for n in node_surface.ROOT_CONFIGS)] if base else []
    theirs = sorted(blobs_needed(changes, language="node", base="") - set(own))
    blobs = _blobs(sandbox, env, [*own, *theirs]) if own or theirs else {}
    return grading_language(command, f"{base}:package.json" in blobs), blobs


def _blobs(sandbox: Sandbox, env: dict[str, str], ids) -> dict[str, bytes]:
    """Contents of objects by id (or ``<commit>:<path>``), read in the given order with ``git cat-file --batch``
    (sizes framed, binary-safe); a missing object, or one the output cap cut short, is left out (the policy then
    restores the path: a file it cannot read is never kept)."""
    order = list(ids)
    code, out, _ = sandbox.exec_bytes([*_env_argv(env), "git", *GIT_SAFE_CONFIG, "cat-file", "--batch"],
                                      stdin="".join(i + "\n" for i in order).encode(), timeout=120,
                                      max_bytes=16 * 1024 * 1024)
    blobs, pos = {}, 0
    for oid in order:
        end = out.find(b"\n", pos)
        header = out[pos:end].split()
        if end >= 0 and len(header) == 2 and header[1] == b"missing":
            pos = end + 1
            continue
        if end < 0 or len(header) < 3:
            break
        size = int(header[2])
        if len(out) < end + 1 + size:
            break  # cut short by the cap: never a partial file
        blobs[oid] = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return blobs


def _err(sandbox: Sandbox, x: str) -> str:
    try:
        return sandbox.read_file(f"{x}/err", max_bytes=8000).decode(errors="replace").strip()
    except FileNotFoundError:
        return ""


def _launcher() -> bytes:
    return _data_file("eh_pytest.py")


def _data_file(name: str) -> bytes:
    return resources.files("evalharness.data").joinpath(name).read_bytes()


def _judge_guarded(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, result: GradeResult, out: bytes,
                   canaries: Canaries | None, nonce: str, patched: set[str], mirrors: MirrorPlan | None
                   ) -> GradeResult:
    """Read the framed report of the run (header, capped records, output head and tail) and decide."""
    exit_code, results_size, took, records, output = _framed(out)
    limit = spec.timeouts.tests_s
    result.test_exit_code, result.nonce, result.workdir = exit_code, nonce, sandbox.workdir
    result.canaries = list(canaries.ids) if canaries else []
    result.canary_token = canaries.token if canaries else ""
    result.test_output = output.decode("utf-8", errors="replace")
    if _timed_out(exit_code, took, limit) and not _guard_stopped(records, nonce):
        result.outcome, result.reason = Outcome.TESTS_TIMED_OUT, f"tests timed out after {limit:g} s"
        return result
    if results_size > MAX_RESULTS_BYTES:
        result.outcome, result.reason = Outcome.TAMPERED, (f"tampering: the results channel holds {results_size} "
                                                           "bytes, far more than the grader's plugin writes")
        result.flags.add(Flag.TAMPERED.value)
        return result
    result.results = records
    verdict = decide_guarded(task, records, nonce, exit_code=exit_code, canaries=canaries,
                             patched_files=patched, workdir=sandbox.workdir, patch_applied=result.patch_applied,
                             mirrors=mirrors)
    result.outcome, result.reason, result.tests = verdict.outcome, verdict.reason, verdict.tests
    result.all_tests = verdict.all_tests
    result.flags |= verdict.flags
    result.evidence = verdict.evidence
    result.recheck, result.session_status = verdict.recheck, verdict.session_status
    return result


MAX_RECHECKED = 3
"""Disagreeing mirror pairs run alone at most: each pair costs two short pytest runs."""


def _recheck_mirrors(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, result: GradeResult, args: list[str],
                     written: dict, protected: list[str], run_env: dict[str, str], patched: set[str],
                     canaries: Canaries | None, nonce: str) -> None:
    """Only mirrors disagreed: run each test of each pair alone, in a fresh pytest process of the same graded tree,
    and let ``mirror.recheck_alone`` decide (state the session's tests share is not the code under test)."""
    pairs = result.recheck[:MAX_RECHECKED]
    alone: dict[str, str] = {}
    for node in dict.fromkeys(i for pair in pairs for i in pair):
        verdict = _run_alone(task, spec, sandbox, node, args, written, protected, run_env, patched)
        if verdict.outcome is Outcome.TAMPERED:  # the guard stopped the lone run, or its records are forged
            result.evidence += [f"running {node} alone: {e}" for e in verdict.evidence]
            return
        alone[node] = verdict.tests.get(node, "missing")
    decision, why = recheck_alone(result.session_status.get(pairs[0][0], ""), alone, pairs)
    result.evidence.append(why)
    if decision == "tampered":
        return
    again = decide_guarded(task, result.results or b"", nonce, exit_code=result.test_exit_code or 0,
                           canaries=canaries, patched_files=patched, workdir=sandbox.workdir,
                           patch_applied=result.patch_applied, mirrors=None)
    result.outcome, result.reason, result.tests = again.outcome, again.reason, again.tests
    result.flags = (result.flags - {Flag.TAMPERED.value}) | again.flags
    result.evidence = [*again.evidence, why]
    if decision == "failing" and result.outcome is Outcome.RESOLVED:
        result.outcome, result.reason = Outcome.UNRESOLVED, why


def _run_alone(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, node: str, args: list[str], written: dict,
               protected: list[str], run_env: dict[str, str], patched: set[str]):
    """One guarded pytest run of ``node`` alone (same launcher, a fresh nonce), judged as a task of that one test."""
    from evalharness.types import TaskSpec as _Task

    x = f"{PRIV}/g"
    nonce = secrets.token_hex(16)
    lone = _Task(instance_id=task.instance_id, problem_statement=task.problem_statement, FAIL_TO_PASS=[node],
                 PASS_TO_PASS=[])
    settings = _settings(lone, args, None, nonce, sandbox.workdir, written=written, protected=protected, only=[node])
    write_files(sandbox, {f"{x}/stdin": (json.dumps(settings) + "\n").encode()})
    code, out, _ = sandbox.exec_bytes([*_env_argv(run_env), "sh", "-c", 'x=$1 work=$2\n' + _RUN_SCRIPT, "sh", x,
                                       sandbox.workdir], timeout=300 + spec.timeouts.tests_s,
                                      max_bytes=MAX_RESULTS_BYTES + OUTPUT_HEAD_TAIL + 4096)
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"a mirror's lone run did not report back: {out[-300:]!r}")
    exit_code, _, _, records, _ = _framed(out)
    return decide_guarded(lone, records, nonce, exit_code=exit_code, canaries=None, patched_files=patched,
                          workdir=sandbox.workdir, patch_applied=True)


def _framed(out: bytes) -> tuple[int, int, int, bytes, bytes]:
    """``_RUN_SCRIPT``'s report: (exit code, results size, seconds taken, the capped records, the output)."""
    header, _, rest = out.partition(b"\n")
    fields = header.split()
    if len(fields) != 5 or fields[0] != b"EH":
        from evalharness.errors import SandboxError

        raise SandboxError(f"the guarded test run did not report back: {out[-300:]!r}")
    exit_code, results_size, _, took = (int(f) for f in fields[1:])
    kept = min(results_size, MAX_RESULTS_BYTES)
    return exit_code, results_size, took, rest[:kept], rest[kept:]


def _timed_out(exit_code: int, took: float, limit: float) -> bool:
    """Pure: ``timeout``'s exit statuses count only when the run lasted its limit (a process can exit 124 itself,
    to pass a forgery the verdict would catch off as a timeout)."""
    return exit_code in (124, 137) and took >= limit - 1


def _guard_stopped(records: bytes, nonce: str) -> bool:
    from evalharness.grading.verdict import parse_records

    return any(r.get("t") == "guard" and r.get("action") == "stopped" for r in parse_records(records, nonce)[0])


def test_modules(files: list[str]) -> list[str]:
    """Test files as the dotted labels Django's ``tests/runtests.py`` takes: ``tests/a/test_b.py`` -> ``a.test_b``."""
    labels = []
    for path in files:
        label = path.removeprefix("tests/").removesuffix(".py").replace("/", ".")
        if label not in labels:
            labels.append(label)
    return labels


def _task_paths(sandbox: Sandbox, env: dict[str, str], base: str, test_patch_files: set[str]) -> list[str]:
    """The task's own paths: the base commit's tree (listed by the grader's git) and the test patch's files."""
    code, out, _ = sandbox.exec_bytes([*_env_argv(env), "git", *GIT_SAFE_CONFIG, "ls-tree", "-r", "-z", "--name-only",
                                       base], timeout=120, max_bytes=64 * 1024 * 1024)
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader's git could not list the base tree (exit {code})")
    listed = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
    return list(dict.fromkeys([*listed, *sorted(test_patch_files)]))


def _run_unguarded(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, result: GradeResult, *, language: str,
                   root_configs: dict[str, str], owned: list[str], rng: random.Random | None) -> GradeResult:
    junit = f"{WORK}/evalharness-junit-{secrets.token_hex(8)}.xml"
    copies: list[str] = []
    if language == "node":
        result.canaries, mirrors = _plant_node_checks(task, spec, sandbox, result, root_configs, owned, rng)
        result.node_mirrors, copies = mirrors.pairs, mirrors.paths
    files = list(task.test_files) + copies
    command = fill(spec.test_command, {"test_files": " ".join(shlex.quote(p) for p in files),
                                       "test_modules": " ".join(shlex.quote(m) for m in test_modules(task.test_files)),
                                       "junit_xml": junit})
    run = sandbox.exec(command, timeout=spec.timeouts.tests_s)
    end_leftovers(sandbox)  # a process the code under test left behind is ended before anything of the run is read
    result.test_exit_code, result.test_output = run.exit_code, run.output
    if run.timed_out:
        result.outcome, result.reason = Outcome.TESTS_TIMED_OUT, f"tests timed out after {spec.timeouts.tests_s:g} s"
        return result
    result.junit_xml = _read_results(sandbox, junit)
    result.outcome, result.reason, result.tests = decide(
        task, spec.log_parser, exit_code=run.exit_code, log=run.output, junit_xml=result.junit_xml,
        patch_applied=result.patch_applied, canaries=result.canaries, mirrors=result.node_mirrors,
        evidence=result.evidence)
    if result.outcome is Outcome.TAMPERED:
        result.flags.add(Flag.TAMPERED.value)
    every = every_status(spec.log_parser, exit_code=run.exit_code, log=run.output, junit_xml=result.junit_xml)
    planted = {i.split("::", 1)[1] for i in result.canaries}
    result.all_tests = {t: s for t, s in every.items()
                        if not any(t.endswith(title) for title in planted)
                        and not any(canary_js.owned_by(t, copy) for copy in copies)}
    return result


_JS_SUFFIXES = (".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx")


_PLANT_SCRIPT = r"""
w=$(realpath -e -- "$1") || exit 3; m=$2; shift 2
inside() { [ "$(realpath -e -- "$1")" = "$1" ]; }
while [ $# -ge 2 ]; do
  case $1 in
  +*) p="$w/${1#+}"  # a new mirror file, from $m/$2: its folder a real folder of the work tree, the name free
      d=$(dirname -- "$p")
      if [ -d "$d" ] && [ ! -L "$d" ] && inside "$d" && [ ! -e "$p" ] && [ ! -L "$p" ]; then
        (set -C; umask 022; cat "$m/$2" > "$p") || echo "${1#+}"
      else echo "${1#+}"; fi ;;
  *) p="$w/$1"  # canaries appended to a test file: a regular file of the work tree, never through a symlink
      if [ -f "$p" ] && [ ! -L "$p" ] && inside "$p"; then printf '%s' "$2" >> "$p" || echo "$1"
      else echo "$1"; fi ;;
  esac
  shift 2
done
# the planted files and the required tests' own files stay root's through the run (data/eh_protect.py)
if [ -s "$m/protect" ]; then python3 -s -I "$m/eh_protect.py" "$w" < "$m/protect" >/dev/null || exit 4; fi
"""
"""Root plants the checks in the graded tree, prints the paths it could not write, and makes the files named in
``$m/protect`` read-only to the test run."""


def _plant_node_checks(task: TaskSpec, spec: PackSpec, sandbox: Sandbox, result: GradeResult,
                       root_configs: dict[str, str], owned: list[str], rng: random.Random | None
                       ) -> tuple[list[str], mirror_js.Plan]:
    """Canaries (``canary_js``) in each file holding a FAIL_TO_PASS test and mirrors (``mirror_js``) beside it;
    ``owned``: the task's own paths (the base tree and the test patch's files: a patch cannot add look-alikes or
    flood the lookup). Those files and the mirrors are read-only to the test run. Returns the canaries' ids
    (passing and failing in turn) and the mirrors planted; both are stored in result.json, so
    ``evalharness grade`` checks them again."""
    listing = [p for p in owned if p.endswith(_JS_SUFFIXES)]
    files = canary_js.files_of(task.FAIL_TO_PASS, listing)
    texts = {path: _read_text(sandbox, path) for path in files}
    canaries = canary_js.plan(files, spec.test_command, texts, root_configs, rng)
    result.evidence += [f"no canaries{'' if path == '*' else ' in ' + path}: {why}"
                        for path, why in canaries.why_none.items()]
    mirrors = mirror_js.Plan(())
    if "*" not in canaries.why_none:  # a run that may not run every test of a file gets no mirrors either
        mirrors = mirror_js.plan(task.FAIL_TO_PASS, files, texts, listing, rng)
        result.evidence += [f"no mirror for {what}: {why}" for what, why in mirrors.why_none.items()]
    trees = test_trees(files, node_surface.TEST_DIRS)  # the required tests' folders: helpers, fixtures stay theirs
    protect = [*files, *mirrors.paths, *(p for p in owned if _snapshot_of(p, files) or in_trees(p, trees))]
    if not canaries.files and not mirrors.copies and not protect:
        return [], mirrors
    m = f"{PRIV}/m"
    write_files(sandbox, {**{f"{m}/{i}": c.text.encode() for i, c in enumerate(mirrors.copies)},
                          f"{m}/protect": _protect_list(protect), f"{m}/eh_protect.py": _data_file("eh_protect.py")})
    argv = ["sh", "-c", _PLANT_SCRIPT, "sh", sandbox.workdir, m]
    for i, copy in enumerate(mirrors.copies):
        argv += [f"+{copy.path}", str(i)]
    for planted in canaries.files:
        argv += [planted.path, planted.source]
    code, out, _ = sandbox.exec_bytes(argv, timeout=120)
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader could not plant canaries and mirrors (exit {code}): {out[-300:]!r}")
    skipped = set(out.decode("utf-8", "replace").splitlines())
    result.evidence += [f"not planted in {path}: not a regular file or free name of the work tree"
                        for path in sorted(skipped)]
    kept = mirror_js.Plan(tuple(c for c in mirrors.copies if c.path not in skipped), mirrors.why_none)
    return [i for planted in canaries.files if planted.path not in skipped for i in planted.ids], kept


def _snapshot_of(path: str, files: list[str]) -> bool:
    """Is ``path`` the stored snapshot of one of ``files`` (jest's ``__snapshots__/<file name>.snap`` beside it)."""
    folder, _, name = path.rpartition("/")
    if not (folder == "__snapshots__" or folder.endswith("/__snapshots__")) or not name.endswith(".snap"):
        return False
    return folder.removesuffix("__snapshots__") + name.removesuffix(".snap") in files


def _read_text(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(f"{sandbox.workdir}/{path}", max_bytes=4 * 1024 * 1024).decode("utf-8")
    except (FileNotFoundError, FileTooLarge, UnicodeDecodeError):
        return None


def every_status(log_parser: str, *, exit_code: int, log: str, junit_xml: str | None) -> dict[str, str]:
    """Pure: the status of every test a finished run reported ({} when its results are unreadable)."""
    if log_parser == "junit" and junit_xml is None:
        return {}
    try:
        statuses = parse(log_parser, TestRun(log=log, exit_code=exit_code, junit_xml=junit_xml))
    except ValueError:
        return {}
    return {t: s.value for t, s in sorted(statuses.items()) if s is not None}


def decide(task: TaskSpec, log_parser: str, *, exit_code: int, log: str, junit_xml: str | None,
           patch_applied: bool, canaries: list[str] = (), mirrors: dict[str, str] | None = None,
           evidence: list[str] | None = None) -> tuple[Outcome, str, dict[str, str]]:
    """Pure: from one finished test run to (outcome, reason, status of each required test).

    ``canaries``: the ids of the canaries planted in the run (``grading/canary_js.py``; passing and failing in
    turn); ``mirrors``: each mirrored required test's mirror (``grading/mirror_js.py``); what is wrong with them
    goes to ``evidence`` too. ``evalharness grade`` calls it again on a stored run
    folder, without Docker.
    """
    if log_parser == "junit" and junit_xml is None:
        return (Outcome.TEST_RUN_ERROR,
                f"the test command wrote no JUnit XML (exit {exit_code}): it died before reporting", {})
    try:
        statuses = parse(log_parser, TestRun(log=log, exit_code=exit_code, junit_xml=junit_xml))
    except ValueError as e:
        return Outcome.TEST_RUN_ERROR, f"test results unreadable: {e}", {}
    wanted = task.FAIL_TO_PASS + task.PASS_TO_PASS
    matched = match_test_ids(statuses, wanted)
    tests = {t: s.value if s else "missing" for t, s in matched.items()}
    if not statuses:
        return Outcome.TEST_RUN_ERROR, f"the test command reported no tests (exit {exit_code})", tests
    problems = (canary_js.check(canary_js.pairs(list(canaries)), statuses, matched)
                + mirror_js.check(mirrors or {}, statuses, matched))
    if problems:
        if evidence is not None:
            evidence.extend(problems)
        return Outcome.TAMPERED, "tampering: " + problems[0] + (f" (+{len(problems) - 1} more)"
                                                               if len(problems) > 1 else ""), tests
    ok, why = consistent_with_exit_code(statuses, exit_code)
    if not ok:
        return Outcome.UNRESOLVED, f"test log inconsistent with exit code: {why}", tests
    if log_parser == "junit":
        disagreement = _junit_disagrees_with_log(matched, log, exit_code)
        if disagreement:
            return Outcome.UNRESOLVED, disagreement, tests
    xfail_ok = set(task.metadata.get("xfail_at_base", []) or [])
    failing = [t for t in task.FAIL_TO_PASS if matched[t] is not TestStatus.PASSED]
    failing += [t for t in task.PASS_TO_PASS if not (matched[t] is TestStatus.PASSED
                                                      or (matched[t] is TestStatus.XFAIL and t in xfail_ok))]
    if failing:
        outcome = Outcome.UNRESOLVED if patch_applied else Outcome.NO_PATCH
        return outcome, f"{len(failing)} of {len(wanted)} required tests not passing, e.g. {failing[0]}", tests
    return Outcome.RESOLVED, f"all {len(wanted)} required tests pass", tests


def _junit_disagrees_with_log(junit: dict[str, TestStatus | None], log: str, exit_code: int) -> str:
    """Code under test runs inside pytest's process and could rewrite the JUnit file at exit; what
    pytest printed before that (``-rA`` summary) must then tell the same story for required tests."""
    try:
        printed = match_test_ids(parse("pytest", TestRun(log=log, exit_code=exit_code)), list(junit))
    except ValueError:
        return ""
    for test, status in junit.items():
        seen = printed.get(test)
        if status is not None and seen is not None and (status in PASSING) != (seen in PASSING):
            return (f"JUnit XML says {test} {status.value} but the printed summary says {seen.value}: "
                    "the results may have been rewritten by the code under test")
    return ""


_READ_RESULTS = '[ -L "$1" ] && exit 65; [ -f "$1" ] || exit 66; exec head -c "$2" "$1"'
"""The results file, never through a symlink (the run's processes are gone: nothing swaps it after the test)."""


def _read_results(sandbox: Sandbox, path: str) -> str | None:
    """The unguarded run's results file; None when the run wrote none, or left something the grader does not
    read in its place (a symlink, a file over the cap): the code under test's doing, the agent's outcome."""
    code, data, _ = sandbox.exec_bytes(["sh", "-c", _READ_RESULTS, "sh", path, str(MAX_RESULTS_BYTES + 1)],
                                       timeout=120, max_bytes=MAX_RESULTS_BYTES + 1)
    if code in (65, 66) or (code == 0 and len(data) > MAX_RESULTS_BYTES):
        return None
    if code != 0:
        from evalharness.errors import SandboxError

        raise SandboxError(f"could not read the test run's results file (exit {code})")
    return data.decode("utf-8", errors="replace")
