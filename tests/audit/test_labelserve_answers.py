"""The labelling server, over real HTTP without a browser: only a valid JSON label from the server's own address
changes the store; everything else gets a JSON error and changes nothing; an annotator's queue carries their own
labels and no one else's.

Pins: a page that showed one annotator another's labels (or a count of them), a server that took the annotator
from the payload (anyone could label as anyone), and a form on another web site posting labels to localhost.
"""

from __future__ import annotations

import http.client
import json

import pytest
from local_server import Threads
from local_server import call as _call
from label_pack import TASK_IDS, add_findings, make_pack

from evalharness.audit.labels import build_queue
from evalharness.audit.labelserve import FAMILY_KEYS, LabelSession, make_server
from evalharness.audit.findings import FAMILIES
from evalharness.packs import load_pack
from evalharness.store import Store


@pytest.fixture
def serve(tmp_path):
    pack = load_pack(make_pack(tmp_path))
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    add_findings(store)
    threads = Threads()

    def start(annotator):
        session = LabelSession(store, pack.name, build_queue(pack.tasks, store.findings(pack.name)), annotator)
        return threads.start(make_server(session))

    yield start, store
    threads.close()


def _post(port, body, **kw):
    status, kind, raw = _call(port, "POST", "/api/labels", body, **kw)
    assert kind == "application/json"
    return status, json.loads(raw)


def test_a_valid_label_is_stored_under_the_servers_annotator_and_only_theirs_come_back(serve):
    start, store = serve
    alice, bob = start("alice"), start("bob")
    status, answer = _post(alice, {"task_id": "calc-add", "broken": True, "severity": 2, "family": "validity",
                                   "note": "gold fails", "seconds": 4.2})
    assert status == 200 and answer["progress"] == {"labelled": 1, "total": 5}
    [row] = store.labels("label-demo")
    assert (row["annotator"], row["broken"], row["severity"], row["family"], row["source"], row["seconds"]) == \
        ("alice", True, 2, "validity", "web", 4.2)
    status, _, raw = _call(bob, "GET", "/api/queue")
    queue = json.loads(raw)
    assert status == 200 and queue["labels"] == {} and queue["progress"] == {"labelled": 0, "total": 5}
    assert b"alice" not in raw and b"gold fails" not in raw
    assert sorted(t["task_id"] for t in queue["tasks"]) == sorted(TASK_IDS)
    mine = json.loads(_call(alice, "GET", "/api/queue")[2])
    assert mine["labels"] == {"calc-add": {"broken": True, "severity": 2, "family": "validity", "note": "gold fails"}}


@pytest.mark.parametrize("body, status, error", [
    (b"{not json", 400, "not valid JSON"),
    ([1, 2], 400, "expected a JSON object"),
    ({"task_id": "calc-add", "broken": True, "severity": 2, "family": "validity", "annotator": "mallory"},
     400, "unknown field annotator"),
    ({"task_id": "nope", "broken": False, "severity": 0}, 400, "unknown task 'nope'"),
    ({"task_id": "calc-add", "broken": False, "severity": 5}, 400, "severity must be 0-3"),
    ({"task_id": "calc-add", "broken": True, "severity": 2, "family": "made_up"}, 400, "unknown family"),
    ({"task_id": "calc-add", "broken": None, "severity": 2}, 400, "broken is missing"),
    ({"task_id": "calc-add", "broken": True, "severity": 2}, 400, "a broken task needs a family"),
])
def test_bad_payloads_get_a_json_error_and_change_nothing(serve, body, status, error):
    start, store = serve
    port = start("alice")
    got, answer = _post(port, body)
    assert got == status and error in answer["error"]
    assert store.labels("label-demo", latest=False) == []


def test_requests_not_from_the_page_get_a_json_error_and_change_nothing(serve):
    start, store = serve
    port = start("alice")
    label = {"task_id": "calc-add", "broken": False, "severity": 0}
    assert _post(port, label, headers={"Content-Type": "text/plain"})[0] == 415
    assert _post(port, label, headers={"Host": "evil.example:80"})[0] == 403
    assert _post(port, b"x" * 70_000)[0] == 413
    status, kind, raw = _call(port, "GET", "/api/queue", headers={"Host": "rebound.example"})
    assert (status, kind) == (403, "application/json") and b"calc-add" not in raw
    assert _call(port, "DELETE", "/api/labels")[0] == 405
    assert _call(port, "GET", "/nothing-here")[0] == 404
    assert _call(port, "POST", "/api/other", label)[0] == 404
    assert store.labels("label-demo", latest=False) == []


def test_the_page_runs_only_its_own_script_and_fetches_nothing_from_elsewhere(serve):
    start, _ = serve
    conn = http.client.HTTPConnection("127.0.0.1", start("alice"), timeout=10)
    conn.request("GET", "/")
    response = conn.getresponse()
    page = response.read().decode()
    policy = response.getheader("Content-Security-Policy")
    nonce = policy.split("'nonce-")[1].split("'")[0]
    assert "default-src 'none'" in policy and f"script-src 'nonce-{nonce}'" in policy
    assert page.count(f'nonce="{nonce}"') == 2 and "__NONCE__" not in page
    assert "http://" not in page and "https://" not in page and "src=" not in page
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page
    assert sorted(FAMILY_KEYS.values()) == sorted(FAMILIES)
