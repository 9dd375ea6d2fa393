"""A model call contacts the configured endpoint and nothing else (no price-map fetch, no proxy).

Pins: on a machine without internet, litellm's background downloads stalled imports for 14 s;
on one with internet they would leak the fact of a run. Every socket connect and DNS lookup of
a fresh process is traced with an audit hook (PEP 578) while it imports litellm through
evalharness and calls both providers, with a proxy configured that must be bypassed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time
    seen = []

    def hook(event, args):
        if event == "socket.connect":
            seen.append(["connect", repr(args[1])])
        elif event == "socket.getaddrinfo":
            seen.append(["dns", str(args[0])])

    sys.addaudithook(hook)
    from evalharness.models import ModelClient, ScriptedModelServer, reply

    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [reply("ok")]}) as server:
        for provider, model in [("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")]:
            message, usage = ModelClient(server.endpoint(model, provider, timeout_s=5, num_retries=0)).complete(
                [{"role": "user", "content": "hi"}], extra_headers={"anthropic-beta": "prompt-caching-2024-07-31"})
            assert message["content"] == "ok" and usage.cost_usd is not None
        time.sleep(1.0)  # give any background fetch thread a chance to show itself
        port = int(server.url.rsplit(":", 1)[1])
    print(json.dumps({"port": port, "seen": seen}))
""")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_") and k.lower() != "no_proxy"}
    return {**env, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}


def test_only_the_scripted_server_is_contacted():
    done = subprocess.run([sys.executable, "-c", CHILD], env=_clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    allowed = {repr(("127.0.0.1", report["port"]))}
    connects = {address for kind, address in report["seen"] if kind == "connect"}
    lookups = {host for kind, host in report["seen"] if kind == "dns"}
    assert connects == allowed
    assert lookups <= {"127.0.0.1"}


def test_importing_the_model_layer_does_nothing():
    code = "import sys, evalharness.models; print(sorted(m for m in ('litellm', 'openai', 'anthropic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
