"""Model calls sent in parallel through the relay overshoot a budget by at most one call, like serial ones.

Pins: the ledger checked the spend so far before each call but reserved nothing, so N calls sent
at once all passed the check before the first was recorded: with --max-steps 2, six parallel
calls all reached the (billing) endpoint.
"""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from agent_support import free_port, relay_and_forwarder

from evalharness.models import ScriptedModelServer, http_error, reply
from evalharness.types import Budget, ModelEndpoint

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
SLOW = {"replies": [reply("a", input_tokens=1000, output_tokens=100, delay_s=0.3)], "on_exhausted": "repeat_last"}
"""Each call: 1100 tokens, $0.002 at the prices below, answered after a delay so calls overlap."""
PRICES = {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5}


def _post(root: str) -> int:
    host, port = root.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/chat/completions", body=CHAT, headers={"content-type": "application/json"})
    status = conn.getresponse().status
    conn.close()
    return status


def _parallel(root: str, n: int) -> list[int]:
    with ThreadPoolExecutor(n) as pool:
        return sorted(pool.map(lambda _: _post(root), range(n)))


@pytest.mark.parametrize("budget,served,which", [
    (Budget(max_steps=2), 2, "max_steps"),
    (Budget(max_cost_usd=0.005), 3, "max_cost_usd"),   # $0.002, 0.004, 0.006: the third crosses
    (Budget(max_tokens=2500), 3, "max_tokens"),        # 1100, 2200, 3300: the third crosses
], ids=["steps", "cost", "tokens"])
def test_parallel_calls_stop_within_one_call_of_the_budget(budget, served, which):
    with ScriptedModelServer(SLOW) as server:
        with relay_and_forwarder(server.endpoint("m", **PRICES), api_key=None, budget=budget) as (root, ledger, _):
            statuses = _parallel(root, 6)
        sent = len(server.requests)
    assert sent == served and statuses == [200] * served + [400] * (6 - served)
    assert ledger.usage.calls == served and ledger.exhausted is not None and ledger.exhausted.which == which


def test_calls_overlap_when_only_steps_are_limited_and_are_serial_under_a_cost_limit():
    both_in = threading.Barrier(2, timeout=10)

    def meet(request):  # answers only once two calls are at the server at the same time
        both_in.wait()
        return reply("met")

    with ScriptedModelServer(meet) as server:
        with relay_and_forwarder(server.endpoint("m"), api_key=None, budget=Budget(max_steps=2)) as (root, ledger, _):
            assert _parallel(root, 2) == [200, 200]
    assert server.max_in_flight == 2 and ledger.usage.calls == 2
    with ScriptedModelServer(SLOW) as server:
        budget = Budget(max_cost_usd=1.0)
        with relay_and_forwarder(server.endpoint("m", **PRICES), api_key=None, budget=budget) as (root, ledger, _):
            assert _parallel(root, 4) == [200] * 4
    assert server.max_in_flight == 1 and ledger.usage.calls == 4


def test_a_failed_call_gives_its_place_back():
    with ScriptedModelServer([http_error(500), reply("b")]) as server:
        with relay_and_forwarder(server.endpoint("m", **PRICES), api_key=None,
                                 budget=Budget(max_steps=1, max_cost_usd=1.0)) as (root, ledger, _):
            assert [_post(root), _post(root), _post(root)] == [500, 200, 400]
    assert ledger.usage.calls == 1 and [c["status"] for c in ledger.calls] == [500, 200]


def test_an_unreachable_endpoint_gives_its_place_back():
    endpoint = ModelEndpoint(name="openai/m", api_base=f"http://127.0.0.1:{free_port()}/v1", **PRICES)
    with relay_and_forwarder(endpoint, api_key=None, budget=Budget(max_steps=1, max_cost_usd=1.0)) as (root, ledger, _):
        assert [_post(root), _post(root)] == [502, 502]  # the second would wait forever on a leaked place
    assert ledger.usage.calls == 0 and [c["status"] for c in ledger.calls] == [502, 502]
