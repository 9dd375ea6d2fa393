"""BudgetTracker refuses a call once any limit is reached, so no budget is overshot by more than one call.

Pins: a trial with max_cost_usd must not keep calling after the money is gone, and a cost
limit on a model with unknown price must fail loudly instead of being silently ignored.
"""

from __future__ import annotations

import pytest

from evalharness.errors import BudgetExhausted, HarnessError
from evalharness.models import BudgetTracker, reply
from evalharness.types import Budget, Usage

USER = [{"role": "user", "content": "go"}]


def _run(tracker: BudgetTracker, calls: list[Usage]) -> BudgetExhausted | None:
    for usage in calls:
        try:
            tracker.check_before_call()
        except BudgetExhausted as e:
            return e
        tracker.record(usage)
    return None


def test_steps_stop_exactly_at_the_limit():
    tracker = BudgetTracker(Budget(max_steps=3))
    stop = _run(tracker, [Usage(calls=1)] * 10)
    assert (stop.which, stop.limit, stop.used) == ("max_steps", 3, 3)
    assert tracker.usage.calls == 3


@pytest.mark.parametrize("per_call", [0.3, 0.7, 1.1])
def test_cost_overshoots_by_at_most_one_call(per_call):
    tracker = BudgetTracker(Budget(max_cost_usd=2.0))
    stop = _run(tracker, [Usage(input_tokens=1, cost_usd=per_call, calls=1)] * 20)
    spent = tracker.usage.cost_usd
    assert stop.which == "max_cost_usd" and spent >= 2.0
    assert spent - per_call < 2.0  # the call before the last was still under the cap
    assert str(stop).startswith("budget exhausted: max_cost_usd limit 2 reached")


def test_tokens_count_input_plus_output():
    tracker = BudgetTracker(Budget(max_tokens=100))
    stop = _run(tracker, [Usage(input_tokens=30, output_tokens=10, calls=1)] * 10)
    assert (stop.which, stop.used, tracker.usage.calls) == ("max_tokens", 120, 3)


def test_wall_time_uses_the_clock():
    now = [100.0]
    tracker = BudgetTracker(Budget(max_wall_s=60), clock=lambda: now[0])
    tracker.check_before_call()
    assert tracker.remaining_wall_s == 60
    now[0] = 161.0
    with pytest.raises(BudgetExhausted) as err:
        tracker.check_before_call()
    assert (err.value.which, err.value.used) == ("max_wall_s", 61.0)
    assert tracker.remaining_wall_s == 0


def test_unknown_cost_with_a_cost_limit_is_an_error_not_a_free_call():
    tracker = BudgetTracker(Budget(max_cost_usd=1.0))
    tracker.record(Usage(input_tokens=5, cost_usd=None, calls=1))
    assert tracker.usage.cost_usd is None
    with pytest.raises(HarnessError, match="cannot enforce max_cost_usd=1: the cost of a model call is unknown"):
        tracker.check_before_call()


def test_no_limits_never_stops_and_totals_add_up():
    tracker = BudgetTracker(Budget())
    assert _run(tracker, [Usage(input_tokens=2, output_tokens=1, cached_tokens=1, cost_usd=0.5, latency_s=0.1,
                                calls=1)] * 4) is None
    total = tracker.usage
    assert (total.input_tokens, total.output_tokens, total.cached_tokens, total.calls) == (8, 4, 4, 4)
    assert total.cost_usd == pytest.approx(2.0) and total.latency_s == pytest.approx(0.4)


def test_with_a_real_client_the_server_sees_at_most_one_call_past_the_cap(model_server, fast_client):
    model_server.set_script({"on_exhausted": "repeat_last", "replies": [reply("step", input_tokens=400, output_tokens=100)]})
    client = fast_client(model_server.endpoint("m", input_cost_per_token=1e-5, output_cost_per_token=3e-5))
    tracker = BudgetTracker(Budget(max_cost_usd=0.03))  # 0.007 per call: the 5th call crosses the cap
    with pytest.raises(BudgetExhausted) as err:
        for _ in range(100):
            tracker.check_before_call()
            tracker.record(client.complete(USER)[1])
    assert len(model_server.requests) == 5 == tracker.usage.calls
    assert err.value.used == pytest.approx(0.035)
