"""Rows of a CSV or JSONL file that people filled in (labels, reviews), each with where it stands, for checking.

A reader gives ``(where, row)`` pairs, ``row`` being a dict or, for a row that cannot be one, the sentence that
says why (a CSV row with more cells than the header has columns; a JSONL line that is not JSON or not an object),
so that the caller can name every bad row at once. Blank JSONL lines are skipped. A file that cannot be read
(missing, not UTF-8, not CSV) is a ``UserError``. Both formats read a leading byte-order mark as nothing.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalharness.errors import UserError

Row = tuple[str, dict[str, Any] | str]


def read_csv(path: Path, check_header: Callable[[list[str] | None], None], *, by_line: bool = False) -> list[Row]:
    """Every data row; ``where`` is ``row N`` (counting from 1 after the header) or, ``by_line``, ``line N``
    (the line of the file the row starts on). ``check_header`` sees the header (``None``: an empty file) before
    any row is read, and raises ``UserError`` to refuse the file."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            check_header(reader.fieldnames)
            rows: list[Row] = []
            while True:
                start = reader.line_num + 1
                row = next(reader, None)
                if row is None:
                    return rows
                rows.append((f"line {start}" if by_line else f"row {len(rows) + 1}",
                             row if None not in row else "more cells than the header has columns"))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read {path}: {e}") from e


def read_jsonl(path: Path) -> list[Row]:
    """Every non-blank line; ``where`` is ``line N``."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from e
    rows: list[Row] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            rows.append((f"line {n}", f"not valid JSON ({e.msg} at column {e.colno})"))
            continue
        wrong = f"expected a JSON object, got {type(raw).__name__}"
        rows.append((f"line {n}", raw if isinstance(raw, dict) else wrong))
    return rows
