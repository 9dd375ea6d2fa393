"""How often ``grading.suspicious.scan_patch`` flags patches nobody suspects (issue 23): SWE-bench Lite's 300 gold
patches (and their test patches), and a real agent's Lite predictions (CodeR, 20240604).

    .venv/bin/python benchmarks/suspicious_fp.py          # counts per corpus, then every flagged patch's lines

Data (../shared/research-data, see SOURCES.md there; never copied into the repository):
``swebench-lite/swe-bench-lite.json`` (``patch``, ``test_patch``) and
``swebench-preds/coder-20240604-lite-mirrored.jsonl`` (``model_patch``; empty ones are not counted).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalharness.grading.suspicious import scan_patch  # noqa: E402

DATA = REPO.parent / "shared" / "research-data"
LITE = DATA / "swebench-lite" / "swe-bench-lite.json"
PREDS = DATA / "swebench-preds" / "coder-20240604-lite-mirrored.jsonl"


def measure(name: str, patches: list[tuple[str, str]]) -> list[str]:
    """One summary line for the corpus, then each flagged patch's findings."""
    patches = [(i, p) for i, p in patches if p and p.strip()]
    flagged, categories, lines = 0, Counter(), []
    for instance_id, patch in patches:
        found = scan_patch(patch.encode())
        if not found:
            continue
        flagged += 1
        categories.update({c for f in found for c in f.categories})
        lines += [f"  {instance_id} {f.path}:{f.line} [{f.reason}] {f.text}" for f in found]
    per = ", ".join(f"{c} {n}" for c, n in categories.most_common()) or "none"
    return [f"{name}: {flagged} of {len(patches)} patches flagged (by category: {per})", *lines]


def main() -> None:
    if not LITE.is_file() or not PREDS.is_file():
        raise SystemExit(f"{LITE} or {PREDS} is missing: this benchmark needs ../shared/research-data")
    lite = json.loads(LITE.read_text())
    preds = [json.loads(line) for line in PREDS.read_text().splitlines() if line.strip()]
    for corpus in (measure("Lite gold patches", [(r["instance_id"], r["patch"]) for r in lite]),
                   measure("Lite test patches", [(r["instance_id"], r["test_patch"]) for r in lite]),
                   measure("CodeR Lite predictions", [(r["instance_id"], r["model_patch"]) for r in preds])):
        print("\n".join(corpus))


if __name__ == "__main__":
    main()
