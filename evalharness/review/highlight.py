"""A unified diff split file by file and syntax-highlighted on the server (pygments; nothing fetched by the page).

``split_diff(text)`` gives ``[{"path", "lines": [{"kind", "tokens"}]}]``: ``kind`` is ``add``, ``del``, ``ctx``,
``hunk`` or ``meta`` (the ``diff --git``/``index``/``---``/``+++`` lines); ``tokens`` are ``[css_class, text]``
pairs (pygments' short token names, ``""`` for plain text), which the page turns into spans with
``textContent``. Code lines are lexed one by one by the lexer the file's name selects (plain text when none
does), so a string spanning lines may be coloured as code: colour is a reading aid, the text is exact.

The text is exact: lines are split at ``\n`` only (``str.splitlines`` would also split at U+2028, form feeds and
the like, and show the rest of an added line as context), a line longer than ``LINE_MAX`` is highlighted up to it
and shown whole, and bidirectional controls are shown as marks (``textshow``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from evalharness.textshow import visible_controls

_FILE = re.compile(r"^diff --git a/(.*?) b/(.*)$")
_META = ("diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode", "old mode", "new mode",
         "similarity index", "rename from", "rename to", "Binary files")
LINE_MAX = 2000


@lru_cache(maxsize=64)
def _lexer(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def _class(token_type: Any) -> str:
    while token_type not in STANDARD_TYPES:
        token_type = token_type.parent
    return STANDARD_TYPES[token_type]


def tokens(path: str, code: str) -> list[list[str]]:
    """``code`` (one line) as ``[class, text]`` pairs, neighbours of one class merged."""
    out: list[list[str]] = []
    for token_type, text in _lexer(path).get_tokens(code[:LINE_MAX]):
        if not text:
            continue
        cls = _class(token_type)
        if out and out[-1][0] == cls:
            out[-1][1] += text
        else:
            out.append([cls, text])
    if len(code) > LINE_MAX:
        out.append(["", code[LINE_MAX:]])  # past the highlighting limit: shown whole, as plain text
    return out


def split_diff(text: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    in_header = True
    lines = visible_controls(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in (raw.removesuffix("\r") for raw in lines):
        found = _FILE.match(line)
        if found or current is None:
            current = {"path": found[2] if found else "(patch)", "lines": []}
            files.append(current)
            in_header = True
        if line.startswith("@@"):
            in_header = False
            current["lines"].append({"kind": "hunk", "tokens": [["", line]]})
        elif in_header and (line.startswith(_META) or found):
            if line.startswith("+++ b/"):
                current["path"] = line[6:]
            current["lines"].append({"kind": "meta", "tokens": [["", line]]})
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
            current["lines"].append({"kind": kind, "tokens": [["", line[:1] or " "], *tokens(current["path"],
                                                                                              line[1:])]})
    return files
