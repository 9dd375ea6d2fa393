"""`evalharness review export/import/status` as a user runs them: a blinded queue exported, filled in elsewhere and
imported; a bad line refuses the file; status counts reviewers without showing verdicts.

Pins: an export that named the configuration or the gold arm, an import whose error did not say which line, and
`review import RUN FILE` that took the file for a run id.
"""

from __future__ import annotations

import csv
import io

from review_run import SECRETS, make_run
from support import run_cli


def test_export_fill_in_import_and_status(tmp_path):
    store, runs_dir, run_id = make_run(tmp_path)
    where = ("--runs-dir", str(runs_dir))
    queue = run_cli("review", "export", run_id, "--reviewer", "bob", *where, cwd=tmp_path).stdout
    assert all(s not in queue for s in SECRETS) and "gold" not in queue.split("\n", 1)[0]
    rows = list(csv.DictReader(io.StringIO(queue)))
    assert len(rows) == 10 and {r["reviewer"] for r in rows} == {"bob"}
    for n, row in enumerate(rows[:6]):
        row.update(verdict="merge" if n % 2 else "reject", reasons="" if n % 2 else "out_of_scope")
    filled = tmp_path / "filled.csv"
    with filled.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "%s", "reviewer": "bob", "verdict": "merge"}\n\n{"item_id": "izzz", '
                   '"reviewer": "bob", "verdict": "merge"}\n' % rows[0]["item_id"])
    done = run_cli("review", "import", run_id, str(bad), *where, cwd=tmp_path, check=False)
    assert done.returncode == 1 and "line 3: unknown item_id 'izzz'" in done.stderr
    assert store.reviews([run_id], latest=False) == []

    done = run_cli("review", "import", run_id, str(filled), *where, cwd=tmp_path)
    assert "imported 6 reviews (4 rows not filled in)" in done.stdout
    assert {(r["reviewer"], r["source"]) for r in store.reviews([run_id])} == {("bob", "import-csv")}
    status = run_cli("review", "status", run_id, "--reviewers", "2", *where, cwd=tmp_path).stdout
    assert "10 patches in the queue; 10 need more reviewers (each needs 2)" in status and "bob: 6 of 10" in status
    assert "merge" not in status and "reject" not in status

    out = tmp_path / "all.jsonl"
    run_cli("review", "export", run_id, "--reviews", "-o", str(out), *where, cwd=tmp_path)
    assert len(out.read_text().splitlines()) == 6 and '"trial_id"' in out.read_text()
