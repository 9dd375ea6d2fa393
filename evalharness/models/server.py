"""A scripted model API server on loopback: OpenAI chat completions and Responses, Anthropic Messages.

Shipped as a feature (debug a harness with no API key) and used by the tests: real clients
(``openai``, ``anthropic``, litellm, CLI agents) talk HTTP to it and get scripted replies.
It records every request, secrets redacted. ``evalharness model-server --script FILE`` runs
:func:`serve_forever`. Script format: docs/model-server.md.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from evalharness.models import wire_anthropic, wire_openai
from evalharness.models.recording import RecordedRequest, redact_headers, write_jsonl
from evalharness.models.script import ErrorSpec, Reply, ScriptError, as_script, estimate_tokens
from evalharness.models.wire_common import tokens_for
from evalharness.types import ModelEndpoint

PLACEHOLDER_KEY = "sk-evalharness-scripted"
"""Key handed to clients of a server that checks none (clients refuse to send no key at all)."""
_APIS = {
    "/v1/chat/completions": "chat", "/chat/completions": "chat",
    "/v1/responses": "responses", "/responses": "responses",
    "/v1/messages": "messages", "/v1/messages/count_tokens": "count_tokens",
}


@dataclass
class _Answer:
    status: int = 200
    body: dict[str, Any] | None = None
    events: Iterable[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: "ScriptedModelServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client dropping a keep-alive connection is normal; anything else is printed as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedModelServer:
    """``with ScriptedModelServer(script) as server:`` serves ``script`` on ``server.url`` until exit.

    ``script`` is anything :func:`evalharness.models.script.as_script` accepts: a list of
    replies, a ScriptSpec-shaped mapping, a callable ``ModelRequest -> reply``, or a file path.
    ``require_key`` makes the server answer 401 to requests not carrying that key.
    """

    def __init__(self, script: Any = None, *, host: str = "127.0.0.1", port: int = 0,
                 record_path: str | Path | None = None, require_key: str | None = None):
        self._script = as_script(script)
        self._host, self._port = host, port
        self._record_path = Path(record_path) if record_path else None
        self._require_key = require_key
        self._records: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self.max_in_flight = 0
        """Most requests handled at the same time so far."""

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> "ScriptedModelServer":
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd, self._stopping = httpd, threading.Event()
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="scripted-model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still waiting out a delay are dropped."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # what users read ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:43211`` (Anthropic base; OpenAI base is ``url + "/v1"``)."""
        if self._httpd is None:
            raise RuntimeError("the scripted model server is not running: call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def set_script(self, script: Any) -> None:
        """Replace the script; cursors start again from the first reply."""
        self._script = as_script(script)

    def clear_requests(self) -> None:
        with self._lock:
            self._records.clear()

    def endpoint(self, model: str = "scripted", provider: Literal["openai", "anthropic"] = "openai",
                 **fields: Any) -> ModelEndpoint:
        """A ModelEndpoint for ``provider/model`` pointing here (``/v1`` for OpenAI, the root for Anthropic)."""
        base = f"{self.url}/v1" if provider == "openai" else self.url
        return ModelEndpoint(name=f"{provider}/{model}", api_base=base, **fields)

    def client_env(self) -> dict[str, str]:
        """Environment variables pointing the OpenAI and Anthropic SDKs (and CLI agents) here."""
        key = self._require_key or PLACEHOLDER_KEY
        return {"OPENAI_BASE_URL": f"{self.url}/v1", "OPENAI_API_KEY": key,
                "ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": key}

    def write_recording(self, path: str | Path) -> Path:
        """Write every request so far as JSONL (replayable with ``--script FILE.jsonl``)."""
        return write_jsonl(self.requests, path)

    # request handling (called from handler threads) ---------------------------------------
    def _answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> _Answer | None:
        api = _APIS.get(path.split("?", 1)[0].rstrip("/"))
        record = RecordedRequest(path=path, api=api or "", model="", body={}, headers=redact_headers(headers),
                                 method=method, time=time.time())
        with self._lock:
            self._records.append(record)  # visible at once; filled in as the request is answered
        try:
            return self._answer_api(api, record, headers, raw)
        finally:
            self._write_record(record)

    def _answer_api(self, api: str | None, record: RecordedRequest, headers: dict[str, str],
                    raw: bytes) -> _Answer | None:
        error = wire_anthropic.error_body if api in ("messages", "count_tokens") else wire_openai.error_body
        if record.method == "GET":
            return self._get(record)
        if api is None:
            return _error(record, ErrorSpec(status=404, message=f"no such endpoint: {record.path}"), error)
        try:
            record.body = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            return _error(record, ErrorSpec(status=400, message=f"request body is not JSON: {e}"), error)
        try:  # a malformed request is a 400, as a real API answers it, never a dropped connection
            if not isinstance(record.body, dict):
                raise TypeError("the request body is not a JSON object")
            record.model = str(record.body.get("model", ""))
            record.prompt = _prompt(api, record.body)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            return _error(record, ErrorSpec(status=400, message=f"malformed request: {e}"), error)
        if self._require_key and _key_of(headers) != self._require_key:
            return _error(record, ErrorSpec(status=401), error)
        if api == "count_tokens":
            return _Answer(body={"input_tokens": estimate_tokens(record.prompt)})
        try:
            record.scenario, record.reply_index, reply = self._script.next_reply(record)
        except ScriptError as e:
            return _error(record, ErrorSpec(status=400, message=f"evalharness scripted model server: {e}"), error)
        record.reply = reply.model_dump(mode="json", exclude_defaults=True)
        if reply.delay_s and self._stopping.wait(reply.delay_s):
            return None
        if reply.error is not None:
            return _error(record, reply.error, error)
        try:
            return _render(api, record, reply)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            return _error(record, ErrorSpec(status=400, message=f"malformed request: {e}"), error)

    def _get(self, record: RecordedRequest) -> _Answer:
        if record.path.split("?", 1)[0].rstrip("/") not in ("/v1/models", "/models"):
            return _error(record, ErrorSpec(status=404, message=f"no such endpoint: {record.path}"), wire_openai.error_body)
        names = self._script.models or ["scripted"]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "evalharness", "type": "model",
                 "display_name": n, "created_at": "1970-01-01T00:00:00Z"} for n in names]
        return _Answer(body={"object": "list", "data": data, "has_more": False})

    def _write_record(self, record: RecordedRequest) -> None:
        with self._lock:
            if self._record_path is not None:
                self._record_path.parent.mkdir(parents=True, exist_ok=True)
                with self._record_path.open("a", encoding="utf-8") as f:
                    f.write(record.to_json() + "\n")

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _prompt(api: str, body: dict[str, Any]) -> str:
    if api == "chat":
        return wire_openai.chat_prompt(body)
    if api == "responses":
        return wire_openai.responses_prompt(body)
    return wire_anthropic.messages_prompt(body)


def _key_of(headers: dict[str, str]) -> str | None:
    low = {k.lower(): v for k, v in headers.items()}
    auth = low.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else low.get("x-api-key") or low.get("api-key")


def _error(record: RecordedRequest, spec: ErrorSpec, shape: Callable[[ErrorSpec], dict[str, Any]]) -> _Answer:
    record.status = spec.status
    headers = {"retry-after": f"{spec.retry_after:g}"} if spec.retry_after is not None else {}
    return _Answer(status=spec.status, body=shape(spec), headers=headers)


def _render(api: str, record: RecordedRequest, reply: Reply) -> _Answer:
    tokens, body, model = tokens_for(reply, record.prompt), record.body, record.model
    stream = bool(body.get("stream"))
    if api == "chat" and stream:
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return _Answer(events=wire_openai.chat_chunks(reply, model, tokens, usage))
    if api == "chat":
        return _Answer(body=wire_openai.chat_completion(reply, model, tokens))
    if api == "responses" and stream:
        return _Answer(events=wire_openai.response_events(reply, model, tokens, body))
    if api == "responses":
        return _Answer(body=wire_openai.response_object(reply, model, tokens, body))
    if stream:
        return _Answer(events=wire_anthropic.message_events(reply, model, tokens))
    return _Answer(body=wire_anthropic.message(reply, model, tokens))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server_version = "evalharness-scripted-model/1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def _serve(self, method: str) -> None:
        owner = self.server.owner  # type: ignore[attr-defined]
        owner._enter()
        try:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            answer = owner._answer(method, self.path, dict(self.headers.items()), raw)
            if answer is None:
                self.close_connection = True
            else:
                self._write(answer)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timed out on a delayed reply)
        finally:
            owner._leave()

    def _write(self, answer: _Answer) -> None:
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.events is None:
            payload = json.dumps(answer.body).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in answer.events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        """Silent: every request is in ``ScriptedModelServer.requests``."""


def serve_forever(script_path: str | Path, host: str = "127.0.0.1", port: int = 0, *,
                  record_path: str | Path | None = None, require_key: str | None = None,
                  announce: Callable[[str], None] | None = None) -> None:
    """Serve the script file until Ctrl-C (``evalharness model-server --script FILE``).

    ``announce`` receives the line saying where the server listens (default: printed to stdout).
    """
    announce = announce or (lambda line: print(line, flush=True))
    server = ScriptedModelServer(Path(script_path), host=host, port=port, record_path=record_path,
                                 require_key=require_key).start()
    announce(f"scripted model server on {server.url} (OpenAI base {server.url}/v1, Anthropic base {server.url})")
    try:
        threading.Event().wait()
    finally:
        server.stop()
