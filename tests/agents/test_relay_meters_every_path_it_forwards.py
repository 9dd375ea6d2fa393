"""Every request the relay forwards with the real key is a metered model call or a free read-only one.

Pins: only paths ending in /chat/completions, /responses or /messages were checked against the
budget and counted; every other path under the endpoint (/v1/completions, /v1/embeddings,
/v1/responses/compact, /v1/messages/batches, ...) went upstream with the real key, uncounted,
so an agent could spend past --max-cost and --max-steps.
"""

from __future__ import annotations

import http.client
import json

import pytest
from agent_support import PLANTED_KEY, relay_and_forwarder

from evalharness.models import ScriptedModelServer, reply
from evalharness.types import Budget

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})


def _send(root: str, method: str, target: str, body: str | None = None) -> tuple[int, dict]:
    host, port = root.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request(method, target, body=body, headers={"content-type": "application/json",
                                                     "authorization": "Bearer placeholder"})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw or b"{}")


@pytest.mark.parametrize("provider,method,target", [
    ("openai", "POST", "/v1/completions"),            # legacy completions: billed
    ("openai", "POST", "/v1/embeddings"),             # billed
    ("openai", "POST", "/v1/images/generations"),
    ("openai", "POST", "/v1/files"),
    ("openai", "GET", "/v1/responses/resp_123"),       # stored responses
    ("openai", "POST", "/v1/responses/resp_123/cancel"),
    ("openai", "GET", "/v1/chat/completions"),         # a model path, but not a model call
    ("openai", "HEAD", "/v1/models"),
    ("anthropic", "POST", "/v1/messages/batches"),    # billed later, never seen by the relay again
    ("anthropic", "POST", "/v1/complete"),
    ("anthropic", "GET", "/v1/files"),
])
def test_paths_that_are_neither_model_calls_nor_read_only_are_refused(provider, method, target):
    with ScriptedModelServer([reply("never")]) as server:
        endpoint = server.endpoint("m", provider=provider)
        with relay_and_forwarder(endpoint, api_key=PLANTED_KEY) as (root, ledger, relay):
            status, body = _send(root, method, target, "{}" if method == "POST" else None)
        assert server.requests == []  # the key never went out with it
    assert status == 403 and ledger.calls == [] and relay.refused == [f"{method} {target}"]
    if method != "HEAD":
        assert "only model calls" in body["error"]["message"] and "POST /chat/completions" in body["error"]["message"]


@pytest.mark.parametrize("provider,method,target", [
    ("openai", "GET", "/v1/models"),
    ("anthropic", "GET", "/v1/models"),
    ("anthropic", "POST", "/v1/messages/count_tokens"),
])
def test_read_only_paths_pass_unmetered_even_when_the_budget_is_spent(provider, method, target):
    with ScriptedModelServer([reply("a")]) as server:
        endpoint = server.endpoint("m", provider=provider)
        with relay_and_forwarder(endpoint, api_key=None, budget=Budget(max_steps=1)) as (root, ledger, relay):
            model_call = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
            assert _send(root, "POST", model_call, CHAT)[0] == 200
            status, _ = _send(root, method, target, CHAT if method == "POST" else None)
        paths = [r.path for r in server.requests]
    assert status == 200 and paths == [model_call, target] and relay.refused == []
    assert [c["path"] for c in ledger.calls] == [model_call] and ledger.usage.calls == 1


def test_response_compaction_is_a_metered_call():
    with ScriptedModelServer([reply("a")]) as server:
        endpoint = server.endpoint("m")
        with relay_and_forwarder(endpoint, api_key=None, budget=Budget(max_steps=1)) as (root, ledger, _):
            assert _send(root, "POST", "/v1/responses", json.dumps({"model": "m", "input": "x"}))[0] == 200
            status, body = _send(root, "POST", "/v1/responses/compact", json.dumps({"model": "m", "input": "x"}))
        assert [r.path for r in server.requests] == ["/v1/responses"]
    assert status == 400 and "budget exhausted" in body["error"]["message"]
    assert ledger.exhausted is not None and ledger.refused[0]["path"] == "/v1/responses/compact"
