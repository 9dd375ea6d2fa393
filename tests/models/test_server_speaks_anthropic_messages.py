"""The real anthropic SDK parses the scripted server's Messages API (what Claude Code speaks).

Pins: text and tool_use blocks, usage with cache reads and writes counted apart from
input_tokens, and the streaming event sequence the SDK reassembles.
"""

from __future__ import annotations

import anthropic

from evalharness.models import bash, reply, tool_call

TOOLS = [{"name": "bash", "description": "Run a command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
USER = [{"role": "user", "content": "Fix the bug in a.py"}]


def _client(server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0, timeout=5)


def test_text_tool_use_and_usage(model_server):
    model_server.set_script([reply("Let me look.", tool_call("bash", command="cat a.py"), input_tokens=100,
                                   output_tokens=12, cached_tokens=60, cache_write_tokens=30)])
    m = _client(model_server).messages.create(model="claude-x", max_tokens=512, messages=USER, tools=TOOLS,
                                              system="You fix bugs.")
    assert [b.type for b in m.content] == ["text", "tool_use"]
    assert m.content[0].text == "Let me look."
    assert (m.content[1].name, m.content[1].input) == ("bash", {"command": "cat a.py"})
    assert m.stop_reason == "tool_use"
    u = m.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (10, 12, 60, 30)
    assert "You fix bugs." in model_server.requests[0].prompt


def test_tool_result_reaches_prompt_matcher(model_server):
    model_server.set_script({"scenarios": [{"prompt": "3 passed", "replies": ["tests pass"]}]})
    messages = USER + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "pytest"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}]},
    ]
    m = _client(model_server).messages.create(model="c", max_tokens=64, messages=messages)
    assert m.content[0].text == "tests pass" and m.stop_reason == "end_turn"


def test_streaming_event_sequence(model_server):
    command = "sed -i 's/return a - b/return a + b/' src/calc/__init__.py"
    model_server.set_script([bash(command, text="I will fix the sign in add().", output_tokens=33)])
    with _client(model_server).messages.stream(model="c", max_tokens=512, messages=USER, tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 2
    assert "message_delta" in kinds
    assert final.content[0].text == "I will fix the sign in add()."
    assert final.content[1].input == {"command": command}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 33


def test_count_tokens_and_models(model_server):
    model_server.set_script({"scenarios": [{"model": "claude-task-1", "replies": ["x"]}]})
    client = _client(model_server)
    assert client.messages.count_tokens(model="claude-task-1", messages=USER).input_tokens > 0
    assert [m.id for m in client.models.list()] == ["claude-task-1"]


def test_client_env_points_default_clients_here(model_server, monkeypatch):
    for name, value in model_server.client_env().items():
        monkeypatch.setenv(name, value)
    model_server.set_script(["from env"])
    m = anthropic.Anthropic(max_retries=0).messages.create(model="c", max_tokens=10, messages=USER)
    assert m.content[0].text == "from env"
