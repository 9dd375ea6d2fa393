"""Text an agent wrote, made safe to show a person: invisible direction controls become visible marks.

Bidirectional controls (U+202A-U+202E, U+2066-U+2069, the marks U+200E, U+200F, U+061C) reorder what a reader
sees without changing what a program reads: ``evil\\u202egnp.py`` displays as ``evilyp.png`` (Trojan Source,
Boucher & Anderson 2021). Each is shown as ``<U+202E>`` instead, so a reviewer sees the bytes' real order.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def visible_controls(text: str) -> str:
    """``text`` with every bidirectional control replaced by a visible ``<U+XXXX>`` mark."""
    return _CONTROLS.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
