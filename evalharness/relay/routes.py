"""Which requests the relay lets through: metered model calls, a few free read-only paths, nothing else.

Default deny. A path is read relative to the endpoint's path prefix (``/v1`` for
``https://api.openai.com/v1``, empty for ``https://api.anthropic.com``), with one leading ``/v1``
optional, so both an OpenAI-style base (prefix ``/v1``) and an Anthropic-style root base work.

- metered (``POST``; budget-checked before, usage counted after): OpenAI chat completions, the
  Responses API and its compaction call (``/responses/compact`` answers a response object with
  ``usage``), Anthropic Messages.
- free (not billed, no side effects): ``GET /models`` and ``GET /models/<id>`` (OpenAI and
  Anthropic list models there), ``POST /messages/count_tokens`` (Anthropic: free of charge).
- anything else, e.g. legacy ``/completions``, ``/embeddings``, message batches, files, stored
  responses: refused with a 403, never sent, since the relay could not count what it costs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

METERED = {"/chat/completions": "chat", "/responses": "responses", "/responses/compact": "responses",
           "/messages": "messages"}
"""Path -> wire format of the reply (evalharness.relay.wire.summarize)."""
FREE = (("GET", re.compile(r"/models(/[^/]+)?")), ("POST", re.compile(r"/messages/count_tokens")))


@dataclass(frozen=True)
class Route:
    """An allowed request: ``api`` is the wire format of a metered call, None for a free one."""

    api: str | None


def route_of(method: str, rest: str) -> Route | None:
    """The route of ``method`` + ``rest`` (the path after the endpoint's prefix), or None: refused."""
    clean = rest.split("?", 1)[0].rstrip("/")
    if clean.startswith("/v1/"):
        clean = clean[len("/v1"):]
    if method == "POST" and clean in METERED:
        return Route(METERED[clean])
    if any(method == allowed and pattern.fullmatch(clean) for allowed, pattern in FREE):
        return Route(None)
    return None


def allowed_summary() -> str:
    """One line naming what passes, for the 403 a refused request gets."""
    metered = ", ".join(f"POST {p}" for p in METERED)
    return f"model calls ({metered}) and GET /models, POST /messages/count_tokens"


__all__ = ["FREE", "METERED", "Route", "allowed_summary", "route_of"]
