"""Labels in files, for teams that label elsewhere: export the queue or the labels as CSV or JSONL, import labels.

The format follows the file's suffix (``.csv``, ``.jsonl``). A *queue* file holds one row per task in an
annotator's order: the label columns first (``task_id, annotator, broken, family, severity, note``, filled
with that annotator's own latest labels, if any, and nobody else's), then what to judge by (statement,
FAIL_TO_PASS, tests, gold patch, probe evidence, investigator verdicts; in CSV the lists are JSON text).
A *labels* file holds every label stored for the pack (history included, so that importing it into an empty
store gives back the same labels, latest per annotator alike). Both import the same way:

- every row passes ``labels.parse_label``; a queue row nobody filled in (no broken, severity, family or
  note) is skipped and counted;
- one bad row refuses the whole file: a ``UserError`` names each bad row (its number and task) and reason,
  and nothing is stored;
- a row equal to a label already stored is skipped: with a time, the same task, annotator, time and answer
  (importing a labels file twice stores it once); without one (a queue row), the same answer as that
  annotator's latest label of the task (a queue exported with an annotator's labels and imported back
  adds only what they changed).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalharness.audit.labels import Label, LabelError, QueueItem, annotator_order, as_utc, is_blank, parse_label
from evalharness.errors import UserError
from evalharness.tabular import read_csv, read_jsonl

LABEL_COLUMNS = ("task_id", "annotator", "broken", "family", "severity", "note")
QUEUE_COLUMNS = LABEL_COLUMNS + ("statement", "fail_to_pass", "test_patch", "gold_patch", "evidence", "verdicts")
HISTORY_COLUMNS = LABEL_COLUMNS + ("source", "labelled_at", "seconds")
REQUIRED = ("task_id", "annotator", "broken", "severity")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_SHOWN_ERRORS = 20


@dataclass
class ImportSummary:
    added: int
    blank: int
    """Queue rows nobody labelled."""
    already_stored: int


def file_format(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise UserError(f"{path}: unknown label file format {path.suffix or '(no suffix)'!r}",
                        "name the file .csv or .jsonl") from None


def export_queue(path: Path, items: list[QueueItem], annotator: str, own_labels: list[dict[str, Any]]) -> int:
    """Write ``items`` in ``annotator``'s order, prefilled with ``own_labels`` (``Store.labels`` rows of that
    annotator only). Returns the number of rows."""
    mine = {r["task_id"]: r for r in own_labels if r["annotator"] == annotator}
    by_id = {item.task_id: item for item in items}
    rows = []
    for task_id in annotator_order(by_id, annotator):
        item, label = by_id[task_id], mine.get(task_id)
        rows.append({"task_id": task_id, "annotator": annotator,
                     "broken": None if label is None else bool(label["broken"]),
                     "family": (label or {}).get("family") or None,
                     "severity": None if label is None else label["severity"],
                     "note": (label or {}).get("note") or "",
                     "statement": item.statement, "fail_to_pass": item.fail_to_pass, "test_patch": item.test_patch,
                     "gold_patch": item.gold_patch, "evidence": item.evidence, "verdicts": item.verdicts})
    _write(path, QUEUE_COLUMNS, rows)
    return len(rows)


def export_labels(path: Path, labels: list[dict[str, Any]]) -> int:
    """Write every label given (``Store.labels(pack, latest=False)`` rows), oldest first."""
    rows = [{"task_id": r["task_id"], "annotator": r["annotator"], "broken": bool(r["broken"]),
             "family": r["family"] or None, "severity": r["severity"], "note": r["note"] or "",
             "source": r["source"], "labelled_at": as_utc(r["labelled_at"]).isoformat(),
             "seconds": r["seconds"]} for r in labels]
    _write(path, HISTORY_COLUMNS, rows)
    return len(rows)


def read_labels(path: Path, task_ids: set[str]) -> tuple[list[tuple[Label, str]], int]:
    """Every label of ``path`` with its source, checked; the count of blank rows. Raises one ``UserError``
    naming every bad row (CSV: its row number after the header; JSONL: its line)."""
    fmt = file_format(path)
    rows = read_csv(path, _check_header(path)) if fmt == "csv" else read_jsonl(path)
    labels, problems, blank = [], [], 0
    for where, raw in rows:
        if isinstance(raw, str):
            problems.append(f"{where}: {raw}")
            continue
        if is_blank(raw):
            blank += 1
            continue
        try:
            label = parse_label(raw, task_ids)
            source = str(raw.get("source") or "").strip()[:40] or f"import-{fmt}"
        except LabelError as e:
            problems.append(f"{where} (task {raw.get('task_id') or '?'}): {e}")
            continue
        labels.append((label, source))
    if problems:
        shown = problems[:_SHOWN_ERRORS] + ([f"... and {len(problems) - _SHOWN_ERRORS} more"]
                                            if len(problems) > _SHOWN_ERRORS else [])
        raise UserError(f"{path}: {len(problems)} of {len(rows)} rows are invalid; nothing was imported",
                        "\n  ".join(shown))
    return labels, blank


def import_labels(store: Any, pack: str, path: Path, task_ids: set[str]) -> ImportSummary:
    """Check every row of ``path`` first, then store its labels (``Store.record_label``) for ``pack``."""
    labels, blank = read_labels(path, task_ids)
    history = store.labels(pack, latest=False)
    stored = {_answer(r) + (as_utc(r["labelled_at"]).isoformat(timespec="milliseconds"),) for r in history}
    current = {(r["task_id"], r["annotator"]): _answer(r) for r in store.labels(pack)}
    added = again = 0
    batch: list[dict[str, Any]] = []
    for label, source in labels:
        answer = _answer(vars(label))
        if label.labelled_at is None:
            seen = current.get((label.task_id, label.annotator)) == answer
        else:
            key = answer + (label.labelled_at.isoformat(timespec="milliseconds"),)
            seen = key in stored
            stored.add(key)
        if seen:
            again += 1
            continue
        current[(label.task_id, label.annotator)] = answer
        batch.append(dict(task_id=label.task_id, annotator=label.annotator, broken=label.broken,
                          severity=label.severity, family=label.family, note=label.note, source=source,
                          seconds=label.seconds, labelled_at=label.labelled_at))
        added += 1
    store.record_labels(pack, batch)  # one transaction: a database failure stores none of the file
    return ImportSummary(added=added, blank=blank, already_stored=again)


def _answer(row: dict[str, Any]) -> tuple:
    return (row["task_id"], row["annotator"], bool(row["broken"]), int(row["severity"]), row["family"] or None,
            row["note"] or "")


def _cell(value: Any) -> Any:
    """A CSV cell: lists and mappings as JSON, yes/no as true/false, nothing as empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def _write(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        if file_format(path) == "jsonl":
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _cell(v) for k, v in row.items()})
    tmp.replace(path)


def _check_header(path: Path) -> Callable[[list[str] | None], None]:
    def check(header: list[str] | None) -> None:
        missing = [c for c in REQUIRED if c not in (header or [])]
        if missing:
            raise UserError(f"{path}: the header lacks column {', '.join(missing)}",
                            f"a labels file has columns {', '.join(HISTORY_COLUMNS)}")
    return check
