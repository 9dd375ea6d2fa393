"""Scripts choose replies by scenario (model name or prompt regex), each with its own cursor.

Pins: two tasks running at once must each get their own conversation, and a script that runs
out or matches nothing must say so on the wire instead of answering something arbitrary.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from evalharness.errors import ConfigError
from evalharness.models import ModelRequest, Reply, ScriptedModelServer, load_script

DATA = Path(__file__).parent / "data"


def _ask(server, prompt: str, model: str = "m") -> str:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0, timeout=5)
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}])
    message = r.choices[0].message
    return (message.content or "") + "".join(c.function.arguments for c in message.tool_calls or [])


def test_prompt_regex_scenarios_keep_separate_cursors(model_server):
    model_server.set_script({"scenarios": [
        {"prompt": r"task-A\b", "replies": ["A1", "A2"]},
        {"prompt": r"task-B\b", "replies": ["B1", "B2"]},
    ]})
    answers = [_ask(model_server, p) for p in ("do task-A", "do task-B", "task-B again", "task-A again")]
    assert answers == ["A1", "B1", "B2", "A2"]
    assert [(r.scenario, r.reply_index) for r in model_server.requests] == [
        (r"task-A\b", 0), (r"task-B\b", 0), (r"task-B\b", 1), (r"task-A\b", 1)]


def test_model_name_scenarios_and_fallback(model_server):
    model_server.set_script({"scenarios": [{"model": "gpt-x", "replies": ["from gpt-x"]}], "replies": ["default"]})
    assert _ask(model_server, "hi", model="gpt-x") == "from gpt-x"
    assert _ask(model_server, "hi", model="other") == "default"


def test_used_up_script_answers_400_naming_the_scenario(model_server):
    model_server.set_script({"scenarios": [{"name": "only", "model": "m", "replies": ["one"]}]})
    assert _ask(model_server, "hi") == "one"
    with pytest.raises(openai.BadRequestError, match="scenario 'only' is used up after 1 replies"):
        _ask(model_server, "hi")
    with pytest.raises(openai.BadRequestError, match="no scenario matches model 'zzz'"):
        _ask(model_server, "hi", model="zzz")


@pytest.mark.parametrize(("mode", "expected"), [("repeat_last", ["1", "2", "2", "2"]), ("cycle", ["1", "2", "1", "2"])])
def test_on_exhausted_modes(model_server, mode, expected):
    model_server.set_script({"on_exhausted": mode, "replies": ["1", "2"]})
    assert [_ask(model_server, "hi") for _ in expected] == expected


def test_callable_script_sees_the_request(model_server):
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> Reply | str:
        seen.append(request)
        return f"echo: {request.prompt} via {request.api} for {request.model}"

    model_server.set_script(answer)
    assert _ask(model_server, "ping", model="fn-model") == "echo: ping via chat for fn-model"
    assert seen[0].path == "/v1/chat/completions" and seen[0].body["model"] == "fn-model"


def test_example_script_file_serves_each_task(tmp_path):
    clamp, mean = "clamp(11, 0, 10) returns 11 instead of 10", "mean([]) raises ZeroDivisionError; ..."
    with ScriptedModelServer(DATA / "two_tasks.yaml") as server:
        assert "cat calc/__init__.py" in _ask(server, f"Fix this issue: {clamp}")
        with pytest.raises(openai.RateLimitError):
            _ask(server, mean)
        assert "raise ValueError" in _ask(server, mean)
        assert "return high" in _ask(server, f"{clamp}, step 2")
    assert server.requests[1].status == 429


def test_json_script_file_loads_every_reply_kind():
    spec = load_script(DATA / "errors.json")
    replies = [spec.next_reply(ModelRequest(path="/v1/chat/completions", api="chat", model="m", body={}))[2]
               for _ in range(5)]
    assert [(r.error.status, r.error.kind) for r in replies[:4]] == [
        (429, "rate_limit"), (500, "server"), (400, "context_window"), (401, "auth")]
    assert replies[0].error.retry_after == 1 and replies[1].error.message == "upstream overloaded"
    assert replies[4].tool_calls[0].arguments == {"answer": "42"}


def test_invalid_script_file_names_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios:\n  - replies:\n      - txet: typo\n")
    with pytest.raises(ConfigError, match="bad.yaml is invalid") as err:
        load_script(bad)
    assert "txet" in str(err.value)
    with pytest.raises(ConfigError, match="not found"):
        load_script(tmp_path / "missing.yaml")


def test_callable_script_that_raises_answers_400_with_the_error(model_server):
    def broken(request: ModelRequest) -> str:
        raise KeyError("no reply for this prompt")

    model_server.set_script(broken)
    with pytest.raises(openai.BadRequestError, match="script function raised KeyError"):
        _ask(model_server, "hi")
