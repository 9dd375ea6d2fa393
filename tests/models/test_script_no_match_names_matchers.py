"""A request no scenario answers gets a 400 naming, per scenario, the matcher that failed and what the
request had to match on (api, model, prompt length, the start of its first user message), never its key.

Pins: a 400 that said only "no scenario matches model 'x'" when the prompt regex was what failed
(docs/model-server.md advised matching the instance_id, which the minimal harness never sends).
"""

from __future__ import annotations

import httpx
import openai
import pytest

SCRIPT = {"scenarios": [{"name": "calc-add", "prompt": r"add\(\) returns", "replies": ["fixed"]},
                        {"model": "slow-model", "replies": ["slow"]}]}
KEY = "sk-live0123456789abcdefghijklmnop"


def test_chat_400_names_each_failing_matcher_and_the_request(model_server):
    model_server.set_script(SCRIPT)
    client = openai.OpenAI(base_url=model_server.url + "/v1", api_key=KEY, max_retries=0, timeout=5)
    messages = [{"role": "system", "content": "You are a careful software engineer"},
                {"role": "user", "content": f"subtract() returns the sum; my key is {KEY}"}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="good", messages=messages)
    text = str(caught.value)
    assert "no scenario matches model 'good'" in text
    assert r"scenario 'calc-add': prompt regex 'add\\(\\) returns' not found in the prompt" in text
    assert "scenario 'slow-model': model is 'good', not 'slow-model'" in text
    assert "api chat" in text and "first user message 'subtract() returns the sum; my key is <redacted>'" in text
    assert KEY not in text
    assert client.chat.completions.create(model="good", messages=[
        {"role": "user", "content": "add() returns the difference"}]).choices[0].message.content == "fixed"


def test_anthropic_400_quotes_the_first_user_message_of_content_blocks(model_server):
    model_server.set_script(SCRIPT)
    body = {"model": "claude-x", "max_tokens": 10, "system": "be brief",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "the parser drops zeros"}]}]}
    answer = httpx.post(model_server.url + "/v1/messages", json=body, headers={"x-api-key": KEY}, timeout=5)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "scenario 'slow-model': model is 'claude-x', not 'slow-model'" in message
    assert "api messages" in message and "first user message 'the parser drops zeros'" in message
    assert KEY not in answer.text
