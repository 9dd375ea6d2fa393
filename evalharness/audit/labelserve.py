"""The labelling page: a local web server through which one annotator labels a pack's tasks.

``evalharness audit label serve PACK --annotator NAME`` serves, on 127.0.0.1 only, one page (``labelpage``:
HTML, CSS and script inline, nothing fetched from elsewhere) and a JSON API the page calls:

- ``GET /api/queue``: the queue in the annotator's order (``labels.annotator_order``) with *their own* latest
  labels and progress count; each task's findings in one list, flagged first, each with a one-line summary
  (``page_item``, ``labelsummary``). Blinding: the server reads only this annotator's labels, so nothing it answers
  says what anyone else labelled or how many labels others gave. Several annotators label the same pack by
  each running a server with their own name (one after the other or at once, on the same store).
- ``POST /api/labels``: one label as JSON (``task_id, broken, severity, family, note, seconds``). The annotator
  is the server's, never the payload's. It is stored (``Store.record_label``, source ``web``) only when it
  passes ``labels.parse_label``; anything else is answered with a JSON ``{"error": ...}`` and a 4xx status and
  changes nothing.

Task text is put on the page as text nodes, never as HTML, and the page's Content-Security-Policy runs only
its own script (a nonce per server): a statement holding ``<script>`` shows it. Requests must name the
server's own host (a web page elsewhere cannot reach it by DNS rebinding) and POSTs must be JSON (a form on
another site cannot send one without the browser asking first, which this server never allows): the
request handling is ``localweb``'s.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from typing import Any

from evalharness import localweb
from evalharness.audit.labelpage import PAGE
from evalharness.audit.labels import LabelError, QueueItem, annotator_order, parse_label
from evalharness.audit.labelsummary import headline, page_findings

PAYLOAD_KEYS = {"task_id", "broken", "severity", "family", "note", "seconds"}
FAMILY_KEYS = {"v": "validity", "w": "too_weak_tests", "s": "overly_strict", "u": "underspecified",
               "l": "solution_leak", "a": "universal_failure", "e": "environment"}
"""The page's key for each family (letters no other key of the page uses)."""


class LabelSession:
    """One annotator's view of one pack's queue, and the only way the page changes the store."""

    def __init__(self, store: Any, pack: str, items: list[QueueItem], annotator: str, *,
                 findings_hidden: bool = False):
        if not annotator.strip():
            raise LabelError("no annotator named")
        self.store, self.pack, self.annotator = store, pack, annotator.strip()
        self.findings_hidden = findings_hidden
        by_id = {item.task_id: item for item in items}
        self.items = [by_id[t] for t in annotator_order(by_id, self.annotator)]
        self.task_ids = set(by_id)

    def own_labels(self) -> dict[str, dict[str, Any]]:
        """This annotator's latest label per task; no one else's."""
        return {r["task_id"]: {"broken": bool(r["broken"]), "severity": r["severity"], "family": r["family"],
                               "note": r["note"] or ""}
                for r in self.store.labels(self.pack)
                if r["annotator"] == self.annotator and r["task_id"] in self.task_ids}

    def queue(self) -> dict[str, Any]:
        own = self.own_labels()
        return {"pack": self.pack, "annotator": self.annotator, "family_keys": FAMILY_KEYS,
                "findings_hidden": self.findings_hidden, "tasks": [page_item(item) for item in self.items],
                "labels": own, "progress": {"labelled": len(own), "total": len(self.items)}}

    def save(self, payload: Any) -> dict[str, Any]:
        """Store one label from the page; raises ``LabelError`` (nothing stored) when it is not valid."""
        payload = localweb.check_fields(payload, PAYLOAD_KEYS, "label", LabelError)
        label = parse_label(payload, self.task_ids, annotator=self.annotator)
        self.store.record_label(self.pack, task_id=label.task_id, annotator=self.annotator, broken=label.broken,
                                severity=label.severity, family=label.family, note=label.note, source="web",
                                seconds=label.seconds)
        own = self.own_labels()
        return {"ok": True, "task_id": label.task_id, "label": own[label.task_id],
                "progress": {"labelled": len(own), "total": len(self.items)}}


def page_item(item: QueueItem) -> dict[str, Any]:
    """A queue item as the page gets it: its findings (probes' and investigator's) in one list, flagged first,
    each with a one-line summary (``labelsummary``), and the line above them."""
    data = item.to_json()
    findings = page_findings(data.pop("evidence"), data.pop("verdicts"))
    return {**data, "findings": findings, "findings_line": headline(findings)}


def make_server(session: LabelSession, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port; ``server.server_address`` says which)."""
    return localweb.make_server(_Handler, session, port)


class _Handler(localweb.JsonHandler):
    page, save_path, noun, refused = PAGE, "/api/labels", "label", (LabelError,)
    session: LabelSession
