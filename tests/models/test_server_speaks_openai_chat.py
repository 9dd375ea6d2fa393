"""The real openai SDK, unmodified, parses the scripted server's chat completions.

Pins: a harness debugged against the fake must see what it would see from OpenAI: tool calls,
usage with cached tokens, and streamed deltas (text and tool-call arguments in pieces).
"""

from __future__ import annotations

import json

import openai

from evalharness.models import bash, reply, tool_call

TOOLS = [{"type": "function", "function": {
    "name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
USER = [{"role": "user", "content": "Fix the bug in a.py"}]


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test-secret", max_retries=0, timeout=5)


def test_text_and_usage_with_cached_tokens(model_server):
    model_server.set_script([reply("All done.", input_tokens=120, output_tokens=7, cached_tokens=100)])
    r = _client(model_server).chat.completions.create(model="m1", messages=USER)
    assert r.choices[0].message.content == "All done."
    assert r.choices[0].finish_reason == "stop"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (120, 7)
    assert r.usage.prompt_tokens_details.cached_tokens == 100
    assert r.model == "m1"


def test_tool_calls(model_server):
    model_server.set_script([reply("Two things.", tool_call("bash", command="ls -la"), tool_call("read", path="a.py"))])
    r = _client(model_server).chat.completions.create(model="m1", messages=USER, tools=TOOLS)
    calls = r.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("bash", {"command": "ls -la"}), ("read", {"path": "a.py"})]
    assert len({c.id for c in calls}) == 2
    assert r.choices[0].finish_reason == "tool_calls"


def test_streamed_tool_call_reassembles_and_usage_chunk_comes_last(model_server):
    command = "grep -rn 'def parse' src/ | head -50"  # long enough to be split across deltas
    model_server.set_script([bash(command, text="Looking for the parser first.", input_tokens=50, output_tokens=20)])
    stream = _client(model_server).chat.completions.create(
        model="m1", messages=USER, tools=TOOLS, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    argument_deltas = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(argument_deltas) > 2
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(d.choices[0].delta.tool_calls[0].function.arguments or "" for d in argument_deltas)
    assert text == "Looking for the parser first."
    assert json.loads(arguments) == {"command": command}
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 20
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


def test_stream_helper_final_completion(model_server):
    model_server.set_script([reply("streamed " * 10), bash("pytest -q")])
    client = _client(model_server)
    with client.chat.completions.stream(model="m1", messages=USER) as stream:
        assert stream.get_final_completion().choices[0].message.content == "streamed " * 10
    with client.chat.completions.stream(model="m1", messages=USER, tools=TOOLS) as stream:
        call = stream.get_final_completion().choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"command": "pytest -q"}


def test_requests_are_recorded_without_the_key(model_server):
    model_server.set_script(["ok"])
    _client(model_server).chat.completions.create(model="m1", messages=USER, temperature=0)
    (request,) = model_server.requests
    assert (request.path, request.api, request.model, request.status) == ("/v1/chat/completions", "chat", "m1", 200)
    assert request.body["messages"] == USER and request.body["temperature"] == 0
    assert request.headers["authorization"] == "<redacted>"
    assert "sk-test-secret" not in request.to_json()
    assert "Fix the bug in a.py" in request.prompt


def test_models_listing(model_server):
    model_server.set_script({"scenarios": [{"model": "task-a", "replies": ["a"]}, {"model": "task-b", "replies": ["b"]}]})
    assert [m.id for m in _client(model_server).models.list()] == ["task-a", "task-b"]
