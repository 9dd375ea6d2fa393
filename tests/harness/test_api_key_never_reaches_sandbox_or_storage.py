"""A planted API key (in the variable named by --api-key-env, required by the server) is used for
every model call, yet it is in no stored file (trajectory, logs, results, patch, test output,
manifest, report) nor the database, and the sandbox never sees it: neither its environment nor
any file the agent can read under /testbed /tmp /home /etc /root /opt /var during the trial. When the model itself
writes the key into its reply, a command and the patch, what is stored is redacted.

Pins: a harness that passed the host environment (keys included) to every sandbox command,
and an auth error whose message, with the key in it, went into result.json and the database.
"""

from __future__ import annotations

import json
import secrets

import pytest
from harness_scripts import MINI, MINIMAL, TrialScript, command, submit
from support import TINYPACK, run_cli

from evalharness.models import ScriptedModelServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NEEDLE = secrets.token_hex(12)
KEY = f"sk-evalharness-planted-{NEEDLE}"
LOOK = f"env; echo ===; grep -rlF {NEEDLE} /testbed /tmp /home /etc /root /opt /var 2>/dev/null; echo grep-exit=$?"


def _leaky(harness: str) -> list:
    leak = command(harness, f"echo '# {KEY}' >> calc/__init__.py && tail -1 calc/__init__.py")
    leak = leak.model_copy(update={"text": f"I found the key {KEY} and will write it down."})
    return [[command(harness, LOOK)], [leak], [submit(harness)]]


def test_the_key_is_used_but_never_stored_nor_seen_by_the_sandbox(tmp_path, base_image, tinypack):
    script = TrialScript(tinypack.tasks, {"tiny-clamp": _leaky})
    with ScriptedModelServer(script, require_key=KEY) as server:
        run_cli("run", "--pack", str(TINYPACK), "--harness", MINIMAL, "--harness", MINI,
                "--model", "openai/scripted-gpt", "--api-base", f"{server.url}/v1", "--api-key-env", "EH_PLANTED_KEY", "--task", "tiny-clamp",
                "--input-cost-per-token", "1e-6", "--output-cost-per-token", "2e-6", cwd=tmp_path,
                env={"EH_PLANTED_KEY": KEY})
        statuses = [r.status for r in server.requests]
    assert statuses == [200] * 6  # the key was sent and accepted on every call (3 per harness)

    stored = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "evalharness.db" for p in stored) and any(p.suffix == ".html" for p in stored)
    assert [p for p in stored if KEY.encode() in p.read_bytes()] == []

    for harness in (MINIMAL, MINI):
        folder = next(tmp_path.glob(f"runs/*/tinypack/tiny-clamp/{harness}/*/seed-0"))
        steps = json.loads((folder / "trajectory.json").read_text())["steps"]
        looked = next(s for s in steps if s["kind"] == "command" and s["command"] == LOOK)
        env_part, _, files_part = looked["output"].partition("===")
        assert NEEDLE not in env_part and "PATH=" in env_part
        # grep lists no file (exit 1: no match; 2: also some unreadable paths, e.g. /root, for the agent user)
        assert files_part.strip() in ("grep-exit=1", "grep-exit=2"), files_part
        assert "<redacted>" in json.dumps(steps)  # the model's own leak was stored redacted
        assert "# <redacted>" in (folder / "patch.diff").read_text()
