"""Helpers for the CLI-agent tests: a relay with its real forwarder, model scripts, stored-text scans."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from evalharness.models import ModelRequest, reply, tool_call
from evalharness.relay import Ledger, ModelRelay, forwarder_source
from evalharness.types import Budget, ModelEndpoint

PLANTED_KEY = "sk-ant-planted-EVALHARNESS-TEST-KEY-4c1d2e9f77"
"""A recognisable key: it must reach the model server (require_key) and nothing else."""
KEY_ENV = "EVALHARNESS_TEST_AGENT_KEY"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def relay_and_forwarder(endpoint: ModelEndpoint, *, api_key: str | None, budget: Budget | None = None,
                        key_header: str = "authorization") -> Iterator[tuple[str, Ledger, ModelRelay]]:
    """A relay on a unix socket plus the real forwarder script in a subprocess: (forwarder root URL, ledger, relay)."""
    folder = Path(tempfile.mkdtemp(prefix="ehr-"))  # unix socket paths must stay short
    (folder / "forward.py").write_bytes(forwarder_source())
    ledger = Ledger(endpoint, budget)
    port = free_port()
    with ModelRelay(endpoint.api_base, folder / "model.sock", ledger, api_key=api_key, key_header=key_header) as relay:
        proc = subprocess.Popen([sys.executable, str(folder / "forward.py"), str(port), str(folder / "model.sock"),
                                 str(folder / "ready")])
        try:
            for _ in range(200):
                if (folder / "ready").exists():
                    break
                time.sleep(0.02)
            yield f"http://127.0.0.1:{port}", ledger, relay
        finally:
            proc.kill()
            proc.wait()
            shutil.rmtree(folder, ignore_errors=True)


def tool_results(request: ModelRequest) -> int:
    """How many tool results the conversation holds (Anthropic blocks, chat 'tool' messages, Responses outputs)."""
    body, count = request.body, 0
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            count += 1
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    for item in body.get("input") or [] if isinstance(body.get("input"), list) else []:
        count += isinstance(item, dict) and item.get("type") == "function_call_output"
    return count


def agent_script(plans: dict[str, list[str]], *, tool: str, argument: str = "command",
                 extra: dict[str, Any] | None = None, final: str = "Done.") -> Callable[[ModelRequest], Any]:
    """A server script for tool-calling agents: the task whose text matches a ``plans`` key gets its commands
    one per turn (turn = tool results so far), then ``final`` text. Requests without tools get a short text.
    """
    patterns = {re.compile(key): commands for key, commands in plans.items()}

    def answer(request: ModelRequest) -> Any:
        if not request.body.get("tools"):
            return reply("Fix the reported bug")
        commands = next((c for p, c in patterns.items() if p.search(request.prompt)), None)
        if commands is None:
            raise LookupError(f"no plan for this prompt: {request.prompt[:200]!r}")
        turn = tool_results(request)
        if turn < len(commands):
            return reply("", tool_call(tool, **{argument: commands[turn], **(extra or {})}))
        return reply(final)

    return answer


def stored_text(folder: Path) -> dict[Path, str]:
    """Every file under ``folder`` as text (binary files decoded leniently): what a run keeps."""
    return {p: p.read_bytes().decode("utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()}


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())
