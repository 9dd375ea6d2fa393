"""litellm's own completion() reaches the scripted server as documented in shared/reference/agents.md.

Pins: ``openai/<name>`` with ``api_base=<url>/v1`` and ``anthropic/<name>`` with
``api_base=<root>`` (litellm appends /v1/messages), streaming included, with tool calls and
usage parsed. If a litellm upgrade changes either URL rule, this fails first.
"""

from __future__ import annotations

import json

import pytest

from evalharness.models import bash, reply
from evalharness.models._litellm import load_litellm

TOOLS = [{"type": "function", "function": {
    "name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
USER = [{"role": "user", "content": "Fix a.py"}]


@pytest.fixture(scope="module")
def litellm():
    return load_litellm()


def _base(server, provider: str) -> str:
    return server.url + "/v1" if provider == "openai" else server.url


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_completion_with_tools(model_server, litellm, provider):
    model_server.set_script([bash("ls", text="Looking.", input_tokens=40, output_tokens=8)])
    r = litellm.completion(model=f"{provider}/scripted-1", messages=USER, tools=TOOLS, api_base=_base(model_server, provider),
                           api_key="k", timeout=5, num_retries=0, max_tokens=100)
    call = r.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("bash", {"command": "ls"})
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (40, 8)
    (request,) = model_server.requests
    assert request.path == ("/v1/chat/completions" if provider == "openai" else "/v1/messages")
    assert request.model == "scripted-1"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_streaming_completion(model_server, litellm, provider):
    text = "A reply long enough to arrive in several server-sent events."
    model_server.set_script([reply(text)])
    stream = litellm.completion(model=f"{provider}/s", messages=USER, api_base=_base(model_server, provider),
                                api_key="k", timeout=5, num_retries=0, stream=True, max_tokens=100)
    chunks = list(stream)
    assert len(chunks) > 2
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert model_server.requests[0].body["stream"] is True
