"""Reviews in files, for teams that review elsewhere (as pull requests in their forge, in a spreadsheet): export a
blinded queue or every stored review as CSV or JSONL, and import reviews back.

- A *queue* file has one row per item in a reviewer's order: ``item_id, reviewer, verdict, reasons, note,
  seconds`` to fill in, then ``task_id, statement, patch, tests`` to judge by. It says nothing of harness, model,
  run, trial or arm: the item id is opaque (``queue.opaque_id``) and only this runs folder maps it back.
- A *reviews* file has every stored review, unblinded: ``pack, task_id, arm, run_id, trial_id, reviewer, verdict,
  reasons, note, seconds, source, reviewed_at``.

Import reads either. A row names its item by ``item_id`` (of the runs' queue), or explicitly: ``run_id`` and
``trial_id`` for an agent trial, or ``pack``, ``task_id`` and ``arm=gold`` for a gold patch. ``reasons`` is a
JSON list or codes separated by ``;``/``,``. A row with no verdict and no note (a queue row not filled in) is
skipped and counted. Every row is checked (``verdicts.check``) before any is stored; one bad row refuses the file,
naming each bad row by its line, and the rest go to ``Store.record_reviews`` in one transaction.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalharness.errors import UserError
from evalharness.review.queue import Item
from evalharness.review.verdicts import ReviewError, check
from evalharness.tabular import read_csv, read_jsonl

QUEUE_COLUMNS = ("item_id", "reviewer", "verdict", "reasons", "note", "seconds", "task_id", "statement", "patch",
                 "tests")
REVIEW_COLUMNS = ("pack", "task_id", "arm", "run_id", "trial_id", "reviewer", "verdict", "reasons", "note", "seconds",
                  "source", "reviewed_at")
FORMATS = ("csv", "jsonl")
_SHOWN_ERRORS = 20


@dataclass
class ImportSummary:
    added: int
    blank: int


def queue_rows(items: list[Item], reviewer: str = "") -> list[dict[str, Any]]:
    return [{"item_id": i.item_id, "reviewer": reviewer, "verdict": "", "reasons": [], "note": "", "seconds": None,
             "task_id": i.task_id, "statement": i.statement, "patch": i.patch, "tests": i.tests} for i in items]


def review_rows(reviews: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from evalharness.audit.labels import as_utc

    return [{**{k: r.get(k) for k in REVIEW_COLUMNS}, "reasons": list(r["reasons"] or []), "note": r["note"] or "",
             "reviewed_at": as_utc(r["reviewed_at"]).isoformat()} for r in reviews]


def dump(rows: list[dict[str, Any]], columns: tuple[str, ...], fmt: str) -> str:
    """``rows`` as CSV (lists and mappings as JSON text) or JSONL."""
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    return out.getvalue()


def import_reviews(store: Any, path: Path, items: dict[str, Item], runs: set[str], packs: set[str]
                   ) -> ImportSummary:
    """Check every row of ``path`` (``items`` by opaque id: the runs' queue) and store them in one transaction."""
    fmt = "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson") else "csv"
    rows = read_jsonl(path) if fmt == "jsonl" else read_csv(path, _check_header(path), by_line=True)
    good, wheres, problems, blank = [], [], [], 0
    for where, raw in rows:
        if isinstance(raw, str):
            problems.append(f"{where}: {raw}")
            continue
        if not _text(raw.get("verdict")) and not _text(raw.get("note")):
            blank += 1
            continue
        try:
            target = _target(raw, items, runs, packs)
            review = check(raw, reviewer=None)
        except ReviewError as e:
            problems.append(f"{where}: {e}")
            continue
        good.append({**target, **review, "source": _text(raw.get("source"))[:40] or f"import-{fmt}"})
        wheres.append(where)
    if problems:
        shown = problems[:_SHOWN_ERRORS] + ([f"... and {len(problems) - _SHOWN_ERRORS} more"]
                                            if len(problems) > _SHOWN_ERRORS else [])
        raise UserError(f"{path}: {len(problems)} of {len(rows)} rows are invalid; nothing was imported",
                        "\n  ".join(shown))
    try:
        store.record_reviews(good)
    except UserError as e:  # the store names the row by its place in the batch: say which line that is
        found = re.match(r"review (\d+): (.*)", str(e), re.S)
        said = f"{wheres[int(found[1]) - 1]}: {found[2]}" if found else str(e)
        raise UserError(f"{path}: {said}; nothing was imported") from e
    return ImportSummary(added=len(good), blank=blank)


def _target(raw: dict[str, Any], items: dict[str, Item], runs: set[str], packs: set[str]) -> dict[str, Any]:
    """The item a row reviews, as ``Store.record_reviews`` fields."""
    item_id = _text(raw.get("item_id")).strip()
    if item_id:
        if item_id not in items:
            raise ReviewError(f"unknown item_id {item_id!r}: not an item of these runs' queue (was it exported "
                              "from another runs folder?)")
        return items[item_id].store_fields()
    arm = _text(raw.get("arm")).strip() or ("agent" if raw.get("trial_id") else "")
    if arm == "agent":
        run_id, trial_id = _text(raw.get("run_id")).strip(), _text(raw.get("trial_id")).strip()
        if not (run_id and trial_id):
            raise ReviewError("an agent review names run_id and trial_id (or an item_id)")
        if run_id not in runs:
            raise ReviewError(f"run {run_id!r} is not one of the runs given")
        for item in items.values():
            if item.run_id == run_id and item.trial_id == trial_id:
                return item.store_fields()
        return {"arm": "agent", "run_id": run_id, "trial_id": trial_id, "pack": _text(raw.get("pack")).strip(),
                "task_id": _text(raw.get("task_id")).strip()}  # the store checks the trial exists and matches
    if arm == "gold":
        pack, task_id = _text(raw.get("pack")).strip(), _text(raw.get("task_id")).strip()
        if pack not in packs:
            raise ReviewError(f"pack {pack!r} is not the pack of the runs given ({', '.join(sorted(packs))})")
        if not task_id:
            raise ReviewError("a gold review names pack and task_id")
        return {"arm": "gold", "pack": pack, "task_id": task_id, "run_id": None, "trial_id": None}
    raise ReviewError("a row names its item: item_id, or run_id and trial_id, or pack, task_id and arm=gold")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def _check_header(path: Path) -> Callable[[list[str] | None], None]:
    def check(header: list[str] | None) -> None:
        if header is None:
            raise UserError(f"{path} is empty", f"a review file has a header: {', '.join(REVIEW_COLUMNS)}")
    return check
