"""The local JSON server behind a one-person page (the labelling page, the review page): what it answers and to whom.

A server listens on 127.0.0.1 only. Every request must name the server's own host (a web page elsewhere cannot
reach it by DNS rebinding). ``GET /`` is the page, its ``__NONCE__`` replaced by a per-start nonce that the
Content-Security-Policy asks of every script and style; ``GET /api/queue`` is ``session.queue()``. The one POST
endpoint (``save_path``) takes only ``application/json`` of at most ``MAX_BODY`` bytes (a form on another site
cannot send that without the browser asking first, which this server never allows) and answers
``session.save(payload)``, or ``{"error": ...}`` with a 4xx status when the payload is refused. Other methods are
refused. ``listen`` and ``serve`` are the command's loop: a clear error when the port is taken, the address
printed, served until Ctrl-C.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalharness.errors import UserError

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024


class JsonHandler(BaseHTTPRequestHandler):
    """Subclass it naming ``page``, ``save_path``, ``noun`` (what a POST holds) and ``refused`` (the session's
    errors that mean a bad payload); ``make_server`` sets the session, nonce and hosts."""

    page: str
    save_path: str
    noun: str
    refused: tuple[type[Exception], ...]
    session: Any
    nonce: str
    hosts: set[str]

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._host_ok():
            return
        if self.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.page.replace("__NONCE__", self.nonce).encode(), "text/html; charset=utf-8")
        elif self.path == "/api/queue":
            self._json(HTTPStatus.OK, self.session.queue())
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page {self.path!r}"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._host_ok():
            return
        if self.path != self.save_path:
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint {self.path!r}"})
        if self.headers.get_content_type() != "application/json":
            return self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": f"send the {self.noun} as application/json"})
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._json(HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length is missing or not a number"})
        if not 0 <= length <= MAX_BODY:
            return self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                              {"error": f"a {self.noun} is at most {MAX_BODY} bytes"})
        try:
            payload = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": f"not valid JSON: {e}"})
        try:
            self._json(HTTPStatus.OK, self.session.save(payload))
        except self.refused as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})

    def do_PUT(self) -> None:  # noqa: N802
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "only GET and POST"})

    do_DELETE = do_PATCH = do_OPTIONS = do_PUT  # noqa: N815

    def _host_ok(self) -> bool:
        if self.headers.get("Host", "") in self.hosts:
            return True
        self._json(HTTPStatus.FORBIDDEN, {"error": "this server answers only to its own address"})
        return False

    def _json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body, default=str).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy",
                         f"default-src 'none'; script-src 'nonce-{self.nonce}'; style-src 'nonce-{self.nonce}'; "
                         "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        """Quiet: the terminal shows the address and Ctrl-C, not every request."""


def check_fields(payload: Any, fields: set[str], noun: str, error: type[Exception]) -> dict[str, Any]:
    """``payload`` if it is a JSON object of no fields but ``fields``; else raises ``error`` saying what is wrong."""
    if not isinstance(payload, dict):
        raise error("expected a JSON object")
    unknown = sorted(set(payload) - fields)
    if unknown:
        raise error(f"unknown field {', '.join(unknown)}; a {noun} has {', '.join(sorted(fields))}")
    return payload


def make_server(handler: type[JsonHandler], session: Any, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port; ``server.server_address`` says which)."""

    class Handler(handler):  # type: ignore[valid-type,misc]
        pass

    Handler.session, Handler.nonce = session, secrets.token_urlsafe(16)
    server = ThreadingHTTPServer((HOST, port), Handler)
    server.daemon_threads = True
    Handler.hosts = {f"{HOST}:{server.server_address[1]}", f"localhost:{server.server_address[1]}"}
    return server


def listen(make: Callable[[], ThreadingHTTPServer], port: int) -> ThreadingHTTPServer:
    """``make()``, or a ``UserError`` naming the port when it cannot listen there."""
    try:
        return make()
    except OSError as e:
        raise UserError(f"cannot listen on {HOST}:{port}: {e.strerror or e}",
                        "pass another --port, or --port 0 for any free one") from e


def url(server: ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/"


def serve(server: ThreadingHTTPServer, open_browser: bool, stopped: Callable[[], str],
          echo: Callable[[str], Any]) -> None:
    """Serve until Ctrl-C (opening the page first when asked), then ``echo(stopped())``; the port is closed."""
    if open_browser:
        import webbrowser

        webbrowser.open(url(server))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        echo(stopped())
    finally:
        server.server_close()
