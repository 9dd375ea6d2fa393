"""Labels through files: a team that labels elsewhere exports a queue, fills it in and imports it; a store's labels
export and import into another store unchanged. One bad row refuses the whole file, naming the row and the reason.

Pins: an import that stored the rows before a bad one (half a file in the store, the rest lost on the retry's
duplicate check), a queue file that showed one annotator another's labels, and an annotator's order that changed
from one export to the next.
"""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta, timezone

import pytest
from label_pack import HOSTILE, TASK_IDS, add_findings, make_pack
from support import run_cli

from evalharness.audit.labelfiles import export_labels, export_queue, import_labels
from evalharness.audit.labels import LabelError, annotator_order, build_queue, parse_label
from evalharness.errors import UserError
from evalharness.packs import load_pack
from evalharness.store import Store

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
IDS = set(TASK_IDS)


@pytest.fixture
def setup(tmp_path):
    pack = load_pack(make_pack(tmp_path))
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    add_findings(store)
    return pack, store


def _label(store, task, who, broken, severity, family=None, note="", minutes=0, seconds=None):
    store.record_label("label-demo", task_id=task, annotator=who, broken=broken, severity=severity, family=family,
                       note=note, seconds=seconds, labelled_at=T0 + timedelta(minutes=minutes))


def _comparable(rows):
    return [(r["task_id"], r["annotator"], r["broken"], r["family"], r["severity"], r["note"], r["source"],
             r["labelled_at"].replace(tzinfo=None), r["seconds"]) for r in rows]


def test_queue_separates_probe_evidence_from_investigator_verdicts_and_can_hide_both(setup):
    pack, store = setup
    items = {i.task_id: i for i in build_queue(pack.tasks, store.findings(pack.name))}
    assert list(items) == TASK_IDS
    html = items["html-parse"]
    assert html.statement == HOSTILE and html.fail_to_pass == ["tests/test_html-parse.py::test_value"]
    assert [f["probe"] for f in html.evidence] == ["underspecified"] and html.evidence[0]["flagged"] is True
    assert [(f["probe"], f["seed"], f["severity"]) for f in html.verdicts] == [("investigator", 1, 3)]
    assert items["calc-add"].verdicts == []
    hidden = build_queue(pack.tasks, store.findings(pack.name), hide_findings=True)
    assert all(i.evidence == [] and i.verdicts == [] for i in hidden)


def test_each_annotator_has_an_order_of_their_own_that_never_changes():
    ids = [f"t{n:02d}" for n in range(30)]
    alice = annotator_order(ids, "alice")
    assert alice == annotator_order(list(reversed(ids)), "alice") == annotator_order(ids, " alice ")
    assert sorted(alice) == ids and alice != ids
    assert annotator_order(ids, "bob") != alice


@pytest.mark.parametrize("raw, reason", [
    ({"task_id": "nope", "annotator": "a", "broken": "false", "severity": "0"}, "unknown task 'nope'"),
    ({"task_id": "calc-add", "annotator": " ", "broken": "false", "severity": "0"}, "no annotator"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "maybe", "severity": "0"}, "broken must be true/false"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "", "severity": "0"}, "broken is missing"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "false", "severity": "4"}, "severity must be 0-3"),
    ({"task_id": "calc-add", "annotator": "a", "broken": False, "severity": True}, "severity must be 0-3"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "false", "severity": ""}, "severity is missing"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "true", "severity": "2", "family": "typo"}, "unknown family"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "true", "severity": "2"}, "a broken task needs a family"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "true", "severity": "0", "family": "validity"},
     "a broken task has severity 1-3"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "false", "severity": "3"}, "a clean task has severity 0-2"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "no", "severity": 1, "seconds": "-1"}, "non-negative"),
    ({"task_id": "calc-add", "annotator": "a", "broken": "no", "severity": 1, "labelled_at": "yesterday"}, "ISO 8601"),
    ({"task_id": 7, "annotator": "a", "broken": "no", "severity": 1}, "expected text"),
])
def test_a_label_that_breaks_a_rule_is_refused_with_its_reason(raw, reason):
    with pytest.raises(LabelError, match=reason):
        parse_label(raw, IDS)


def test_a_valid_label_is_read_whatever_the_spelling():
    label = parse_label({"task_id": "calc-add", "annotator": " ann ", "broken": "Broken", "severity": " 2 ",
                         "family": "overly_strict", "labelled_at": "2026-11-30T09:00:00Z", "seconds": "12.5"}, IDS)
    assert (label.annotator, label.broken, label.severity, label.family, label.seconds) == \
        ("ann", True, 2, "overly_strict", 12.5)
    assert label.labelled_at == T0
    assert parse_label({"task_id": "calc-add", "annotator": "x", "broken": "true", "severity": 1,
                        "family": "validity"}, IDS, annotator="server-side").annotator == "server-side"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_every_label_exports_and_imports_into_another_store_unchanged(setup, tmp_path, suffix):
    pack, store = setup
    _label(store, "calc-add", "alice", True, 2, "validity", note='says "no", then <b>yes</b>,\nand more', seconds=3.5)
    _label(store, "calc-add", "alice", False, 0, minutes=5)  # alice changed her mind: the latest counts
    _label(store, "calc-add", "bob", True, 3, "overly_strict", minutes=1)
    _label(store, "html-parse", "bob", False, 1, "environment", minutes=2)
    out = tmp_path / f"labels{suffix}"
    assert export_labels(out, store.labels(pack.name, latest=False)) == 4
    other = Store(f"sqlite:///{tmp_path / 'other.sqlite'}")
    summary = import_labels(other, pack.name, out, IDS)
    assert (summary.added, summary.blank, summary.already_stored) == (4, 0, 0)
    assert _comparable(other.labels(pack.name, latest=False)) == _comparable(store.labels(pack.name, latest=False))
    assert _comparable(other.labels(pack.name)) == _comparable(store.labels(pack.name))
    again = import_labels(other, pack.name, out, IDS)
    assert (again.added, again.already_stored) == (0, 4)
    assert len(other.labels(pack.name, latest=False)) == 4


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_queue_shows_only_its_annotators_labels_and_imports_what_they_filled_in(setup, tmp_path, suffix):
    pack, store = setup
    _label(store, "calc-div", "alice", True, 2, "validity", note="alice's secret note")
    _label(store, "str-pad", "bob", False, 0, note="bob was here")
    out = tmp_path / f"queue-bob{suffix}"
    items = build_queue(pack.tasks, store.findings(pack.name))
    assert export_queue(out, items, "bob", store.labels(pack.name)) == 5
    text = out.read_text(encoding="utf-8")
    assert "alice" not in text and "bob was here" in text
    rows = _read(out)
    assert [r["task_id"] for r in rows] == annotator_order(TASK_IDS, "bob")
    assert {r["annotator"] for r in rows} == {"bob"}
    html = next(r for r in rows if r["task_id"] == "html-parse")
    assert html["statement"] == HOSTILE
    evidence = json.loads(html["evidence"]) if suffix == ".csv" else html["evidence"]
    assert evidence[0]["evidence"] == {"missing": ["<script>alert(1)</script>"]}
    for r in rows:  # bob labels html-parse; his str-pad label comes back unchanged; three stay blank
        if r["task_id"] == "html-parse":
            r.update(broken="true", severity="3", family="underspecified", note="needs <b> handling")
    _write(out, rows)
    summary = import_labels(store, pack.name, out, IDS)
    assert (summary.added, summary.blank, summary.already_stored) == (1, 3, 1)
    bob = {r["task_id"]: r for r in store.labels(pack.name) if r["annotator"] == "bob"}
    assert (bob["html-parse"]["broken"], bob["html-parse"]["severity"], bob["html-parse"]["family"],
            bob["html-parse"]["note"], bob["html-parse"]["source"]) == \
        (True, 3, "underspecified", "needs <b> handling", f"import-{suffix[1:]}")
    assert bob["str-pad"]["note"] == "bob was here"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("change, where", [
    ({"task_id": "no-such-task"}, "unknown task 'no-such-task'"),
    ({"severity": "7"}, "severity must be 0-3, got '7'"),
    ({"family": "wrong_family"}, "unknown family 'wrong_family'"),
    ({"annotator": ""}, "no annotator named"),
    ({"broken": "perhaps"}, "broken must be true/false"),
])
def test_one_bad_row_refuses_the_whole_file_and_names_the_row(setup, tmp_path, suffix, change, where):
    pack, store = setup
    good = {"annotator": "carol", "broken": "true", "family": "validity", "severity": "2", "note": ""}
    rows = [{"task_id": t, **good} for t in TASK_IDS[:4]]
    rows[2].update(change)
    path = tmp_path / f"bad{suffix}"
    _write(path, rows)
    with pytest.raises(UserError) as caught:
        import_labels(store, pack.name, path, IDS)
    line = "line 3" if suffix == ".jsonl" else "row 3"
    assert f"{line} (task {rows[2]['task_id'] or '?'}): {where}" in str(caught.value)
    assert "1 of 4 rows are invalid; nothing was imported" in str(caught.value)
    assert store.labels(pack.name, latest=False) == []


def test_files_that_cannot_be_read_as_labels_are_refused(setup, tmp_path):
    pack, store = setup
    cases = {
        "no-suffix.txt": ("task_id\n", "unknown label file format '.txt'"),
        "no-header.csv": ("task_id,annotator,broken\ncalc-add,a,true\n", "the header lacks column severity"),
        "extra.csv": ("task_id,annotator,broken,severity\ncalc-add,a,false,0,surplus\n",
                      "row 1: more cells than the header has columns"),
        "broken.jsonl": ('{"task_id": "calc-add", "annotator": "a", "broken": false, "severity": 0}\n{oops\n[1]\n',
                         "line 2: not valid JSON"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")):
            import_labels(store, pack.name, path, IDS)
    with pytest.raises(UserError, match="line 3: expected a JSON object, got list"):
        import_labels(store, pack.name, tmp_path / "broken.jsonl", IDS)
    assert store.labels(pack.name, latest=False) == []


def test_the_cli_exports_a_queue_and_imports_it_back_and_refuses_a_bad_file(setup, tmp_path):
    pack, store = setup
    db, root = str(tmp_path / "db.sqlite"), str(pack.root)
    queue = tmp_path / "queue.csv"
    done = run_cli("audit", "label", "export", root, str(queue), "--annotator", "dana", "--db", db, cwd=tmp_path)
    assert "wrote the queue of 5 tasks for dana (0 labelled)" in done.stdout
    rows = _read(queue)
    rows[0].update(broken="false", severity="0")
    _write(queue, rows)
    done = run_cli("audit", "label", "import", root, str(queue), "--db", db, cwd=tmp_path)
    assert "imported 1 labels into label-demo (4 rows not labelled, 0 already stored)" in done.stdout
    rows[1].update(broken="true", severity="9")
    _write(queue, rows)
    done = run_cli("audit", "label", "import", root, str(queue), "--db", db, cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"row 2 (task {rows[1]['task_id']}): severity must be 0-3, got '9'" in done.stderr
    assert [(r["task_id"], r["annotator"]) for r in store.labels(pack.name)] == [(rows[0]["task_id"], "dana")]
    done = run_cli("audit", "label", "export", root, str(queue), "--db", db, cwd=tmp_path, check=False)
    assert done.returncode == 2 and "either --annotator NAME" in done.stderr


def _read(path):
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path, rows):
    if path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
