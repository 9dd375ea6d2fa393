"""A dead model endpoint is infrastructure (``model_unavailable``), never the agent's failure; decided without Docker.

Host side: real ModelClient calls to the scripted model server (500, 429) and to a closed port on 127.0.0.1
(connection refused) raise a ModelAPIError that ``from_error`` calls unavailable; 401, 404, a bad request and
a context-window overflow stay harness errors. Relay side: the real relay and its forwarder in front of the
same server record each call's status and where it came from; what the relay says itself (a refused path, a
budget refusal) never makes a trial unavailable, however an agent provokes it.
Pins: a run against an endpoint that was down ended every trial as harness_error, counted as agent failures,
so an outage read as the model getting worse.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
from agent_support import relay_and_forwarder  # noqa: E402

from evalharness.errors import HarnessError  # noqa: E402
from evalharness.models import ModelAPIError, ModelClient, ScriptedModelServer, context_window_error, http_error, reply  # noqa: E402
from evalharness.models.unavailable import call_failure, from_error, from_relay_calls  # noqa: E402
from evalharness.report.build import build_report  # noqa: E402
from evalharness.report.render import render  # noqa: E402
from evalharness.types import Budget, ModelEndpoint, Outcome  # noqa: E402

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "fix it"}]})


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fail(endpoint: ModelEndpoint) -> ModelAPIError:
    with pytest.raises(ModelAPIError) as caught:
        ModelClient(endpoint, backoff_base_s=0.01, backoff_max_s=0.05).complete([{"role": "user", "content": "x"}])
    return caught.value


def test_the_outcome_is_infrastructure_left_out_of_rates():
    outcome = Outcome("model_unavailable")
    assert outcome is Outcome.MODEL_UNAVAILABLE and outcome.is_infra and not outcome.counts_in_rate
    assert not outcome.resolved and not outcome.is_task_error


@pytest.mark.parametrize("status,kind", [(500, "server"), (503, "server"), (429, "rate_limit")])
def test_an_endpoint_answering_5xx_or_429_after_every_retry_is_unavailable(status, kind):
    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [http_error(status, retry_after=0.01)]}) as server:
        endpoint = server.endpoint("gpt-4o-mini", num_retries=2)
        error = _fail(endpoint)
        sent = len(server.requests)
    unavailable = from_error(error)
    assert sent == 3 and unavailable is not None and (unavailable.kind, unavailable.status) == (kind, status)
    assert unavailable.reason.splitlines()[0] == (
        f"model endpoint unavailable: {status} {'rate limited' if status == 429 else 'server error'} "
        f"from {endpoint.api_base} after 3 attempts")


def test_a_closed_port_is_unavailable_as_a_connection_failure():
    endpoint = ModelEndpoint(name="openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{closed_port()}/v1",
                             num_retries=1, timeout_s=5)
    unavailable = from_error(_fail(endpoint))
    assert unavailable is not None and (unavailable.kind, unavailable.status, unavailable.attempts) == (
        "connection", None, 2)
    assert unavailable.reason.startswith(f"model endpoint unavailable: connection failed from {endpoint.api_base} "
                                         "after 2 attempts")


@pytest.mark.parametrize("answer", [http_error(401), http_error(403), http_error(404), http_error(400),
                                    context_window_error()], ids=["401", "403", "404", "400", "context_window"])
def test_refused_keys_unknown_models_bad_requests_and_overflows_stay_harness_errors(answer):
    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [answer]}) as server:
        error = _fail(server.endpoint("gpt-4o-mini", num_retries=3))
        assert len(server.requests) == 1  # never retried either
    assert error.kind in ("auth", "not_found", "bad_request", "context_window") and from_error(error) is None


def test_other_harness_errors_are_not_unavailability():
    assert from_error(HarnessError("the agent crashed")) is None
    assert from_error(ValueError("boom")) is None


# the relay rule, on ledger entries ---------------------------------------------------------------------------
def _ok():
    return {"status": 200, "source": "endpoint"}


def _endpoint(status):
    return {"status": status, "source": "endpoint"}


def _relay(error):
    return {"status": 502, "source": "relay", "relay_error": error}


@pytest.mark.parametrize("call,kind", [
    (_ok(), None), (_endpoint(400), None), (_endpoint(401), None), (_endpoint(403), None), (_endpoint(404), None),
    (_endpoint(429), "rate_limit"), (_endpoint(500), "server"), (_endpoint(502), "server"), (_endpoint(529), "server"),
    (_relay("ConnectError"), "connection"), (_relay("ConnectTimeout"), "timeout"), (_relay("ReadTimeout"), "timeout"),
    (_relay("RemoteProtocolError"), "connection"),
    (_relay("LocalProtocolError"), None),  # a request the relay could not send: the request's doing
    (_relay("PoolTimeout"), None),  # the relay's pool full of the agent's own calls
    (_relay("ValueError"), None), (_relay("unknown"), None),
    ({**_ok(), "relay_error": "RemoteProtocolError"}, "connection"),  # the endpoint cut its answer off
    ({**_ok(), "relay_error": "BrokenPipeError"}, None),  # the agent hung up on the answer
    ({**_endpoint(400), "relay_error": "ReadError"}, None),
])
def test_each_relayed_call_counts_only_when_the_endpoint_failed(call, kind):
    assert call_failure(call) == kind


@pytest.mark.parametrize("calls,ended_well,expected", [
    ([_endpoint(500)] * 3, False, ("server", 500, 3)),
    ([_endpoint(500)] * 3, True, ("server", 500, 3)),  # the model never answered once: whatever the exit
    ([_ok(), _endpoint(503), _endpoint(503)], False, ("server", 503, 2)),  # an outage mid-trial
    ([_ok(), _endpoint(503)], True, None),  # it exited 0 after an answer: graded as it is
    ([_endpoint(500), _ok()], False, None),  # the last call succeeded: the agent's own ending
    ([_ok(), _relay("ConnectError")], False, ("connection", None, 1)),
    ([_endpoint(429), _endpoint(500)], False, ("server", 500, 2)),
    ([_endpoint(500), _endpoint(401)], False, None),  # the last failure is the configuration's
    ([_endpoint(500), _relay("LocalProtocolError")], False, None),
    ([], False, None),
])
def test_the_relay_rule(calls, ended_well, expected):
    got = from_relay_calls(calls, "http://127.0.0.1:9/v1", ended_well=ended_well)
    assert (None if got is None else (got.kind, got.status, got.attempts)) == expected


# the real relay ---------------------------------------------------------------------------------------------
def _send(root: str, method: str, target: str, body: str | None = CHAT) -> int:
    host, port = root.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request(method, target, body=body, headers={"content-type": "application/json",
                                                     "authorization": "Bearer placeholder"})
    status = conn.getresponse().status
    conn.close()
    return status


def test_the_relay_records_an_endpoint_5xx_and_an_unreachable_endpoint_as_unavailable():
    with ScriptedModelServer([reply("hello"), http_error(500), http_error(503)]) as server:
        endpoint = server.endpoint("m")
        with relay_and_forwarder(endpoint, api_key=None) as (root, ledger, _):
            statuses = [_send(root, "POST", "/v1/chat/completions") for _ in range(3)]
    assert statuses == [200, 500, 503]
    assert [(c["status"], c["source"]) for c in ledger.calls] == [(200, "endpoint"), (500, "endpoint"),
                                                                  (503, "endpoint")]
    got = from_relay_calls(ledger.calls, endpoint.api_base, ended_well=False)
    assert (got.kind, got.status, got.attempts) == ("server", 503, 2)
    assert got.reason == f"model endpoint unavailable: 503 server error from {endpoint.api_base} after 2 attempts"

    dead = ModelEndpoint(name="openai/m", api_base=f"http://127.0.0.1:{closed_port()}/v1")
    with relay_and_forwarder(dead, api_key=None) as (root, ledger, _):
        assert _send(root, "POST", "/v1/chat/completions") == 502
    assert [(c["status"], c["source"], c["relay_error"]) for c in ledger.calls] == [(502, "relay", "ConnectError")]
    got = from_relay_calls(ledger.calls, dead.api_base, ended_well=False)
    assert got.reason.startswith(f"model endpoint unavailable: connection failed from {dead.api_base} after 1 attempt")


def test_an_endpoint_that_drops_a_stream_midway_is_unavailable():
    """A real HTTP server on 127.0.0.1 that starts a streamed answer and closes the connection halfway."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            event = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                         + b"%x\r\n%s\r\n" % (len(event), event) + b"400\r\npartial")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    endpoint = ModelEndpoint(name="openai/m", api_base=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
    with relay_and_forwarder(endpoint, api_key=None) as (root, ledger, _):
        with pytest.raises((http.client.HTTPException, OSError)):
            host, port = root.removeprefix("http://").split(":")
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request("POST", "/v1/chat/completions", body=json.dumps({**json.loads(CHAT), "stream": True}),
                         headers={"content-type": "application/json"})
            conn.getresponse().read()
        assert relay_wait(ledger)
    listener.close()
    [call] = ledger.calls
    # the close reaches httpx as an incomplete chunked body or as a reset, by timing: both are a cut-off answer
    assert (call["status"], call["source"]) == (200, "endpoint")
    assert call["relay_error"] in ("RemoteProtocolError", "ReadError"), call
    got = from_relay_calls(ledger.calls, endpoint.api_base, ended_well=False)
    assert got.reason == (f"model endpoint unavailable: connection failed from {endpoint.api_base} after 1 attempt\n"
                          f"  the relay got an answer cut off: {call['relay_error']}")


def relay_wait(ledger, timeout: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while not ledger.calls and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(ledger.calls)


def test_what_the_relay_refuses_itself_never_makes_a_trial_unavailable():
    """An agent that wants its failure left out asks for refused paths and calls past its budget, then exits 1."""
    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [reply("hello")]}) as server:
        endpoint = server.endpoint("m")
        with relay_and_forwarder(endpoint, api_key=None, budget=Budget(max_steps=1)) as (root, ledger, relay):
            sent = [_send(root, "POST", "/v1/chat/completions"),   # its one allowed call
                    _send(root, "POST", "/v1/embeddings"),         # a refused path: 403
                    _send(root, "GET", "/elsewhere", None),        # outside the endpoint: 403
                    _send(root, "POST", "/v1/chat/completions"),   # past the budget: the relay's 400
                    _send(root, "POST", "/v1/chat/completions", "{not json")]  # malformed: refused as well
        reached = [r.path for r in server.requests]
    assert sent == [200, 403, 403, 400, 400] and reached == ["/v1/chat/completions"]
    assert len(relay.refused) == 2 and len(ledger.refused) == 2
    assert [c["status"] for c in ledger.calls] == [200]
    assert from_relay_calls(ledger.calls, endpoint.api_base, ended_well=False) is None


def test_a_malformed_request_the_endpoint_refuses_is_not_unavailability():
    with ScriptedModelServer({"on_exhausted": "repeat_last", "replies": [reply("hello")]}) as server:
        endpoint = server.endpoint("m")
        with relay_and_forwarder(endpoint, api_key=None) as (root, ledger, _):
            statuses = [_send(root, "POST", "/v1/chat/completions", body) for body in
                        ("{not json", json.dumps({"model": "m", "stream": True, "stream_options": [1], "messages": []}))]
    assert all(400 <= s < 500 for s in statuses), statuses
    assert [c["source"] for c in ledger.calls] == ["endpoint", "endpoint"]
    assert from_relay_calls(ledger.calls, endpoint.api_base, ended_well=False) is None


# reports ----------------------------------------------------------------------------------------------------
def test_reports_leave_unavailable_trials_out_of_rates_and_name_the_endpoint():
    rows = [("t1", "resolved", True, False), ("t2", "unresolved", False, False),
            ("t3", "model_unavailable", False, True), ("t4", "model_unavailable", False, True),
            ("t5", "sandbox_error", False, True)]
    df = pd.DataFrame([{"run_id": "r", "trial_id": f"p/{t}/minimal/m/seed-0", "pack": "p", "task_id": t,
                        "harness": "minimal", "model": "m", "seed": 0, "outcome": o, "resolved": r, "infra": i,
                        "reason": "", "cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                        "duration_s": 1.0, "started_at": None, "repo": "", "flags": ()} for t, o, r, i in rows])
    df["config"] = "minimal/m"
    report = build_report(df, [{"run_id": "r", "pack": "p", "status": "completed", "created_at": ""}])
    score = report["scores"][0]
    assert (score["n_trials"], score["n_infra"], score["resolve_rate"]) == (2, 3, 0.5)
    assert report["infra"] == {"model_unavailable": 2, "sandbox_error": 1}
    assert report["outcomes"]["minimal/m"]["model_unavailable"] == 2
    named = "3 (model endpoint unavailable 2, sandbox (Docker) failed 1)"
    for fmt in ("table", "md", "html"):
        assert named in " ".join(render(report, fmt).split()), fmt  # the terminal table wraps its title
    assert "model_unavailable" in render(report, "md").split("## Outcomes")[1]


def test_an_audit_investigator_whose_endpoint_was_down_is_an_error_finding_asked_again():
    from evalharness.audit.investigator import Investigation, judge
    from evalharness.types import AgentResult

    seen = Investigation(AgentResult(exit_status="model_unavailable", error="model endpoint unavailable: 503 ..."),
                         None, [], "no verdict: the verdict file was not written")
    finding = judge("t1", 0, seen, {}, "hash")
    assert finding.status == "error" and "model endpoint unavailable" in finding.reason  # "invalid" is never re-asked
