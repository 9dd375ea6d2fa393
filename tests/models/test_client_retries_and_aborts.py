"""ModelClient retries transient failures and aborts on the rest with a message saying what to fix.

Pins: a 429 or 500 must not end a trial (mini-swe-agent's retry split), a 401 must end it at
once without printing the key, and a hung server must hit the client's timeout rather than
hold a trial for litellm's default 6000 s.
"""

from __future__ import annotations

import threading
import traceback

import pytest

from evalharness.errors import HarnessError
from evalharness.models import (
    ContextWindowExceeded,
    ModelAPIError,
    ScriptedModelServer,
    context_window_error,
    hang,
    http_error,
    reply,
)

USER = [{"role": "user", "content": "Fix a.py"}]
PROVIDERS = ["openai", "anthropic"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_errors_are_retried(model_server, fast_client, provider, status):
    model_server.set_script([http_error(status), http_error(status), reply("recovered")])
    client = fast_client(model_server.endpoint("m", provider, num_retries=2))
    message, usage = client.complete(USER)
    assert message["content"] == "recovered" and usage.calls == 1
    assert [r.status for r in model_server.requests] == [status, status, 200]


def test_retry_after_is_honoured_and_capped(model_server):
    from evalharness.models import ModelClient

    waits: list[float] = []
    model_server.set_script([http_error(429, retry_after=0.25), http_error(429, retry_after=3600), reply("ok")])
    client = ModelClient(model_server.endpoint("m", num_retries=2), backoff_base_s=0.01, backoff_max_s=7.0,
                         sleep=waits.append)
    client.complete(USER)
    assert waits == [0.25, 7.0]


def test_retries_run_out(model_server, fast_client):
    model_server.set_script([http_error(500, "boom")] * 3)
    client = fast_client(model_server.endpoint("m", num_retries=2))
    with pytest.raises(ModelAPIError, match="still failing after 3 attempts: 500") as err:
        client.complete(USER)
    assert (err.value.kind, err.value.status, err.value.attempts) == ("server", 500, 3)
    assert len(model_server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_key_aborts_at_once_and_never_shows_the_key(fast_client, monkeypatch, provider):
    secret = "sk-wrong-0123456789abcdef"
    monkeypatch.setenv("EVALHARNESS_TEST_KEY", secret)
    with ScriptedModelServer(["never served"], require_key="sk-right") as server:
        client = fast_client(server.endpoint("m", provider, api_key_env="EVALHARNESS_TEST_KEY", num_retries=3))
        with pytest.raises(HarnessError) as err:
            client.complete(USER)
        assert len(server.requests) == 1
        base = f"{server.url}/v1" if provider == "openai" else server.url
    assert str(err.value).startswith(f"401 from {base}: ")
    assert "check the key in $EVALHARNESS_TEST_KEY" in str(err.value)
    assert secret not in "".join(traceback.format_exception(err.value))


def test_scripted_401_names_the_provider_default_variable(model_server, fast_client):
    model_server.set_script([http_error(401)])
    with pytest.raises(HarnessError, match=r"check the key in \$ANTHROPIC_API_KEY"):
        fast_client(model_server.endpoint("m", "anthropic")).complete(USER)


def test_missing_key_variable_is_reported_before_calling(model_server, fast_client, monkeypatch):
    monkeypatch.delenv("EVALHARNESS_UNSET_KEY", raising=False)
    client = fast_client(model_server.endpoint("m", api_key_env="EVALHARNESS_UNSET_KEY"))
    with pytest.raises(HarnessError, match=r"\$EVALHARNESS_UNSET_KEY is not set"):
        client.complete(USER)
    assert model_server.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_model_and_context_overflow_abort(model_server, fast_client, provider):
    model_server.set_script([http_error(404), context_window_error()])
    client = fast_client(model_server.endpoint("no-such-model", provider, num_retries=3))
    with pytest.raises(ModelAPIError, match="404 from .*model '.*no-such-model' not found") as err:
        client.complete(USER)
    assert err.value.kind == "not_found"
    with pytest.raises(ContextWindowExceeded, match="context window of .* exceeded"):
        client.complete(USER)
    assert len(model_server.requests) == 2


def test_hanging_server_hits_the_timeout(model_server, fast_client):
    model_server.set_script([hang(10, "too late")])
    client = fast_client(model_server.endpoint("m", timeout_s=0.3, num_retries=0))
    with pytest.raises(ModelAPIError) as err:
        client.complete(USER)
    assert err.value.kind == "timeout"


def test_timeout_then_retry_succeeds(model_server, fast_client):
    model_server.set_script([hang(10), reply("second try")])
    client = fast_client(model_server.endpoint("m", timeout_s=0.3, num_retries=1))
    assert client.complete(USER)[0]["content"] == "second try"
    assert len(model_server.requests) == 2


def test_concurrency_is_capped_per_api_base(model_server, fast_client):
    model_server.set_script({"on_exhausted": "repeat_last", "replies": [hang(0.2, "ok")]})
    endpoint = model_server.endpoint("m", timeout_s=5)
    clients = [fast_client(endpoint, max_concurrency=2) for _ in range(2)]  # two clients, one api_base
    errors: list[BaseException] = []

    def call(client):
        try:
            client.complete(USER)
        except BaseException as e:  # surfaced by the assert below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(clients[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(model_server.requests) == 6
    assert model_server.max_in_flight <= 2
