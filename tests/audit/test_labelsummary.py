"""What the labelling page shows of a task's findings, decided without a browser: one list of the probes' findings
and the investigator's verdicts, flagged first by severity, then clean, then the ones with no answer; each
summarised in one line; and the server's queue carries that list in that order.

Pins: a flagged finding shown below clean ones (an annotator reading top down misses it), an investigator verdict
kept apart below every probe whatever its severity, a summary that spans lines or runs to the whole reason, and a
skipped probe read as "no defect".
"""

from __future__ import annotations

import json

from label_pack import add_findings, make_pack
from local_server import Threads
from local_server import call as _call

from evalharness.audit.findings import Finding
from evalharness.audit.labels import build_queue
from evalharness.audit.labelserve import LabelSession, make_server
from evalharness.audit.labelsummary import SUMMARY_MAX, headline, page_findings, summary, title
from evalharness.packs import load_pack
from evalharness.store import Store


def _f(probe, flagged, severity, status="ok", seed=0, family="validity", reason="because"):
    return {"probe": probe, "seed": seed, "family": family, "flagged": flagged, "severity": severity,
            "status": status, "reason": reason, "evidence": {"k": probe}}


def test_flagged_findings_come_first_by_severity_then_clean_then_unanswered():
    evidence = [_f("environment", False, 0), _f("mutants", False, 0, status="skipped"),
                _f("underspecified", True, 1, family="underspecified"), _f("validity", False, 0, status="error"),
                _f("leak", True, 2, family="solution_leak")]
    verdicts = [_f("investigator", True, 3, seed=1, family="overly_strict"), _f("investigator", False, 0, seed=2),
                _f("investigator", False, 0, status="invalid", seed=3)]
    shown = page_findings(evidence, verdicts)
    assert [(f["title"], f["flagged"], f["severity"]) for f in shown][:3] == [
        ("investigator, seed 1", True, 3), ("leak", True, 2), ("underspecified", True, 1)]
    assert [f["title"] for f in shown[3:5]] == ["environment", "investigator, seed 2"]
    assert {f["status"] for f in shown[5:]} == {"skipped", "error", "invalid"}
    assert shown[0]["evidence"] == {"k": "investigator"}  # the raw evidence travels with it, unchanged
    assert headline(shown) == "3 of 8 findings flag a defect (highest severity 3)"
    assert headline(shown[3:]) == "none of 5 findings flags a defect" and headline([]) == "no findings"


def test_a_flag_on_a_finding_with_no_answer_does_not_count_as_flagged():
    shown = page_findings([_f("a", True, 3, status="error"), _f("b", False, 0)], [])
    assert [f["probe"] for f in shown] == ["b", "a"] and headline(shown) == "none of 2 findings flags a defect"


def test_each_summary_is_one_line_saying_what_the_finding_concludes():
    long = "first line " + "word " * 80 + "\nsecond line with more detail"
    assert summary(_f("leak", True, 2, family="solution_leak", reason="  the  statement\tholds code\nmore")) == \
        "flags solution leak, severity 2: the statement holds code"
    assert summary(_f("validity", False, 0, reason="")) == "no defect"
    assert summary(_f("mutants", False, 0, status="skipped", reason="\n\nno Docker")) == "skipped: no Docker"
    cut = summary(_f("environment", True, 2, reason=long))
    assert "\n" not in cut and len(cut) <= SUMMARY_MAX and cut.endswith("…") and "second" not in cut
    assert title(_f("investigator", True, 3, seed=-1)) == "investigator, all seeds"
    assert title(_f("investigator", True, 3, seed=2)) == "investigator, seed 2" and title(_f("leak", 0, 0)) == "leak"


def test_the_queue_the_page_loads_carries_one_ordered_list_of_summarised_findings(tmp_path):
    pack = load_pack(make_pack(tmp_path))
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    add_findings(store)
    store.record_finding(pack.name, Finding("html-parse", "mutants", "too_weak_tests", False, 0,
                                            "no Docker", status="skipped"))
    session = LabelSession(store, pack.name, build_queue(pack.tasks, store.findings(pack.name)), "alice")
    threads = Threads()
    try:
        port = threads.start(make_server(session))
        status, _, raw = _call(port, "GET", "/api/queue")
    finally:
        threads.close()
    assert status == 200
    html = next(t for t in json.loads(raw)["tasks"] if t["task_id"] == "html-parse")
    assert "evidence" not in html and "verdicts" not in html  # one list, not two
    assert [(f["title"], f["status"]) for f in html["findings"]] == [
        ("investigator, seed 1", "ok"), ("underspecified", "ok"), ("mutants", "skipped")]
    assert html["findings"][0]["summary"] == "flags overly strict, severity 3: the test pins one error message"
    assert html["findings_line"] == "2 of 3 findings flag a defect (highest severity 3)"
