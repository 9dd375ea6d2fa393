"""The review queue without Docker or a server: which patches, how many gold, stratified seeded samples, opaque
ids, per-reviewer orders with patches needing reviewers first; and export/import of reviews round trip.

Pins: a queue that reviewed empty patches or the oracle's (the gold patch under another name), a sample that left
a configuration out, gold items that could be told apart by their id or their tests, a reviewer order that
depended on the other reviewers' verdicts, and an import with a bad row that stored the rows before it.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from review_run import MODELS, SECRETS, make_run

from evalharness.errors import UserError
from evalharness.review.files import QUEUE_COLUMNS, REVIEW_COLUMNS, dump, import_reviews, queue_rows, review_rows
from evalharness.review.queue import Item, _allocate, queue_order, reviewer_order, sample_agent
from evalharness.review.sources import load_items, review_items, secret_for


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path)


def test_items_are_the_agents_non_empty_patches_and_gold_reads_like_them(run):
    store, runs_dir, run_id = run
    agent, gold = load_items(store, runs_dir, [run_id], secret_for(runs_dir))
    assert len(agent) == 8 and Counter(i.config.split("/")[1] for i in agent) == {m: 4 for m in MODELS}
    assert all(i.patch.strip() and i.arm == "agent" for i in agent)  # empty patch and oracle left out
    assert len(gold) == 4 and all(g.arm == "gold" and g.patch for g in gold)
    resolved = next(i for i in agent if i.config.endswith(MODELS[0]))
    assert set(gold[0].tests) == set(resolved.tests) == {"FAIL_TO_PASS", "PASS_TO_PASS"}
    assert all(set(s.values()) == {"passed"} for g in gold for s in g.tests.values())  # from the oracle trial
    ids = [i.item_id for i in agent + gold]
    assert len(set(ids)) == 12 and all(len(i) == 13 and i.startswith("i") for i in ids)
    assert all(s not in i for i in ids for s in SECRETS)
    again, _ = load_items(store, runs_dir, [run_id], secret_for(runs_dir))
    assert [i.item_id for i in again] == [i.item_id for i in agent]  # the same secret: the same ids


def test_default_gold_is_one_per_five_and_a_sample_keeps_every_configuration(run):
    store, runs_dir, run_id = run
    items = review_items(store, runs_dir, [run_id])
    assert Counter(i.arm for i in items) == {"agent": 8, "gold": 2}
    sample = review_items(store, runs_dir, [run_id], sample=3, seed=7)
    agents = [i for i in sample if i.arm == "agent"]
    assert len(agents) == 3 and {i.config for i in agents} == {f"zorbharness/{m}" for m in MODELS}
    assert [i.key for i in sample] == [i.key for i in review_items(store, runs_dir, [run_id], sample=3, seed=7)]
    gold_tasks = {i.task_id for i in sample if i.arm == "gold"}
    assert gold_tasks <= {i.task_id for i in agents}
    assert len(review_items(store, runs_dir, [run_id], gold=0)) == 8
    with pytest.raises(UserError, match="cover only 4 tasks"):
        review_items(store, runs_dir, [run_id], gold=5)
    with pytest.raises(UserError, match="trajectories"):
        review_items(store, runs_dir, [run_id], gold=1, trajectories=True)


@pytest.mark.parametrize("k, sizes, want", [(3, {"a": 10, "b": 10}, {"a": 2, "b": 1}),
                                             (2, {"a": 99, "b": 1}, {"a": 1, "b": 1}),
                                             (5, {"a": 6, "b": 2, "c": 2}, {"a": 3, "b": 1, "c": 1}),
                                             (1, {"a": 5, "b": 5}, {"a": 1, "b": 0})])
def test_allocation_is_proportional_with_one_each_while_k_allows(k, sizes, want):
    assert _allocate(k, sizes) == want


def test_sample_draws_within_each_configuration():
    items = [Item(f"i{c}{n}", "agent", "p", f"t{n}", "x", config=c) for c in "ab" for n in range(10)]
    got = sample_agent(items, 4, seed=1)
    assert Counter(i.config for i in got) == {"a": 2, "b": 2}
    assert {i.item_id for i in sample_agent(items, 4, seed=2)} != {i.item_id for i in got}


def test_order_is_the_reviewers_own_and_puts_patches_needing_reviews_first():
    ids = [f"i{n}" for n in range(12)]
    assert reviewer_order(ids, "ann") == reviewer_order(list(reversed(ids)), " ann ")
    assert reviewer_order(ids, "ann") != reviewer_order(ids, "bob")
    who = {"i0": {"bob", "cy"}, "i1": {"ann"}, "i2": {"bob"}}
    order = queue_order(ids, "ann", who, needed=2)
    assert order[-1] == "i1" and order[-2] == "i0" and order.index("i2") < 10
    # only counts matter: the same reviewers with other verdicts give the same order (there are none here)
    assert queue_order(ids, "ann", {}, needed=1) == reviewer_order(ids, "ann")


def test_export_import_round_trip_and_a_bad_row_stores_nothing(run, tmp_path):
    store, runs_dir, run_id = run
    items = review_items(store, runs_dir, [run_id])
    queue = dump(queue_rows(items, "ann"), QUEUE_COLUMNS, "csv")
    assert all(s not in queue for s in SECRETS) and ",gold," not in queue
    rows = [json.loads(line) for line in dump(queue_rows(items, "ann"), QUEUE_COLUMNS, "jsonl").splitlines()]
    for n, row in enumerate(rows):
        row.update(verdict=["merge", "reject", "merge_after_changes"][n % 3], reasons=[] if n % 3 == 0 else
                   "tests; code_quality", note="multi\nline, \"quoted\"", seconds=12.5)
    rows[-1].update(verdict="", note="")  # not filled in
    all_items = {i.item_id: i for i in load_items(store, runs_dir, [run_id], secret_for(runs_dir))[0] +
                 load_items(store, runs_dir, [run_id], secret_for(runs_dir))[1]}
    filled = tmp_path / "filled.csv"
    filled.write_text(dump(rows, QUEUE_COLUMNS, "csv"))
    bad = tmp_path / "bad.csv"
    bad.write_text(dump(rows[:3] + [{**rows[3], "verdict": "reject", "reasons": ""}], QUEUE_COLUMNS, "csv"))
    line = len(dump(rows[:3], QUEUE_COLUMNS, "csv").splitlines()) + 1  # the header and three multi-line rows
    assert line > 5
    with pytest.raises(UserError, match=rf"\bline {line}: a reject verdict needs at least one reason"):
        import_reviews(store, bad, all_items, {run_id}, {"quickstart"})
    assert store.reviews([run_id], latest=False) == []
    summary = import_reviews(store, filled, all_items, {run_id}, {"quickstart"})
    assert (summary.added, summary.blank) == (len(items) - 1, 1)
    stored = store.reviews([run_id])
    assert Counter(r["arm"] for r in stored) == Counter(i.arm for i in items[:-1])
    assert {r["source"] for r in stored} == {"import-csv"} and stored[0]["note"] == "multi\nline, \"quoted\""

    everything = tmp_path / "reviews.jsonl"
    everything.write_text(dump(review_rows(store.reviews([run_id], latest=False)), REVIEW_COLUMNS, "jsonl"))
    other, other_runs, _ = make_run(tmp_path / "copy")
    other_items = {i.item_id: i for part in load_items(other, other_runs, [run_id], secret_for(other_runs))
                   for i in part}
    import_reviews(other, everything, other_items, {run_id}, {"quickstart"})  # explicit run/trial and pack/arm
    def key(r):
        return (r["arm"], r["task_id"], r["trial_id"], r["reviewer"], r["verdict"], tuple(r["reasons"]), r["note"],
                r["seconds"], r["reviewed_at"])
    assert sorted(map(key, other.reviews([run_id]))) == sorted(map(key, stored))
