"""`packs gate`: the quality gate over an existing pack's tasks, with the coverage checks on request
(evalharness/quality/, docs/mining.md "The quality gate")."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, MAX_GOLD_BYTES
from evalharness.cli.packs import _raise_interrupt, packs_cmd
from evalharness.errors import UserError


@packs_cmd.command("gate")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--coverage", is_flag=True,
              help="Also measure, in Docker, which changed lines the FAIL_TO_PASS tests execute and whether a "
                   "PASS_TO_PASS test guards each changed module (one run per task, gold patch applied).")
@click.option("--task", "only", multiple=True, help="Only these task ids (repeatable).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks at once.")
@click.option("--force", is_flag=True, help="Measure coverage again for tasks with a current result in PACK/gate/.")
@click.option("--write", is_flag=True, help="Rewrite tasks.jsonl with each task's metadata.gate (old file kept "
                                            "as tasks.jsonl.bak).")
@click.option("--drop", is_flag=True, help="With --write: also leave rejected tasks out of tasks.jsonl.")
@MAX_GOLD_BYTES
@CA_BUNDLE
def gate_cmd(path, coverage, only, workers, force, write, drop, max_gold_bytes, ca_bundle) -> None:
    """Run the quality gate over a pack's tasks without mining again: a table of verdicts and reasons.

    Checks: the gold patch (gold_too_large, gold_generated, gold_data_dominated) and the statement (changelog,
    ci_note, bare_title, unseen_commit, squashed_branch, pinned_message); with --coverage also f2p_misses_change (the FAIL_TO_PASS tests execute
    none of the changed lines), no_p2p_guard (no PASS_TO_PASS test executes a changed module) and
    coverage_unmeasured (the coverage run timed out or did not report the tests). Writes
    PACK/gate-report.json (after each task) and, with --coverage, PACK/gate/<id>.json (reused by the next run
    unless the task changed or --force). tasks.jsonl is left as it is unless --write.
    Exit 0 when every task passes, 1 when some task is rejected, 3 when only measurements failed.

    \b
    evalharness packs gate tasks/mined
    evalharness packs gate tasks/mined --coverage -j 1
    evalharness packs gate tasks/mined --coverage --task mypkg-1a2b3c4d5e
    """
    from dataclasses import replace

    from evalharness.packs import load_pack
    from evalharness.quality.gate import DEFAULT
    from evalharness.quality.packgate import REPORT, gate_pack

    if drop and not write:
        raise UserError("--drop needs --write (tasks.jsonl is rewritten only when asked)")
    pack = load_pack(path)
    unknown = sorted(set(only) - {t.instance_id for t in pack.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {pack.name}")
    tasks = [t for t in pack.tasks if not only or t.instance_id in only]
    thresholds = replace(DEFAULT, max_gold_bytes=max_gold_bytes)
    click.echo(f"{pack.name}: gating {len(tasks)} task(s)" + (" with coverage (Docker)" if coverage else ""))
    client = run_id = validator = None
    if coverage:
        from evalharness.cli._common import grading_validator

        client, run_id, _, _, validator = grading_validator(pack, "gate", ca_bundle=ca_bundle)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        outcomes = gate_pack(pack, tasks, validator, coverage=coverage, workers=workers, force=force,
                             thresholds=thresholds, log=click.echo)
    except KeyboardInterrupt:
        click.echo(f"interrupted: {pack.root / REPORT} has the tasks gated so far; coverage results are kept",
                   err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if client is not None:
            from evalharness.sandbox.docker import remove_labelled

            remove_labelled(client, run_id)
    _finish(pack, outcomes, write=write, drop=drop)


def _finish(pack, outcomes, *, write: bool, drop: bool) -> None:
    """The table, the totals, tasks.jsonl when asked, and the exit code."""
    from evalharness.quality.packgate import REPORT, summary, table_lines, write_tasks

    for line in table_lines(outcomes):
        click.echo(line)
    totals = summary([o.to_json() for o in outcomes])
    by = ", ".join(f"{v} {n}" for v, n in totals["by_verdict"].items())
    click.echo(f"{pack.name}: {totals['passed']}/{totals['tasks']} passed, {totals['rejected']} rejected"
               + (f" ({by})" if by else "")
               + (f", {totals['errors']} not measured (engine or build errors)" if totals["errors"] else "")
               + f"; report in {pack.root / REPORT}")
    if write:
        kept, dropped = write_tasks(pack, outcomes, drop=drop)
        click.echo(f"tasks.jsonl rewritten: {kept} task(s)" + (f", {dropped} rejected left out" if drop else "")
                   + " (the old file is tasks.jsonl.bak)")
    if totals["rejected"]:
        sys.exit(1)
    if totals["errors"]:
        sys.exit(3)
