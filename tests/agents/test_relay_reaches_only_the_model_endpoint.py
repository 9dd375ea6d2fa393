"""The relay forwards only to the model endpoint, swaps in the real key, and counts usage on every wire.

Pins: an agent that could use the relay as a general proxy (absolute URLs, CONNECT, other paths)
would reach the package index or the internet from a sealed sandbox; usage taken only from
non-streaming replies would report 0 tokens for every CLI agent, all of which stream.
"""

from __future__ import annotations

import http.client
import socket

import anthropic
import openai
import pytest
from agent_support import PLANTED_KEY, relay_and_forwarder

from evalharness.models import ScriptedModelServer, reply
from evalharness.models import load_litellm
from evalharness.relay.server import ModelRelay
from evalharness.types import Budget


def _raw(root: str, method: str, target: str, headers: dict[str, str] | None = None) -> int:
    host, port = root.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, target, body=b"{}" if method == "POST" else None, headers=headers or {})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("method,target", [
    ("GET", "http://pypi.org/simple/"),           # proxy-style absolute URL
    ("CONNECT", "pypi.org:443"),                   # tunnel
    ("GET", "/etc/passwd"),                        # outside the endpoint's /v1 prefix
    ("POST", "/v2/chat/completions"),
    ("POST", "/v1/../admin"),                      # traversal out of the prefix
    ("POST", "/v1/%2e%2e/admin"),
    ("POST", "//evil.example/v1/chat/completions"),
    ("DELETE", "/v1/models"),
])
def test_requests_aimed_elsewhere_are_refused_and_never_sent(method, target):
    with ScriptedModelServer(["never"]) as server:
        with relay_and_forwarder(server.endpoint("gpt-4o-mini"), api_key=None) as (root, ledger, relay):
            assert _raw(root, method, target) == 403
            assert relay.refused and server.requests == [] and ledger.calls == []


def test_a_foreign_host_header_still_reaches_only_the_endpoint():
    with ScriptedModelServer([reply("hi")]) as server:
        with relay_and_forwarder(server.endpoint("gpt-4o-mini"), api_key=None) as (root, ledger, _):
            status = _raw(root, "POST", "/v1/chat/completions", {"Host": "pypi.org", "content-type": "application/json"})
            assert status == 200
            assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_the_relay_adds_the_real_key_the_agent_only_has_a_placeholder():
    with ScriptedModelServer([reply("one"), reply("two")], require_key=PLANTED_KEY) as server:
        endpoint = server.endpoint("claude-sonnet-4-5", provider="anthropic")
        with relay_and_forwarder(endpoint, api_key=PLANTED_KEY, key_header="x-api-key") as (root, ledger, _):
            client = anthropic.Anthropic(base_url=root, api_key="sk-placeholder", max_retries=0)
            message = client.messages.create(model="m", max_tokens=50,
                                             messages=[{"role": "user", "content": "hi"}])
            assert message.content[0].text == "one"
        with relay_and_forwarder(endpoint, api_key=None) as (root, ledger, _):  # no key added: refused upstream
            client = anthropic.Anthropic(base_url=root, api_key="sk-placeholder", max_retries=0)
            with pytest.raises(anthropic.AuthenticationError):
                client.messages.create(model="m", max_tokens=50,
                                       messages=[{"role": "user", "content": "hi"}])
            assert ledger.calls[0]["status"] == 401 and ledger.usage.calls == 0


def _chat(root: str, stream: bool) -> None:
    client = openai.OpenAI(base_url=f"{root}/v1", api_key="placeholder", max_retries=0)
    kwargs = {"stream_options": {"include_usage": True}} if stream else {}
    result = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}],
                                            stream=stream, **kwargs)
    if stream:
        list(result)


def _responses(root: str, stream: bool) -> None:
    client = openai.OpenAI(base_url=f"{root}/v1", api_key="placeholder", max_retries=0)
    result = client.responses.create(model="gpt-4o-mini", input="x", stream=stream)
    if stream:
        list(result)


def _messages(root: str, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=root, api_key="placeholder", max_retries=0)
    if stream:
        with client.messages.stream(model="m", max_tokens=50,
                                    messages=[{"role": "user", "content": "x"}]) as s:
            s.get_final_message()
    else:
        client.messages.create(model="m", max_tokens=50, messages=[{"role": "user", "content": "x"}])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("call,provider", [(_chat, "openai"), (_responses, "openai"), (_messages, "anthropic")],
                         ids=["chat", "responses", "messages"])
def test_usage_is_counted_on_every_wire_streaming_or_not(call, provider, stream):
    script = [reply("a", input_tokens=1200, output_tokens=34, cached_tokens=200, cache_write_tokens=0),
              reply("b", input_tokens=800, output_tokens=6)]
    with ScriptedModelServer(script) as server:
        endpoint = server.endpoint("m", provider=provider, input_cost_per_token=1e-6, output_cost_per_token=1e-5)
        with relay_and_forwarder(endpoint, api_key=None) as (root, ledger, _):
            call(root, stream)
            call(root, stream)
    usage = ledger.usage
    assert (usage.input_tokens, usage.output_tokens, usage.calls) == (2000, 40, 2)
    assert usage.cached_tokens == 200
    assert usage.cost_usd == pytest.approx(2000 * 1e-6 + 40 * 1e-5)
    assert [c["content"] for c in ledger.calls] == ["a", "b"]


def test_anthropic_cache_writes_count_as_input():
    script = [reply("a", input_tokens=1000, output_tokens=10, cached_tokens=300, cache_write_tokens=100)]
    with ScriptedModelServer(script) as server:
        with relay_and_forwarder(server.endpoint("m", provider="anthropic"), api_key=None) as (root, ledger, _):
            _messages(root, stream=True)
    usage = ledger.usage
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (1000, 300, 100)


def test_cost_comes_from_litellm_prices_for_known_models_and_is_unknown_otherwise():
    with ScriptedModelServer([reply("a", input_tokens=1000, output_tokens=100)] * 2) as server:
        with relay_and_forwarder(server.endpoint("gpt-4o-mini"), api_key=None) as (root, known, _):
            _chat(root, stream=True)
        with relay_and_forwarder(server.endpoint("my-local-model"), api_key=None) as (root, unknown, _):
            client = openai.OpenAI(base_url=f"{root}/v1", api_key="placeholder", max_retries=0)
            client.chat.completions.create(model="my-local-model", messages=[{"role": "user", "content": "x"}])
    prompt, completion = load_litellm().cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=1000,
                                                       completion_tokens=100)
    assert known.usage.cost_usd == pytest.approx(prompt + completion) and known.usage.cost_usd > 0
    assert unknown.usage.cost_usd is None and unknown.usage.input_tokens == 1000


def test_a_step_budget_refuses_the_next_call_without_sending_it():
    with ScriptedModelServer([reply("a"), reply("b")]) as server:
        with relay_and_forwarder(server.endpoint("m"), api_key=None, budget=Budget(max_steps=1)) as (root, ledger, _):
            _chat(root, stream=False)
            with pytest.raises(openai.BadRequestError, match="budget exhausted"):
                _chat(root, stream=False)
        assert len(server.requests) == 1
    assert ledger.exhausted is not None and ledger.exhausted.which == "max_steps"


def test_an_unreachable_endpoint_is_a_502_not_a_hang():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    from evalharness.types import ModelEndpoint

    with relay_and_forwarder(ModelEndpoint(name="openai/m", api_base=dead), api_key=None) as (root, _, _):
        assert _raw(root, "POST", "/v1/chat/completions") == 502


def test_only_http_endpoints_are_accepted(tmp_path):
    from evalharness.errors import ConfigError
    from evalharness.relay import Ledger
    from evalharness.types import ModelEndpoint

    with pytest.raises(ConfigError, match="not an http"):
        ModelRelay("file:///etc/passwd", tmp_path / "s", Ledger(ModelEndpoint(name="openai/m")))
