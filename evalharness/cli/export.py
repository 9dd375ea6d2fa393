"""`packs export harbor`: a pack's tasks written as Harbor task directories."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.cli.packs import packs_cmd


@packs_cmd.command("export")
@click.argument("kind", type=click.Choice(["harbor"]))
@click.argument("pack", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write, one task directory in it per task.")
@click.option("--task", "only", multiple=True, help="Only these task ids (repeatable).")
@click.option("--base", type=click.Choice(["local", "official"]), default="local", show_default=True,
              help="FROM of each Dockerfile: the evalharness base image (made by `sandbox bootstrap`) or the "
                   "official Debian image with the same packages.")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="CA bundle copied into each environment so its build's pip and git trust it (default: none).")
@click.option("--verifier", type=click.Choice(["separate", "shared"]), default="separate", show_default=True,
              help="Harbor's verifier mode: a fresh container of tests/Dockerfile (the task image plus /tests) into "
                   "which Harbor copies the work tree, the one declared artifact (Harbor 2026-05 on); or the agent's "
                   "own container.")
@click.option("--force", is_flag=True, help="Write into a non-empty --out folder, replacing its task directories.")
def export_cmd(kind, pack, out, only, base, ca_bundle, verifier, force) -> None:
    """Write a pack's tasks in another harness's task format.

    Each task becomes a Harbor task directory: task.toml, instruction.md, environment/Dockerfile (the task
    image), solution/solve.sh (the gold patch) and tests/test.sh (restores the test files, applies the test
    patch, runs the pack's test command and decides with evalharness's parsers: reward 1 only when every
    FAIL_TO_PASS and PASS_TO_PASS test passes). The verifier runs in Harbor's separate mode (or --verifier
    shared): what does not carry over is in the README written beside the tasks and in docs/task-format.md.

    \b
    evalharness packs export harbor tasks/quickstart --out harbor/quickstart
    evalharness packs export harbor tasks/lite --out harbor/lite --task django__django-11099 --base official
    """
    from evalharness.grading.parsers import check_names
    from evalharness.packs import load_pack
    from evalharness.sources.harbor.export.export import export_pack

    loaded = load_pack(pack)
    check_names(loaded.log_parsers(), f"task pack {pack}")
    report = export_pack(loaded, out, task_ids=only, base=base,
                         ca_bundle=ca_bundle.read_bytes() if ca_bundle else None, verifier=verifier, force=force,
                         log=click.echo)
    click.echo(f"{out}: {len(report.written)} Harbor task directories from pack {loaded.name}"
               + (f"; {len(report.skipped)} not exported (see {out}/README.md)" if report.skipped else ""))
    if report.without_solution:
        click.echo(f"note: {len(report.without_solution)} tasks have no gold patch and no solution/", err=True)
