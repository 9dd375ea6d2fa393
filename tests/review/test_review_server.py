"""The review server over real HTTP on 127.0.0.1, without a browser: only a valid JSON review from the server's
own address changes the store, under the server's reviewer; no answer names a harness, model, run, trial or arm.

Pins: a queue answer that carried the configuration (or the gold arm) to the page, a reviewer taken from the
payload, a refused review that was stored anyway, and another site posting reviews to localhost.
"""

from __future__ import annotations

import json

import pytest
from local_server import Threads
from local_server import call as _call
from review_run import SECRETS, make_run

from evalharness.review.serve import ReviewSession, make_server
from evalharness.review.sources import review_items


@pytest.fixture
def serve(tmp_path):
    store, runs_dir, run_id = make_run(tmp_path)
    items = review_items(store, runs_dir, [run_id])
    threads = Threads()

    def start(reviewer, needed=1):
        return threads.start(make_server(ReviewSession(store, [run_id], items, reviewer, needed=needed)))

    yield start, store, run_id, items
    threads.close()


def test_reviews_are_stored_under_the_server_reviewer_and_nothing_names_the_configuration(serve):
    start, store, run_id, items = serve
    ann, bob = start("ann", needed=2), start("bob", needed=2)
    status, _, raw = _call(ann, "GET", "/api/queue")
    assert status == 200
    queue = json.loads(raw)
    assert len(queue["items"]) == 10 and queue["progress"] == {"reviewed": 0, "total": 10}
    text = raw.decode()
    for secret in (*SECRETS, "oracle", '"gold"', '"agent"', "arm", "config"):
        assert secret not in text, secret
    first = queue["items"][0]["item_id"]
    status, _, raw = _call(ann, "POST", "/api/reviews", {"item_id": first, "verdict": "reject",
                                                          "reasons": ["tests", "code_quality"], "note": "no test",
                                                          "seconds": 31.5, "reviewer": "mallory"})
    assert status == 400 and b"unknown field reviewer" in raw and store.reviews([run_id]) == []
    status, _, raw = _call(ann, "POST", "/api/reviews", {"item_id": first, "verdict": "reject",
                                                          "reasons": ["tests", "code_quality"], "note": "no test",
                                                          "seconds": 31.5})
    answer = json.loads(raw)
    assert status == 200 and answer["progress"] == {"reviewed": 1, "total": 10}
    assert all(s not in raw.decode() for s in SECRETS)
    [row] = store.reviews([run_id])
    item = next(i for i in items if i.item_id == first)
    assert (row["reviewer"], row["verdict"], row["reasons"], row["seconds"], row["source"], row["arm"],
            row["trial_id"]) == ("ann", "reject", ["code_quality", "tests"], 31.5, "web", item.arm, item.trial_id)
    other = json.loads(_call(bob, "GET", "/api/queue")[2])
    assert other["reviews"] == {} and other["progress"]["reviewed"] == 0
    assert other["items"][-1]["item_id"] != first or len(other["items"]) == 1  # not bob's: ann's needs one more
    assert b"no test" not in _call(bob, "GET", "/api/queue")[2] and b"ann" not in _call(bob, "GET", "/api/queue")[2]


@pytest.mark.parametrize("body, error", [
    (b"{not json", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
    ({"item_id": "inope", "verdict": "merge"}, "unknown item"),
    ({"verdict": "merge"}, "unknown item"),
    ({"item_id": "FIRST", "verdict": "maybe"}, "verdict must be one of"),
    ({"item_id": "FIRST", "verdict": "reject"}, "needs at least one reason"),
    ({"item_id": "FIRST", "verdict": "merge_after_changes", "reasons": []}, "needs at least one reason"),
    ({"item_id": "FIRST", "verdict": "merge", "reasons": ["tests"]}, "gives no reasons"),
    ({"item_id": "FIRST", "verdict": "reject", "reasons": ["vibes"]}, "unknown reason vibes"),
    ({"item_id": "FIRST", "verdict": "merge", "seconds": -3}, "non-negative"),
    ({"item_id": "FIRST", "verdict": "merge", "note": 7}, "note must be text"),
    ({"item_id": "FIRST", "verdict": "merge", "note": "x" * 4001}, "note longer than"),
])
def test_a_refused_review_gets_a_json_error_and_stores_nothing(serve, body, error):
    start, store, run_id, items = serve
    port = start("ann")
    first = json.loads(_call(port, "GET", "/api/queue")[2])["items"][0]["item_id"]
    if isinstance(body, dict) and body.get("item_id") == "FIRST":
        body = {**body, "item_id": first}
    status, kind, raw = _call(port, "POST", "/api/reviews", body)
    assert status == 400 and kind == "application/json" and error in json.loads(raw)["error"]
    assert store.reviews([run_id], latest=False) == []


def test_only_its_own_host_and_json_posts_reach_it(serve):
    start, store, run_id, items = serve
    port = start("ann")
    assert _call(port, "GET", "/api/queue", headers={"Host": "evil.example:80"})[0] == 403
    review = {"item_id": items[0].item_id, "verdict": "merge"}
    assert _call(port, "POST", "/api/reviews", review, headers={"Host": f"rebind.example:{port}"})[0] == 403
    assert _call(port, "POST", "/api/reviews", b"item_id=x", headers={"Content-Type": "text/plain"})[0] == 415
    assert _call(port, "PUT", "/api/reviews", review)[0] == 405
    assert store.reviews([run_id], latest=False) == []
    status, kind, raw = _call(port, "GET", "/")
    assert status == 200 and kind.startswith("text/html") and b"__NONCE__" not in raw


def test_a_gold_item_has_the_same_shape_as_an_agent_item_and_trajectories_come_only_without_gold(serve, tmp_path):
    start, store, run_id, items = serve
    queue = json.loads(_call(start("ann"), "GET", "/api/queue")[2])
    by_id = {i["item_id"]: i for i in queue["items"]}
    gold = [by_id[i.item_id] for i in items if i.arm == "gold"]
    resolved = [by_id[i.item_id] for i in items if i.arm == "agent" and i.config.endswith("quuxmodel-a")]
    assert gold and resolved
    shape = {(tuple(sorted(i)), tuple(sorted(i["tests"]))) for i in queue["items"]}
    assert len(shape) == 1  # every item has the same fields; none has a trajectory
    assert all(set(statuses.values()) == {"passed"} for g in gold + resolved for statuses in g["tests"].values())
    assert all(f["path"].endswith(".py") and f["lines"] for g in gold for f in g["files"])

    with_traj = review_items(store, tmp_path / "runs", [run_id], trajectories=True)
    assert {i.arm for i in with_traj} == {"agent"}
    session = ReviewSession(store, [run_id], with_traj, "ann", trajectories=True)
    summary = session.queue()["items"][0]["trajectory"]
    assert summary["steps"] == 3 and summary["commands"] == ["grep -rn def ."]
    assert summary["final_message"] == "Done: fixed it."
