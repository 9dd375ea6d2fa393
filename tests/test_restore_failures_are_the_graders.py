"""A graded tree the grader cannot build is never the agent's `unresolved`: when it cannot be built with no
patch either, a named task error (left out of the rate); only with the patch, the patch's `patch_apply_failed`
(flag `restore_failed`). Real Docker, the real grading path (`grade` in a grading sandbox; the CLI's oracle run).

The forced failures are ones git really makes:
- a file name longer than the file system takes (tmpfs: 255 bytes): `git apply --cached` and `write-tree` accept
  it, the grader's `read-tree -m -u` refuses ("File name too long"), step 22;
- tests listed in a folder that the tree does not have: the canary cannot be planted beside them, step 24
  (`git apply --check` of the gold patches passes, so the task check lets the task through to the grader).

Pins issue 23: on SWE-bench Lite pytest-dev__pytest-5103, -5221 and -5227 the grader's restore of the test
files failed (`Entry 'scripts/setup-coverage-vars.bat' not uptodate. Cannot merge.`) and every patch, the gold
one included, was stored `unresolved`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from support import TINYPACK, run_cli

from evalharness.grading.grade import grade
from evalharness.grading.restore import TREE_STEPS
from evalharness.types import Flag, Outcome

pytestmark = pytest.mark.docker

LONG = "tests/test_" + "long_name_" * 30 + ".py"
LONG_FILE = f"""diff --git a/{LONG} b/{LONG}
new file mode 100644
--- /dev/null
+++ b/{LONG}
@@ -0,0 +1,2 @@
+def test_long():
+    assert True
"""


@pytest.fixture
def clamp_task(tinypack):
    return tinypack.task("tiny-clamp")


def test_a_test_patch_git_cannot_check_out_is_the_tasks_error_whatever_the_patch(tinypack, clamp_task,
                                                                                 sandbox_factory):
    task = clamp_task.model_copy(update={"test_patch": LONG_FILE})
    for patch in (task.patch, ""):
        result = grade(task, tinypack.spec, patch, sandbox_factory(tinypack, task, role="grader"))
        assert result.outcome is Outcome.TASK_ERROR, result.reason  # before: unresolved, flag restore_failed
        assert "even with no patch" in result.reason and TREE_STEPS[22] in result.reason
        assert "File name too long" in result.reason and Flag.RESTORE_FAILED.value in result.flags
        assert result.test_exit_code is None


def test_a_patch_git_cannot_check_out_is_the_agents_outcome(tinypack, clamp_task, sandbox_factory):
    result = grade(clamp_task, tinypack.spec, clamp_task.patch + LONG_FILE,
                   sandbox_factory(tinypack, clamp_task, role="grader"))
    assert result.outcome is Outcome.PATCH_APPLY_FAILED and result.outcome.counts_in_rate, result.reason
    assert Flag.RESTORE_FAILED.value in result.flags and TREE_STEPS[22] in result.reason
    assert "File name too long" in result.reason and "without the patch the graded tree builds" in result.reason
    gold = grade(clamp_task, tinypack.spec, clamp_task.patch, sandbox_factory(tinypack, clamp_task, role="grader"))
    assert gold.outcome is Outcome.RESOLVED, gold.reason


def test_a_tree_the_grader_cannot_build_is_stored_as_a_named_task_error(tmp_path, base_image):
    pack = tmp_path / "pack"
    shutil.copytree(TINYPACK, pack)
    task = json.loads((TINYPACK / "tasks.jsonl").read_text().splitlines()[0])
    moved = {**task, "instance_id": "tiny-clamp-moved",
             **{k: [t.replace("tests/", "tests/unit/") for t in task[k]] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}}
    (pack / "tasks.jsonl").write_text(json.dumps(task) + "\n" + json.dumps(moved) + "\n")
    done = run_cli("run", "-p", str(pack), "-H", "oracle", "--format", "json", "-j", "1", cwd=tmp_path, check=False)
    run_id = next(line.split()[1].rstrip(":") for line in done.stderr.splitlines() if line.startswith("run "))
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        rows = {t: (o, r, json.loads(f or "[]")) for t, o, r, f in conn.execute(
            "select task_id, outcome, reason, flags from trials where run_id = ?", (run_id,))}
    outcome, reason, flags = rows["tiny-clamp-moved"]
    assert outcome == "task_error", rows  # before: unresolved, flag restore_failed, the gold patch a failure
    assert "even with no patch" in reason and TREE_STEPS[24] in reason and "tests/unit/" in reason
    assert Flag.RESTORE_FAILED.value in flags
    assert rows["tiny-clamp"][0] == "resolved", rows
    assert done.returncode == 1 and "task error: tinypack/tiny-clamp-moved" in done.stderr, done.stderr[-2000:]
