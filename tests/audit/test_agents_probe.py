"""The agents probe: real agents' predictions with official verdicts as audit evidence.

Pure decisions on small patches over a real-shaped base file (regions, near misses, resolved, skipped, bad
input), CodeR's real predictions on two mirrored SWE-bench Lite tasks, and ``audit --agent-preds`` through the CLI.
"""

from __future__ import annotations

import json

import pytest

from evalharness.audit.agentpreds import Prediction, changed_base_lines, covers, load_predictions, regions
from evalharness.audit.context import AuditContext
from evalharness.audit.patchparts import parse_patch
from evalharness.audit.probes.agents import PROBE
from evalharness.errors import UserError
from evalharness.types import TaskSpec

from support import QUICKSTART, REPO, run_cli

BASE = '''import os


class Box:
    def __init__(self, size):
        self.size = size

    def area(self):
        return self.size * self.size


def volume(box, depth):
    return box.area() * depth
'''


def diff(path: str, start: int, old: list[str], new: list[str], context: str = "") -> str:
    body = "".join(f"-{line}\n" for line in old) + "".join(f"+{line}\n" for line in new)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{len(old)} +{start},{len(new)} @@{context}\n{body}")


AREA = diff("pkg/box.py", 9, ["        return self.size * self.size"], ["        return self.size ** 2"])
VOLUME = diff("pkg/box.py", 13, ["    return box.area() * depth"], ["    return box.area() * abs(depth)"])
INIT = diff("pkg/box.py", 6, ["        self.size = size"], ["        self.size = int(size)"])
TEST = diff("tests/test_box.py", 1, ["x = 1"], ["x = 2"])


def read(path: str) -> str | None:
    return BASE if path == "pkg/box.py" else None


def task(patch: str = AREA) -> TaskSpec:
    return TaskSpec(instance_id="box-1", problem_statement="Box.area is wrong for big boxes.", patch=patch,
                    test_patch=TEST, FAIL_TO_PASS=["tests/test_box.py::test_area"], PASS_TO_PASS=[])


def ctx(preds: list[Prediction] | None, base: bool = True) -> AuditContext:
    class Base:
        def read(self, path):
            return read(path)

        def contains(self, text):
            return text in BASE

    return AuditContext(pack=None, base_code=lambda t: Base() if base else None, log=lambda line: None,
                        predictions=None if preds is None else {"box-1": preds})


def pred(patch: str, resolved: bool | None, agent: str = "agent-a") -> Prediction:
    return Prediction("box-1", agent, patch, resolved)


def test_regions_are_the_innermost_def_around_each_change_and_test_files_are_left_out():
    assert regions(AREA, read) == {("pkg/box.py", "Box.area")}
    assert regions(VOLUME + TEST, read) == {("pkg/box.py", "volume")}
    assert regions(diff("pkg/box.py", 1, ["import os"], ["import sys"]), read) == {("pkg/box.py", "<module>")}
    insert = ("diff --git a/pkg/box.py b/pkg/box.py\n--- a/pkg/box.py\n+++ b/pkg/box.py\n"
              "@@ -9,0 +10 @@\n+        x = 1\n")
    assert changed_base_lines(parse_patch(insert)[0]) == [9]  # inserted after line 9: inside area
    assert regions(insert, read) == {("pkg/box.py", "Box.area")}
    assert regions(AREA, lambda p: None) == {("pkg/box.py", "*")}  # no base: the whole file


def test_covers_needs_every_gold_region():
    gold = {("pkg/box.py", "Box.area"), ("pkg/box.py", "volume")}
    assert covers({("pkg/box.py", "Box.area"), ("pkg/box.py", "volume"), ("pkg/x.py", "f")}, gold)
    assert not covers({("pkg/box.py", "Box.area")}, gold)
    assert covers({("pkg/box.py", "Box.__init__")}, {("pkg/box.py", "*")})  # whole-file gold: any change to it
    assert not covers({("pkg/box.py", "Box.area")}, set())  # no gold region: nothing to cover


def test_a_failing_patch_over_the_gold_region_is_a_near_miss_at_severity_2():
    found = PROBE.run(task(), ctx([pred(diff("pkg/box.py", 9, ["        return self.size * self.size"],
                                             ["        return abs(self.size) * self.size"]), False)]))
    assert found.flagged and found.severity == 2 and found.family == "overly_strict" and found.status == "ok"
    assert found.evidence["gold_regions"] == ["pkg/box.py::Box.area"]
    assert found.evidence["near_misses"][0]["agent"] == "agent-a"


def test_a_failing_patch_elsewhere_is_not_flagged_and_a_resolved_one_clears():
    elsewhere = PROBE.run(task(), ctx([pred(VOLUME, False), pred(INIT, False, "agent-b")]))
    assert elsewhere.status == "ok" and not elsewhere.flagged
    assert elsewhere.evidence["failed"] == ["agent-a", "agent-b"]
    solved = PROBE.run(task(), ctx([pred(AREA, False), pred(VOLUME, True, "agent-b")]))
    assert solved.status == "ok" and not solved.flagged and solved.evidence["resolved_by"] == ["agent-b"]


def test_without_usable_predictions_the_probe_skips():
    assert PROBE.run(task(), ctx(None)).status == "skipped"
    for useless in ([pred("", False)], [pred(AREA, None)], []):  # empty patch, never graded, none
        found = PROBE.run(task(), ctx(useless))
        assert found.status == "skipped" and not found.flagged


def test_without_base_code_a_failing_patch_of_the_same_file_is_a_near_miss():
    found = PROBE.run(task(), ctx([pred(INIT, False)], base=False))
    assert found.flagged and found.evidence["gold_regions"] == ["pkg/box.py::*"]
    assert not PROBE.run(task(), ctx([pred(INIT, False)])).flagged  # with the base: another function


def test_predictions_file_errors_are_clear(tmp_path):
    good = tmp_path / "p.jsonl"
    good.write_text(json.dumps({"instance_id": "a", "model_patch": AREA, "official_resolved": False}) + "\n\n"
                    + json.dumps({"instance_id": "a", "patch": VOLUME, "resolved": None, "agent": "b"}) + "\n")
    loaded = load_predictions(good)
    assert [(p.agent, p.resolved, p.usable) for p in loaded["a"]] == [("agent", False, True), ("b", None, False)]
    for text, says in (("not json", "not JSON"), ("[1]", "JSON object"), ('{"model_patch": ""}', "no instance_id"),
                       ('{"instance_id": "a", "model_patch": ""}', "no verdict"),
                       ('{"instance_id": "a", "resolved": "yes"}', "expected true, false or null")):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text + "\n")
        with pytest.raises(UserError, match=says):
            load_predictions(bad)


DATA = REPO.parent / "shared" / "research-data"


@pytest.mark.skipif(not (DATA / "swebench-preds").is_dir(), reason="needs ../shared/research-data")
def test_codeRs_real_predictions_on_mirrored_lite_tasks():
    from evalharness.audit.context import GitBaseCode
    from evalharness.sources.swebench import to_task

    records = {r["instance_id"]: r for r in json.loads((DATA / "swebench-lite" / "swe-bench-lite.json").read_text())}
    preds = load_predictions(DATA / "swebench-preds" / "coder-20240604-lite-mirrored.jsonl")
    out = {}
    for task_id in ("mwaskom__seaborn-3407", "mwaskom__seaborn-2848", "mwaskom__seaborn-3010"):
        record = records[task_id]
        base = GitBaseCode(DATA / "swebench-repos" / "mwaskom__seaborn.git", record["base_commit"])
        out[task_id] = PROBE.run(to_task(record), AuditContext(pack=None, base_code=lambda t, b=base: b,
                                                               predictions=preds, log=lambda line: None))
    # 3407: CodeR changed PairGrid.map_diag, the gold patch's one region, and failed
    assert out["mwaskom__seaborn-3407"].flagged
    assert out["mwaskom__seaborn-3407"].evidence["gold_regions"] == ["seaborn/axisgrid.py::PairGrid.map_diag"]
    # 2848: CodeR changed axisgrid.py, the gold patch changes _oldcore.py's HueMapping._lookup_single
    assert not out["mwaskom__seaborn-2848"].flagged and out["mwaskom__seaborn-2848"].status == "ok"
    assert out["mwaskom__seaborn-3010"].evidence["resolved_by"] == ["20240604_CodeR"]


def test_the_cli_reads_agent_preds_and_refuses_a_file_of_another_pack(tmp_path):
    from evalharness.packs import load_pack

    tasks = load_pack(QUICKSTART).tasks
    near, solved, other = tasks[0], tasks[1], tasks[2]
    elsewhere = diff("README.rst", 1, ["x"], ["y"])
    rows = [{"instance_id": near.instance_id, "model_patch": near.patch, "resolved": False},
            {"instance_id": solved.instance_id, "model_patch": solved.patch, "resolved": True},
            {"instance_id": other.instance_id, "model_patch": elsewhere, "resolved": False}]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "agents", "--agent-preds", str(preds), cwd=tmp_path)
    found = {t.instance_id: {f["probe"]: f for f in json.loads(
        (tmp_path / "audits" / "quickstart" / "findings" / f"{t.instance_id}.json").read_text())["findings"]}["agents"]
        for t in tasks}
    assert found[near.instance_id]["flagged"] and found[near.instance_id]["severity"] == 2
    assert not found[solved.instance_id]["flagged"] and found[solved.instance_id]["status"] == "ok"
    assert not found[other.instance_id]["flagged"] and found[other.instance_id]["status"] == "ok"
    assert {found[t.instance_id]["status"] for t in tasks[3:]} == {"skipped"}
    audit = json.loads((tmp_path / "audits" / "quickstart" / "audit.json").read_text())
    assert audit["flagged"] == 1
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(json.dumps({"instance_id": "nope", "model_patch": "", "resolved": False}) + "\n")
    refused = run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "agents", "--agent-preds", str(foreign),
                      cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "no prediction of a task of pack quickstart" in refused.stderr
