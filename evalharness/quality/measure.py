"""The coverage gate's measurement (Docker): one diagnostic run of a task's tests with the gold patch applied,
recording the lines each test executes in the files the gold patch changes (``data/eh_coverage.py``), then the
pure decision (``quality.coverage.decide``).

This is the task maker's own run on the gold patch, not the grading of an agent: it runs in a fresh sandbox
from the task image, as the agent user, network off, with no guard. The plugin is a standard-library
``sys.settrace`` tracer copied in at run time like the graded run's launcher, so nothing is installed in the
image (no image is rebuilt, the project's environment stays as it is) and it runs on any Python the task has.
pytest runs the pack's own arguments on the task's test files, with plugin autoloading off as in the graded run;
the time limit is the pack's test timeout times ``SLOWDOWN`` (tracing the changed files costs time).
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import time
from importlib import resources

from evalharness.quality.coverage import CoverageData, CoverageResult, changed_lines, decide, not_measured
from evalharness.quality.gate import DEFAULT, Thresholds
from evalharness.sandbox.base import AGENT_USER
from evalharness.types import TaskSpec

DIR = "/tmp/evalharness-coverage"
SLOWDOWN = 3
"""The diagnostic run's time limit, in multiples of the pack's test timeout."""
MAX_RESULT_BYTES = 64 * 1024 * 1024
_SCRIPT = r"""
set -u
d=""" + DIR + r""" work=$1 limit=$2; shift 2
tar -x -C /tmp -f - || exit 70
cd "$work" || exit 90
for p in gold test; do
  [ -s "$d/$p.diff" ] || continue
  git apply --whitespace=nowarn "$d/$p.diff" 2>"$d/err" \
    || git apply --whitespace=nowarn --recount -C1 "$d/$p.diff" 2>>"$d/err" \
    || { echo "EHCOV apply $p"; cat "$d/err"; exit 0; }
done
started=$(date +%s)
env -u PYTEST_ADDOPTS -u PYTEST_PLUGINS PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1 \
  EH_COV_CONFIG="$d/config.json" PYTHONPATH="$d${PYTHONPATH:+:$PYTHONPATH}" \
  timeout -k 5 "$limit" python -s -m pytest "$@" > "$d/output" 2>&1
code=$?
echo "EHCOV ran $code $(($(date +%s) - started))"
tail -c 3000 "$d/output"
"""


def _data(name: str) -> bytes:
    return resources.files("evalharness.data").joinpath(name).read_bytes()


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def pytest_argv(test_command: str, test_files: list[str]) -> list[str] | None:
    """pytest's arguments for the diagnostic run (the pack's own, with the task's test files and the plugin), or
    None when the test command is not a plain pytest invocation."""
    from evalharness.grading.grade import cheap_report_chars, pytest_args

    args = pytest_args(test_command)
    if args is None:
        return None
    out: list[str] = []
    for token in cheap_report_chars(args):
        out += test_files if token == "{test_files}" else [token]
    if "{test_files}" not in args:
        out += test_files
    return ["-p", "eh_coverage", "-p", "no:cacheprovider", "--continue-on-collection-errors", *out]


def parse_run(out: bytes, result: bytes | None, limit: float) -> CoverageData:
    """Pure: the diagnostic script's report (``EHCOV ran CODE SECONDS`` and the output's tail, or ``EHCOV apply``)
    and the plugin's results file (None when none was written) as ``CoverageData``."""
    text = out.decode("utf-8", errors="replace")
    header, _, tail = text.partition("\n")
    fields = header.split()
    if fields[:2] == ["EHCOV", "apply"]:
        return CoverageData(complete=False, reason=f"the {fields[2]} patch does not apply: {tail.strip()[-300:]}")
    if len(fields) != 4 or fields[:2] != ["EHCOV", "ran"]:
        return CoverageData(complete=False, reason=f"the run did not report back: {text.strip()[-300:]}")
    code, took = int(fields[2]), int(fields[3])
    if code in (124, 137) and took >= limit - 1:
        return CoverageData(complete=False, reason=f"timed out after {limit:g} s")
    if result is None:
        return CoverageData(complete=False, reason=f"pytest exited {code} after {took} s without finishing its "
                                                   f"session: {tail.strip()[-300:]}")
    data = json.loads(result)
    if data.get("exitstatus") not in (0, 1):
        return CoverageData(complete=False, reason=f"pytest exited {data.get('exitstatus')} (interrupted, internal "
                                                   f"or usage error): {tail.strip()[-300:]}")
    return CoverageData.from_json({**data, "complete": True,
                                   "reason": f"pytest exited {code} in {took} s on Python {data.get('python')}"})


def measure(validator, task: TaskSpec) -> CoverageData:
    """One diagnostic run of ``task``'s tests with its gold patch (see the module doc). Raises what building the
    task image raises (TaskError, ImageBuildError) and SandboxError when the engine fails."""
    pack = validator.pack
    spec = pack.spec_for(task)
    argv = pytest_argv(spec.test_command, task.test_files)
    assert argv is not None, "callers check the test command first"
    files = sorted(changed_lines(task.patch))
    config = {"workdir": spec.environment.workdir, "files": files, "out": f"{DIR}/result.json"}
    bundle = _tar({"evalharness-coverage/eh_coverage.py": _data("eh_coverage.py"),
                   "evalharness-coverage/gold.diff": task.patch.encode(),
                   "evalharness-coverage/test.diff": task.test_patch.encode(),
                   "evalharness-coverage/config.json": json.dumps(config).encode()})
    limit = spec.timeouts.tests_s * SLOWDOWN
    image = validator.images.task_image(pack, task)
    with validator.sandbox(image, spec, task) as box:
        code, out, _ = box.exec_bytes(["sh", "-c", _SCRIPT, "sh", spec.environment.workdir, f"{limit:g}", *argv],
                                      stdin=bundle, timeout=limit + 120, user=AGENT_USER, max_bytes=64 * 1024)
        if code != 0:
            return CoverageData(complete=False, reason=f"the diagnostic script failed (exit {code}): "
                                                       f"{out.decode(errors='replace')[-300:]}")
        try:
            result = box.read_file(f"{DIR}/result.json", max_bytes=MAX_RESULT_BYTES)
        except FileNotFoundError:
            result = None
    return parse_run(out, result, limit)


def coverage_for(validator, task: TaskSpec, thresholds: Thresholds = DEFAULT) -> CoverageResult:
    """The coverage checks of ``task``: measured in Docker when they can be, else passed with the reason."""
    if not changed_lines(task.patch):
        return not_measured("the gold patch changes no library .py file")
    spec = validator.pack.spec_for(task)
    if pytest_argv(spec.test_command, task.test_files) is None:
        return not_measured(f"the test command is not a plain pytest invocation ({shlex.quote(spec.test_command)})")
    data = measure(validator, task)
    return decide(task.patch, data, list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS), thresholds)
