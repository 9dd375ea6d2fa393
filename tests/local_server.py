"""A ``localweb`` server (the labelling or review page's) run in a thread of the test, and called over real HTTP."""

from __future__ import annotations

import http.client
import json
import threading


class Threads:
    """Servers serving in daemon threads until ``close``."""

    def __init__(self):
        self.servers = []

    def start(self, server) -> int:
        """Serve ``server``; its port."""
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.servers.append(server)
        return server.server_address[1]

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def call(port, method, path, body=None, headers=None):
    """(status, Content-Type, body bytes); ``body`` is sent as JSON unless it is bytes or None."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, response.getheader("Content-Type"), raw
