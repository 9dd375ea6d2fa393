"""The host side of the model relay: an HTTP proxy on a unix socket that reaches one endpoint only.

A trial container has no network. Its agent talks HTTP to a forwarder on 127.0.0.1 inside the
container (``forward.py``), which pipes bytes to this relay's unix socket in a directory mounted
into the container. The relay sends each request to the configured model endpoint and nowhere
else: the upstream scheme, host and port are fixed, the path must lie under the endpoint's
path prefix and be a model call or one of a few read-only paths (``routes.py``, default deny),
proxy-style absolute URLs and ``CONNECT`` are refused. It swaps the placeholder key
the agent holds for the real one (``Authorization: Bearer`` / ``x-api-key`` / ``api-key``),
streams replies (SSE) back as they arrive, and records each call's usage in a :class:`Ledger`.
"""

from __future__ import annotations

import json
import os
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from evalharness.errors import ConfigError
from evalharness.relay.ledger import Ledger
from evalharness.relay.routes import Route, allowed_summary, route_of
from evalharness.relay.wire import json_object, request_messages, summarize, with_stream_usage

DEFAULT_BASES = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_HEADERS = ("authorization", "x-api-key", "api-key")
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
               "trailer", "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding"}
_MAX_KEPT_BYTES = 32_000_000  # reply bytes kept for usage parsing; a longer reply is streamed on, not parsed


def upstream_of(name: str, api_base: str | None) -> str:
    """The endpoint URL a relay forwards to: ``api_base``, or the provider's public API for a bare model name."""
    if api_base:
        return api_base.rstrip("/")
    provider = name.split("/", 1)[0] if "/" in name else ""
    if provider in DEFAULT_BASES:
        return DEFAULT_BASES[provider]
    raise ConfigError(f"model {name}: no api_base and no default endpoint for provider {provider or '(none)'!r}",
                      "pass --api-base URL (e.g. https://api.openai.com/v1)")


class ModelRelay:
    """``with ModelRelay(upstream, socket_path, ledger, api_key=KEY):`` serves until exit.

    ``api_key`` None forwards the agent's key header unchanged (a local server that checks no key).
    ``key_header`` is added when the agent sent no key header at all ('authorization' or 'x-api-key').
    """

    def __init__(self, upstream: str, socket_path: Path, ledger: Ledger, *, api_key: str | None = None,
                 key_header: str = "authorization", timeout_s: float = 600.0):
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"model endpoint {upstream!r} is not an http(s) URL")
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.socket_path, self.ledger = Path(socket_path), ledger
        self.api_key, self.key_header = api_key, key_header
        loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=30.0), trust_env=not loopback,
                                  follow_redirects=False)
        self._server: _UnixServer | None = None
        self._in_flight = 0
        self._idle = threading.Condition()
        self.refused: list[str] = []
        """Request lines refused because they aimed elsewhere than the model endpoint."""

    def start(self) -> "ModelRelay":
        if self.socket_path.exists():
            self.socket_path.unlink()
        server = _UnixServer(str(self.socket_path), _Handler)
        server.relay = self
        self._restrict_socket()
        self._server = server
        threading.Thread(target=server.serve_forever, args=(0.05,), name="model-relay", daemon=True).start()
        return self

    def _restrict_socket(self) -> None:
        """The socket is as private as its folder: the folder's owner and group (root and the sandbox's
        fresh gid when the sandbox made the folder), mode 0660; 0600 in a folder only its owner enters;
        0666 only in a folder anyone may enter (a host that could not give it away)."""
        folder = self.socket_path.parent.stat()
        if (folder.st_uid, folder.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(self.socket_path, folder.st_uid, folder.st_gid)
        if folder.st_mode & 0o007:
            mode = 0o666  # a folder anyone may enter: the socket cannot be more private than it
        elif folder.st_mode & 0o070:
            mode = 0o660  # the sandbox's own group (root:<fresh gid>, 0750)
        else:
            mode = 0o600
        os.chmod(self.socket_path, mode)

    def enter(self) -> None:
        with self._idle:
            self._in_flight += 1

    def leave(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no request is being relayed (an agent may exit before its last reply was recorded)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def stop(self) -> None:
        self.ledger.close()
        self.wait_idle()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._http.close()
        if self.socket_path.exists():
            self.socket_path.unlink()

    def __enter__(self) -> "ModelRelay":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def route(self, method: str, path: str) -> Route | None:
        """What a request under the endpoint's prefix may do (metered call, free read), or None: refused."""
        return route_of(method, path.split("?", 1)[0][len(self.prefix):])

    def target(self, method: str, path: str) -> str | None:
        """The upstream URL for a request line, or None when it aims anywhere but the endpoint."""
        if method not in ("GET", "POST", "HEAD") or not path.startswith("/") or path.startswith("//"):
            return None
        clean = path.split("?", 1)[0]
        segments = clean.split("/")
        if ".." in segments or "." in segments or "%" in clean or "\\" in clean:
            return None
        if self.prefix and clean != self.prefix and not clean.startswith(self.prefix + "/"):
            return None
        return self.origin + path

    def headers_for(self, incoming: dict[str, str]) -> dict[str, str]:
        """Forwarded headers: hop-by-hop ones dropped, the key swapped in, no compression (usage is parsed)."""
        out = {k: v for k, v in incoming.items() if k.lower() not in _HOP_BY_HOP}
        sent = [k for k in out if k.lower() in KEY_HEADERS]
        if self.api_key is None:
            return {**out, "accept-encoding": "identity"}
        for name in sent:
            out[name] = f"Bearer {self.api_key}" if name.lower() == "authorization" else self.api_key
        if not sent:
            out[self.key_header] = f"Bearer {self.api_key}" if self.key_header == "authorization" else self.api_key
        return {**out, "accept-encoding": "identity"}


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    relay: ModelRelay

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, httpx.TransportError)):
            super().handle_error(request, client_address)


@dataclass
class _Exchange:
    """What one forwarded request got: status (502 until the endpoint answers), reply bytes kept for usage.

    ``answered`` is True once the endpoint's status line arrived: the status is the endpoint's. Until then a
    failure is the relay's, named by ``error`` (the exception's type): evalharness.models.unavailable tells
    a relay that could not reach the endpoint from a request the relay could not send. After it, ``error``
    names what cut the reply off (the endpoint dropping the stream, or the agent hanging up).
    """

    status: int = 502
    answered: bool = False
    error: str = ""
    streamed: bool = False
    has_body: bool = False
    kept: bytearray = field(default_factory=bytearray)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "evalharness-relay/1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._relay()

    do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_CONNECT = do_GET  # noqa: N815

    def _relay(self) -> None:
        relay: ModelRelay = self.server.relay  # type: ignore[attr-defined]
        relay.enter()
        try:
            self._relay_one(relay)
        finally:
            relay.leave()

    def _relay_one(self, relay: ModelRelay) -> None:
        body = self._body()
        url = relay.target(self.command, self.path)
        route = relay.route(self.command, self.path) if url is not None else None
        if route is None:
            relay.refused.append(f"{self.command} {self.path}"[:300])
            reason = ("only the model endpoint can be reached from the sandbox" if url is None else
                      f"{self.command} {self.path.split('?', 1)[0][:200]} is refused: the relay forwards only "
                      f"{allowed_summary()}, under {relay.prefix or '/'}")
            return self._reply(403, {"error": {"type": "forbidden", "message": f"evalharness relay: {reason}"}})
        if route.api is None:
            return self._forward(relay, url, body, None)
        refusal = relay.ledger.admit(self.path)
        if refusal is not None:
            return self._reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                               f"evalharness relay: {refusal}; no more model calls in this trial"}})
        if route.api == "chat":
            body = with_stream_usage(body)
        self._forward(relay, url, body, route.api)

    def _forward(self, relay: ModelRelay, url: str, body: bytes, api: str | None) -> None:
        """Send the request on and stream the reply back; a metered call is recorded (giving back its place in
        the ledger) whatever happens, before the client sees the end of the reply, so usage is never read early.
        """
        started, exchange = time.time(), _Exchange()
        try:
            self._exchange(relay, url, body, exchange)
        except BaseException as e:
            exchange.error = exchange.error or type(e).__name__
            raise
        finally:
            if api is not None:
                summary = summarize(api, bytes(exchange.kept), exchange.streamed)
                relay.ledger.record(self.path, started, time.time() - started, exchange.status, summary,
                                    request_messages(json_object(body)), answered=exchange.answered,
                                    relay_error=exchange.error or (None if exchange.answered else "unknown"))
        if exchange.has_body:
            self.wfile.write(b"0\r\n\r\n")

    def _exchange(self, relay: ModelRelay, url: str, body: bytes, exchange: "_Exchange") -> None:
        request = relay._http.build_request(self.command, url, headers=relay.headers_for(dict(self.headers.items())),
                                            content=body)
        try:
            response = relay._http.send(request, stream=True)
        except httpx.HTTPError as e:
            exchange.error = type(e).__name__
            return self._reply(502, {"error": {"type": "relay_upstream_error", "message":
                               f"evalharness relay: model endpoint unreachable ({type(e).__name__})"}})
        exchange.status, exchange.answered = response.status_code, True
        exchange.streamed = "text/event-stream" in response.headers.get("content-type", "")
        try:
            exchange.has_body = self._send_head(response)
            for chunk in response.iter_raw() if exchange.has_body else ():
                if len(exchange.kept) < _MAX_KEPT_BYTES:
                    exchange.kept.extend(chunk)
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
        finally:
            response.close()

    def _body(self) -> bytes:
        if "chunked" not in self.headers.get("transfer-encoding", "").lower():
            return self.rfile.read(int(self.headers.get("content-length") or 0))
        data = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(data)
            data.extend(self.rfile.read(size))
            self.rfile.readline()

    def _send_head(self, response: httpx.Response) -> bool:
        """Send status and headers; False when the reply has no body (HEAD, 204, 304)."""
        self.send_response(response.status_code)
        for name, value in response.headers.multi_items():
            if name.lower() not in _HOP_BY_HOP and name.lower() != "content-encoding":
                self.send_header(name, value)
        has_body = self.command != "HEAD" and response.status_code not in (204, 304)
        if has_body:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", "0")
        self.end_headers()
        return has_body

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        """Silent: every model call is in the ledger."""
