"""The Ray executor's decisions without Ray or Docker: which trial goes to which node, which result is recorded,
what a lost node gives back, what is left when every node is gone, and which secrets a node gets.

Pins: a rescheduled trial whose first placement answered late was recorded twice; a run whose nodes all died
counted the trials never run as the agent's failures.
"""

from __future__ import annotations

from evalharness.executors.ray import Schedule, _loopback, forwarded_env, node_label
from evalharness.runconfig import RunConfig
from evalharness.types import ModelEndpoint


def _ids(n: int) -> list[str]:
    return [f"t{i}" for i in range(n)]


def test_each_node_is_filled_up_to_its_workers_and_a_free_slot_takes_the_next():
    plan = Schedule.of(_ids(7), {"a": 2, "b": 3})
    first = plan.assign()
    assert sorted(first) == sorted([("a", "t0"), ("b", "t1"), ("a", "t2"), ("b", "t3"), ("b", "t4")])
    assert plan.assign() == []  # both full
    assert plan.finished("b", "t1") is True
    assert plan.assign() == [("b", "t5")]  # the faster node takes more


def test_a_lost_node_gives_its_running_trials_back_first_and_takes_no_more():
    plan = Schedule.of(_ids(6), {"a": 2, "b": 2})
    plan.assign()  # a: t0 t2, b: t1 t3
    assert plan.finished("a", "t0")
    assert plan.lose("b", "node b lost") == ["t1", "t3"]
    assert list(plan.todo)[:2] == ["t1", "t3"]
    assert plan.assign() == [("a", "t1")]  # a has one free slot; b is never given a trial again
    assert plan.lose("b", "again") == []
    assert plan.live == ["a"]


def test_a_late_result_of_a_rescheduled_trial_is_not_recorded_twice():
    plan = Schedule.of(_ids(2), {"a": 1, "b": 1})
    plan.assign()  # a: t0, b: t1
    plan.lose("b", "lost")
    plan.finished("a", "t0")
    assert plan.assign() == [("a", "t1")]
    assert plan.finished("b", "t1") is True  # the lost node's answer came first after all: it is the one kept
    assert plan.finished("a", "t1") is False  # the second placement's result is dropped
    assert plan.complete


def test_a_requeued_trial_already_recorded_is_not_handed_out_again():
    plan = Schedule.of(_ids(3), {"a": 1, "b": 1})
    plan.assign()  # a: t0, b: t1
    plan.lose("b", "lost")  # t1 back in the queue
    assert plan.finished("b", "t1") is True  # ...but its result arrives anyway
    plan.finished("a", "t0")
    assert plan.assign() == [("a", "t2")]  # t1 is skipped, not run a second time


def test_a_stopped_trial_goes_back_to_the_front_of_the_queue():
    plan = Schedule.of(_ids(3), {"a": 1})
    plan.assign()
    plan.returned("a", "t0")
    assert plan.assign() == [("a", "t0")] and plan.remaining == {"t0", "t1", "t2"}


def test_with_every_node_lost_the_trials_without_a_result_are_stranded_once_each():
    plan = Schedule.of(_ids(5), {"a": 2, "b": 1})
    plan.assign()  # a: t0 t2, b: t1
    plan.finished("a", "t0")
    assert plan.stranded() == []  # a node is left
    plan.lose("a", "lost")
    plan.lose("b", "lost")
    assert plan.stranded() == ["t1", "t2", "t3", "t4"]
    assert plan.assign() == []


def test_only_the_key_variables_the_run_names_and_that_are_set_go_to_the_nodes():
    config = RunConfig(pack="p", harnesses=["minimal"], models=[
        ModelEndpoint(name="openai/x", api_key_env="MY_KEY"), ModelEndpoint(name="anthropic/y", api_key_env="UNSET"),
        ModelEndpoint(name="scripted/z")])
    environ = {"MY_KEY": "sk-1", "OPENAI_API_KEY": "sk-other", "HOME": "/root"}
    assert forwarded_env(config, environ) == {"MY_KEY": "sk-1"}


def test_node_labels_and_loopback_addresses():
    assert node_label("10.0.0.5", "ab12cd34ef56", "unix:///var/run/docker.sock") == \
        "ray:10.0.0.5:ab12cd34 (unix:///var/run/docker.sock)"
    assert _loopback("127.0.0.1:6379") and _loopback("localhost:6379") and _loopback("ray://127.0.0.1:10001")
    assert not _loopback("10.0.0.5:6379") and not _loopback(None)
