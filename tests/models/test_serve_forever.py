"""``serve_forever`` (behind ``evalharness model-server --script FILE``) announces its URL and serves the file.

Pins: the announced URL is the one that answers, with the OpenAI base under /v1 and the
Anthropic base at the root, and Ctrl-C stops it with the recording written.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import openai

DATA = Path(__file__).parent / "data"


def test_serves_a_script_file_until_interrupted(tmp_path):
    record = tmp_path / "rec.jsonl"
    # Ctrl-C as a terminal sends it: a test run started in the background (nohup, `&`) hands its children
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from evalharness.models import serve_forever; "
            "serve_forever(sys.argv[1], '127.0.0.1', 0, record_path=sys.argv[2])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(DATA / "two_tasks.yaml"), str(record)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"on (http://127\.0\.0\.1:\d+) ", line).group(1)
        chat = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=5).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "clamp(11, 0, 10) returns 11 instead of 10"}])
        assert chat.choices[0].message.content == "Let me look at the code."
        message = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, timeout=5).messages.create(
            model="m", max_tokens=50, messages=[{"role": "user", "content": "clamp(11, 0, 10) returns 11 instead"}])
        assert "return high" in message.content[0].input["command"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)  # a hang guard, not a timing
    assert [json.loads(x)["scenario"] for x in record.read_text().splitlines()] == ["clamp", "clamp"]
