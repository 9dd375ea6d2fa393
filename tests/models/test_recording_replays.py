"""A recorded session replays: the same requests get the same replies, and no key is recorded.

Pins: a harness bug seen once can be reproduced from the JSONL the server wrote, and that
file is safe to attach to an issue.
"""

from __future__ import annotations

import json

import anthropic
import openai

from evalharness.models import ScriptedModelServer, bash, http_error, read_jsonl, reply

USER = [{"role": "user", "content": "Fix a.py"}]


def _conversation(server) -> list[str]:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-live-SECRET", max_retries=1, timeout=5)
    out = []
    for _ in range(2):
        m = client.chat.completions.create(model="task-7", messages=USER).choices[0].message
        out.append((m.content or "") + "".join(c.function.arguments for c in m.tool_calls or []))
    return out


def test_recording_replays_the_same_conversation(tmp_path):
    live = tmp_path / "live.jsonl"
    script = [http_error(429, retry_after=0.01), bash("ls", text="look"), reply("done", output_tokens=3)]
    with ScriptedModelServer(script, record_path=live) as server:
        first = _conversation(server)
        saved = server.write_recording(tmp_path / "saved.jsonl")
    assert live.read_text() == saved.read_text()
    assert [r.status for r in read_jsonl(live)] == [429, 200, 200]
    with ScriptedModelServer(live) as replay:
        assert _conversation(replay) == first
    assert [r.status for r in replay.requests] == [429, 200, 200]


def test_recording_holds_no_secret(tmp_path):
    path = tmp_path / "rec.jsonl"
    with ScriptedModelServer(["hi"], record_path=path) as server:
        anthropic.Anthropic(base_url=server.url, api_key="sk-ant-SECRET", max_retries=0).messages.create(
            model="c", max_tokens=10, messages=USER, extra_headers={"x-custom-token": "tok-SECRET"})
    text = path.read_text()
    assert "SECRET" not in text
    record = json.loads(text)
    assert record["headers"]["x-custom-token"] == "<redacted>"
    assert record["body"]["messages"] == USER and record["reply"] == {"text": "hi"}
