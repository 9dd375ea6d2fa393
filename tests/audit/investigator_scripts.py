"""Scripted investigations of the tiny pack's two tasks, for the investigator tests
(`from investigator_scripts import ...`): each (task, seed) reads /tmp/audit/, greps the code, runs the
tests at base and with the gold patch, tries the network, then writes its verdict and submits."""

from __future__ import annotations

import json
import re

from evalharness.audit.investigator import VERDICT_FILE
from evalharness.models import bash, reply, tool_call

NETWORK = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\" && echo ONLINE"


def _write(verdict) -> str:
    body = verdict if isinstance(verdict, str) else json.dumps(verdict)
    return f"cat > {VERDICT_FILE} <<'EOF'\n{body}\nEOF"


INVESTIGATION = [  # what every scripted investigation runs before it writes its verdict
    "cat /tmp/audit/task.json && wc -l /tmp/audit/statement.md /tmp/audit/gold.patch",
    "grep -n 'def ' calc/__init__.py",
    "bash /tmp/audit/run_tests.sh",
    "git apply /tmp/audit/gold.patch && bash /tmp/audit/run_tests.sh",
    NETWORK,
]
VERDICTS = {
    ("tiny-clamp", 0): {"broken": False, "severity": 0, "evidence": "F2P fails at base, passes with gold"},
    ("tiny-clamp", 1): {"broken": True, "family": "too_weak_tests", "severity": 2,
                        "evidence": "only the upper edge is tested; returning high for all values passes"},
    ("tiny-mean-empty", 0): {"broken": True, "family": "underspecified", "severity": 3,
                             "evidence": "the statement names no message"},
    ("tiny-mean-empty", 1): {"broken": True, "family": "misleading_statement", "severity": 7, "evidence": "x"},
}


def script(request):
    """One investigation per (task, seed): the task from the prompt, the seed from the request, the turn from
    the number of assistant messages so far."""
    task = re.search(r"auditing task `([^`]+)`", request.prompt).group(1)
    seed = request.body.get("seed")
    turn = sum(1 for m in request.body.get("messages", []) if m.get("role") == "assistant")
    steps = INVESTIGATION + [_write(VERDICTS[(task, seed)])]
    if turn < len(steps):
        return bash(steps[turn], text=f"step {turn}")
    return reply("Verdict written.", tool_call("submit"))
