"""`packs`: checking packs (and validating them for real), importing benchmarks."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, MAX_GOLD_BYTES, cli, grading_validator, progress
from evalharness.errors import UserError


@cli.group("packs")
def packs_cmd() -> None:
    """Task packs."""


@packs_cmd.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--run", "execute", is_flag=True,
              help="Also build every environment and grade each task's empty and gold patches (Docker).")
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True,
              help="With --run: gold-patch runs per task (a test that changes status between them is flaky); "
                   "Harbor packs: oracle runs and no-op runs per task.")
@click.option("--task", "only", multiple=True, help="With --run: only these task ids (repeatable).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True, help="Tasks at once.")
@click.option("--force", is_flag=True, help="With --run: validate again tasks that have a current report.")
@CA_BUNDLE
def validate_cmd(paths, execute, reruns, only, workers, force, ca_bundle) -> None:
    """Check pack manifests, recipes and task files; with --run, check that each task works.

    Without --run: exit 1 on the first malformed pack. With --run, each task gets a report in
    <pack>/validation/<id>.json: ok, env_build_failed (with the build log's tail), gold_fails (naming
    the tests), empty_passes, flaky (per-test pass rates), gold_does_not_apply, incomplete (a run timed out
    even after a retry: nothing decided), no_recipe or infra_error. A Harbor pack's tasks run the oracle and
    the no-op --reruns times each: gold_fails when an oracle run's reward is not 1, empty_passes when a no-op
    run's is not 0, incomplete when a run gave no reward.
    Runs skip tasks whose current report is not ok, and say so. Exit 0 when every task is ok, 1 when
    some task is not, 3 when only the engine failed. Progress goes to standard error: image builds, a line
    per graded run (a slow task's runs take minutes each) and a line per task; the summary to standard output.

    \b
    evalharness packs validate tasks/lite
    evalharness packs validate tasks/lite --run --reruns 3 -j 2
    """
    from evalharness.grading.parsers import check_names
    from evalharness.packs import load_pack

    packs = []
    for path in paths:
        pack = load_pack(path)
        check_names(pack.log_parsers(), f"task pack {path}")
        without = sum(pack.recipe_problem(t) is not None for t in pack.tasks)
        click.echo(f"{path}: ok ({pack.name} v{pack.spec.version}, {len(pack.tasks)} tasks"
                   + (f", {without} without an environment recipe" if without else "") + ")")
        envs = {(t.repo, t.version) for t in pack.tasks if t.repo or t.version}
        if pack.spec.recipes is None and len(envs) > 1:
            click.echo(f"warning: {path}: its {len(pack.tasks)} tasks name {len(envs)} (repo, version) pairs but the "
                       "pack has one environment for all; a benchmark spanning repositories and versions needs "
                       "recipes (evalharness packs import swebench FILE --out DIR)", err=True)
        packs.append(pack)
    if not execute:
        return
    codes = [_validate_run(pack, reruns, only, workers, force, ca_bundle) for pack in packs]
    sys.exit(max(codes))


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _validate_run(pack, reruns, only, workers, force, ca_bundle) -> int:
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.validation import summary, validate_pack

    unknown = sorted(set(only) - {t.instance_id for t in pack.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {pack.name}")
    if pack.spec.kind == "harbor":
        client, run_id, validator = _harbor_validator(pack, reruns, ca_bundle)
    else:
        client, run_id, _, _, validator = grading_validator(pack, "validate", reruns=reruns, ca_bundle=ca_bundle)
    tasks = [t for t in pack.tasks if not only or t.instance_id in only]
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        reports = validate_pack(validator, tasks, workers=workers, force=force, log=progress)
    except KeyboardInterrupt:
        click.echo("interrupted: reports written so far are kept; run the same command to go on", err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        remove_labelled(client, run_id)  # no container of this validation outlives it
    counts = summary(reports)
    click.echo(f"{pack.name}: {counts['by_verdict'].get('ok', 0)}/{counts['tasks']} ok ("
               + ", ".join(f"{v} {n}" for v, n in counts["by_verdict"].items()) + f"); reports in "
               f"{pack.root / 'validation'}")
    verdicts = set(counts["by_verdict"])
    if verdicts <= {"ok"}:
        return 0
    return 3 if verdicts <= {"ok", "infra_error"} else 1


def _harbor_validator(pack, reruns, ca_bundle):
    """A Harbor pack's validator: its oracle and null trials run as `evalharness run` runs them."""
    import time

    from evalharness.sandbox.base import Limits
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import ImageBuilder
    from evalharness.sources.harbor.run.validate import HarborValidator
    from evalharness.trial import TrialContext
    from evalharness.types import Budget

    client = docker_client()
    run_id = time.strftime("validate-%Y%m%d-%H%M%S")
    ctx = TrialContext(run_id, pack, client, ImageBuilder(client, ca_bundle=ca_bundle, log=progress), Budget(),
                       Limits())
    return client, run_id, HarborValidator(pack, ctx, reruns=reruns, log=progress)


@packs_cmd.command("import")
@click.argument("kind", type=click.Choice(["swebench", "harbor"]))
@click.argument("source")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Pack folder to write.")
@click.option("--name", default=None, help="Pack name (default: the folder's name).")
@click.option("--recipes", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of recipe tables that replace or extend the built-in ones (one YAML per repository).")
@click.option("--repo-mirror", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of bare repositories named owner__name.git to clone from instead of the network.")
@click.option("--split", default="test", show_default=True, help="Split of a hub dataset.")
@click.option("--force", is_flag=True, help="Replace the pack in a non-empty --out folder.")
@click.option("--base-map", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="harbor: YAML of image pattern -> local image, extending the built-in base map.")
@click.option("--overlays", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="harbor: folder of <task>/*.patch overlays applied to a copy of each task at build time.")
@MAX_GOLD_BYTES
def import_cmd(kind, source, out, name, recipes, repo_mirror, split, force, base_map, overlays,
               max_gold_bytes) -> None:
    """Import a benchmark as a task pack.

    SOURCE is a Hugging Face dataset name (through `datasets`, when the hub answers) or a local
    JSON array, JSONL or parquet file. Each task gets the environment recipe of its (repo, version);
    tasks without one are imported and listed with the reason (import-report.json), as are tasks that
    fail a quality gate check (statement or gold patch; docs/mining.md): reported, never dropped.

    \b
    evalharness packs import swebench swe-bench-lite.json --out tasks/lite --repo-mirror mirrors/
    evalharness packs import swebench princeton-nlp/SWE-bench_Verified --out tasks/verified
    evalharness packs import harbor harbor-tasks/ --out tasks/hb --base-map map.yaml --overlays overlays/

    For harbor, SOURCE is a task directory, a folder of them or a dataset.toml (docs/task-format.md,
    "Harbor tasks"): every task is imported or listed with its reason.
    """
    if kind == "harbor":
        return _import_harbor(Path(source), out, name, base_map, overlays, force)
    from evalharness.quality.gate import Thresholds
    from evalharness.sources.swebench import import_swebench

    report = import_swebench(source, out, name=name, recipes=recipes, repo_mirror=repo_mirror, split=split,
                             force=force, thresholds=Thresholds(max_gold_bytes=max_gold_bytes),
                             log=click.echo).to_json()
    click.echo(f"{out}: {report['tasks']} tasks of {len(report['repos'])} repositories; "
               f"{report['with_recipe']} with an environment recipe, {len(report['without_recipe'])} without")
    for reason, count in sorted(report["without_recipe_by_reason"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {count} without a recipe: {reason}")
    gate = report["gate"]
    click.echo(f"quality gate: {len(gate['failed'])} task(s) fail a check (imported all the same; listed in "
               f"{out / 'import-report.json'})" + "".join(f"\n  {n} {check}" for check, n in gate["by_check"].items()))
    click.echo(f"next: evalharness packs validate {out} --run")

def _import_harbor(source: Path, out: Path, name, base_map, overlays, force) -> None:
    from evalharness.sources.harbor.importer import import_harbor
    from evalharness.sources.harbor.pulls import engine_reachable

    report = import_harbor(source, out, name=name, base_map=base_map, overlays=overlays, force=force,
                           reachable=engine_reachable())
    click.echo(f"{out}: {len(report.imported)} Harbor task(s) imported, {len(report.skipped)} not")
    for task, reason in report.skipped.items():
        click.echo(f"  not imported: {task}: {reason}")
    for task, fields in report.ignored.items():
        for line in fields:
            click.echo(f"  {task}: not honoured: {line}")
    click.echo(f"report: {out / 'import-report.json'}; next: evalharness run -p {out} -H oracle -H null")


from evalharness.cli import mine  # noqa: E402,F401  (registers `packs mine`)
