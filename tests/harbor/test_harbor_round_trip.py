"""The round trip: the quickstart pack exported as Harbor task directories (`packs export harbor`), imported back
(`packs import harbor`, no base map: the exported FROM is the local evalharness base, present here) and run with
`-H oracle -H null`: oracle resolved and null unresolved on every task, the verdicts of evalharness's own run of
the quickstart (resolved or not: there null's empty change is ``no_patch``, nothing to grade; a Harbor verifier
always runs, so here it is ``unresolved``, reward 0). Three tasks in the default tier; all eight in the `long` tier."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalharness.packs import load_pack
from evalharness.sandbox.images import HOST_CA_BUNDLE
from support import QUICKSTART, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]
ALL = [t.instance_id for t in load_pack(QUICKSTART).tasks]
SOME = ["boltons-strutils-parse-int-list", "boltons-cacheutils-lru-max-size", "boltons-mathutils-ceil-exact-match"]


def _verdicts(root: Path, pack: Path, tasks: list[str]) -> dict[tuple[str, str], str]:
    only = [a for t in tasks for a in ("--task", t)]
    done = run_cli("run", "-p", str(pack), "-H", "oracle", "-H", "null", *only, "--format", "json", cwd=root,
                   check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(root / "runs" / "evalharness.db") as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1").fetchall()
        rows = db.execute("SELECT task_id, harness, outcome FROM trials WHERE run_id = ?", (run_id,)).fetchall()
    return {(task, harness): outcome for task, harness, outcome in rows}


def _round_trip(root: Path, tasks: list[str]) -> None:
    ca = ["--ca-bundle", str(HOST_CA_BUNDLE)] if HOST_CA_BUNDLE.is_file() else []  # pip at build time, as exported
    run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(root / "exported"), *ca, cwd=root, timeout=300)
    imported = run_cli("packs", "import", "harbor", str(root / "exported"), "--out", str(root / "pack"), cwd=root)
    assert f"{len(ALL)} Harbor task(s) imported, 0 not" in imported.stdout
    again = _verdicts(root, root / "pack", tasks)
    expected = {(t, h): ("resolved" if h == "oracle" else "unresolved") for t in tasks for h in ("oracle", "null")}
    assert again == expected
    own = _verdicts(root, QUICKSTART, tasks)  # evalharness's own run of the quickstart agrees on every trial
    assert {k: v == "resolved" for k, v in own.items()} == {k: v == "resolved" for k, v in again.items()}
    assert {v for (_, h), v in own.items() if h == "null"} == {"no_patch"}  # there: an empty change, not graded


def test_exported_then_imported_quickstart_keeps_its_verdicts(tmp_path, base_image):
    _round_trip(tmp_path, SOME)


@pytest.mark.long
def test_every_quickstart_task_keeps_its_verdicts_after_the_round_trip(tmp_path, base_image):
    _round_trip(tmp_path, ALL)
