"""The review page's server: one reviewer judges a blinded queue of patches on 127.0.0.1.

``evalharness review serve RUN_ID... --reviewer NAME`` serves one page (``page``: HTML, CSS and script inline,
nothing fetched from elsewhere) and a JSON API:

- ``GET /api/queue``: the items in this reviewer's order (``queue.queue_order``), each as ``Item`` public
  fields only: opaque id, task id, statement, the diff split by file with syntax tokens, the suspicious added
  lines with their ``path:line`` (``grading.suspicious``, both arms alike), the test statuses and, when
  trajectories are on, a trajectory summary. Never harness, model, run, trial, seed or arm; and of the
  reviews only this reviewer's own.
- ``POST /api/reviews``: one review as JSON (``item_id, verdict, reasons, note, seconds``), checked by
  ``verdicts.check`` with the server's reviewer (never the payload's) and stored with ``Store.record_reviews``
  (source ``web``); anything else gets a JSON ``{"error": ...}`` with a 4xx status and stores nothing.

The security design is the labelling page's (``localweb``, which handles both pages' requests): only
127.0.0.1, requests must name the server's own host (no DNS rebinding), POSTs must be JSON, the page's
Content-Security-Policy runs only its own nonce'd script, and every text goes in with ``textContent``.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from typing import Any

from evalharness import localweb
from evalharness.errors import UserError
from evalharness.grading.suspicious import scan_patch
from evalharness.review.codes import REASONS, VERDICTS
from evalharness.review.highlight import split_diff
from evalharness.review.page import PAGE
from evalharness.review.queue import Item, item_key, queue_order
from evalharness.review.verdicts import ReviewError, check

PAYLOAD_KEYS = {"item_id", "verdict", "reasons", "note", "seconds"}
VERDICT_KEYS = {"m": "merge", "a": "merge_after_changes", "r": "reject"}
REASON_KEYS = {str(n): code for n, code in enumerate(REASONS, 1)}


class ReviewSession:
    """One reviewer's view of a queue, and the only way the page changes the store."""

    def __init__(self, store: Any, run_ids: list[str], items: list[Item], reviewer: str, *, needed: int = 1,
                 trajectories: bool = False):
        if not reviewer.strip():
            raise ReviewError("no reviewer named")
        self.store, self.run_ids, self.reviewer, self.needed = store, run_ids, reviewer.strip(), needed
        self.trajectories = trajectories
        self.items = {i.item_id: i for i in items}
        self.by_key = {i.key: i.item_id for i in items}
        self.public = {i.item_id: _public(i, trajectories) for i in items}

    def _reviews(self) -> list[tuple[str, dict[str, Any]]]:
        """(item id, latest review) for this queue's items, every reviewer's."""
        out = []
        for r in self.store.reviews(self.run_ids):
            item_id = self.by_key.get(item_key(r["arm"], r["pack"], r["task_id"], r["run_id"], r["trial_id"]))
            if item_id is not None:
                out.append((item_id, r))
        return out

    def own_reviews(self) -> dict[str, dict[str, Any]]:
        return {item_id: {"verdict": r["verdict"], "reasons": list(r["reasons"]), "note": r["note"] or ""}
                for item_id, r in self._reviews() if r["reviewer"] == self.reviewer}

    def reviewers_of(self) -> dict[str, set[str]]:
        who: dict[str, set[str]] = {}
        for item_id, r in self._reviews():
            who.setdefault(item_id, set()).add(r["reviewer"])
        return who

    def queue(self) -> dict[str, Any]:
        order = queue_order(self.items, self.reviewer, self.reviewers_of(), self.needed)
        own = self.own_reviews()
        return {"reviewer": self.reviewer, "verdicts": VERDICTS, "verdict_keys": VERDICT_KEYS,
                "reasons": REASONS, "reason_keys": REASON_KEYS, "trajectories": self.trajectories,
                "items": [self.public[i] for i in order], "reviews": own,
                "progress": {"reviewed": len(own), "total": len(self.items)}}

    def save(self, payload: Any) -> dict[str, Any]:
        """Store one review from the page; raises ``ReviewError`` (nothing stored) when it is not valid."""
        payload = localweb.check_fields(payload, PAYLOAD_KEYS, "review", ReviewError)
        item = self.items.get(payload.get("item_id")) if isinstance(payload.get("item_id"), str) else None
        if item is None:
            raise ReviewError(f"unknown item {payload.get('item_id')!r}")
        review = check(payload, reviewer=self.reviewer)
        self.store.record_reviews([{**item.store_fields(), **review, "source": "web"}])
        own = self.own_reviews()
        return {"ok": True, "item_id": item.item_id, "review": own[item.item_id],
                "progress": {"reviewed": len(own), "total": len(self.items)}}


KINDS = ("python", "javascript")
"""The file kinds the page scans, whatever the pack's language: the same for every item and arm."""


def _public(item: Item, trajectories: bool) -> dict[str, Any]:
    """What the page may know of an item: nothing that names its configuration, run or arm.

    ``suspicious``: the suspicious added lines (``grading.suspicious``) of the patch shown, found here for both
    arms alike, so that they never tell a gold patch from an agent's (result.json's findings are the same lines
    of the same patch, for agent trials only)."""
    out = {"item_id": item.item_id, "task_id": item.task_id, "statement": item.statement,
           "files": split_diff(item.patch), "tests": item.tests,
           "suspicious": [f.to_dict() for f in scan_patch(item.patch.encode("utf-8", "replace"), kinds=KINDS)]}
    if trajectories:
        out["trajectory"] = item.trajectory
    return out


def make_server(session: ReviewSession, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port; ``server.server_address`` says which)."""
    return localweb.make_server(_Handler, session, port)


class _Handler(localweb.JsonHandler):
    page, save_path, noun, refused = PAGE, "/api/reviews", "review", (ReviewError, UserError)
    session: ReviewSession
