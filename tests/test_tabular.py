"""The CSV/JSONL row reader shared by label and review imports: where each row stands, and why a bad one is bad.

Pins: the review import named the first CSV row "line 1" (the header's line) and the second "line 3".
"""

from __future__ import annotations

import pytest

from evalharness.errors import UserError
from evalharness.tabular import read_csv, read_jsonl


def _no_check(header):
    return None


def test_csv_rows_by_number_and_by_the_line_they_start_on(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text('a,b\n1,2\n"x\ny",3\n4,5,6\n', encoding="utf-8")
    assert read_csv(path, _no_check) == [("row 1", {"a": "1", "b": "2"}), ("row 2", {"a": "x\ny", "b": "3"}),
                                         ("row 3", "more cells than the header has columns")]
    assert [w for w, _ in read_csv(path, _no_check, by_line=True)] == ["line 2", "line 3", "line 5"]


def test_csv_header_is_checked_before_any_row(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("", encoding="utf-8")
    seen = []
    assert read_csv(path, seen.append) == [] and seen == [None]

    def refuse(header):
        raise UserError(f"no {header}")

    path.write_text("a\n1\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"no \['a'\]"):
        read_csv(path, refuse)


def test_jsonl_skips_blank_lines_and_names_bad_ones(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('\ufeff{"a": 1}\n\n[1]\nnope\n', encoding="utf-8")
    rows = read_jsonl(path)
    assert rows[:2] == [("line 1", {"a": 1}), ("line 3", "expected a JSON object, got list")]
    assert rows[2][0] == "line 4" and rows[2][1].startswith("not valid JSON")
    with pytest.raises(UserError, match="cannot read"):
        read_jsonl(tmp_path / "missing.jsonl")
