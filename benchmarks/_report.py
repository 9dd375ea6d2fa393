"""Write one "## Title" section of BENCHMARKS.md, leaving the other sections as they are."""

from __future__ import annotations

import re
from pathlib import Path


def write_section(path: Path, title: str, text: str) -> None:
    heading = f"## {title}"
    old = path.read_text() if path.exists() else "# Benchmarks\n\nFigures measured by the scripts in `benchmarks/`.\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    block = f"{heading}\n\n{text.strip()}\n\n"
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + block
    path.write_text(new.rstrip("\n") + "\n")
