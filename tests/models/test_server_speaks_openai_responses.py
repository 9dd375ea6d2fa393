"""The real openai SDK parses the scripted server's Responses API (what Codex CLI speaks).

Pins: function calls and text arrive as output items, streamed as the documented event
sequence, and the final response carries usage.
"""

from __future__ import annotations

import json

import openai

from evalharness.models import bash, reply, tool_call

TOOLS = [{"type": "function", "name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test", max_retries=0, timeout=5)


def test_text_and_function_call(model_server):
    model_server.set_script([reply("Checking.", tool_call("bash", command="ls"), input_tokens=30, output_tokens=9,
                                   cached_tokens=10)])
    r = _client(model_server).responses.create(model="codex-task", input="Fix a.py", tools=TOOLS,
                                               instructions="You are a coding agent.")
    assert r.output_text == "Checking."
    (call,) = [item for item in r.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("bash", {"command": "ls"})
    assert call.call_id
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.input_tokens_details.cached_tokens) == (30, 9, 10)
    assert "You are a coding agent." in model_server.requests[0].prompt


def test_input_items_reach_the_prompt(model_server):
    model_server.set_script({"scenarios": [{"prompt": "exit code 0", "replies": ["saw the tool output"]}]})
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Fix a.py"}]},
             {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "exit code 0"}]
    assert _client(model_server).responses.create(model="m", input=items).output_text == "saw the tool output"


def test_streaming_events(model_server):
    command = "python -m pytest tests/test_parser.py -x -q"
    model_server.set_script([bash(command, text="Running the tests now, then I will read the failures.")])
    with _client(model_server).responses.stream(model="m", input="Fix a.py", tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") > 1
    assert kinds.count("response.function_call_arguments.delta") > 1
    assert final.output_text == "Running the tests now, then I will read the failures."
    call = [item for item in final.output if item.type == "function_call"][0]
    assert json.loads(call.arguments) == {"command": command}
    assert final.usage.output_tokens > 0
