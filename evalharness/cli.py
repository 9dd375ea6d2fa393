"""Command line: thin click commands that parse, build a config and call one library function."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from evalharness.errors import UserError

RUNS_DIR = click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
                        help="Folder of run folders; the default database lives there too.")
CA_BUNDLE = click.option("--ca-bundle", type=click.Path(exists=True, path_type=Path), default=None,
                         help="CA bundle copied into images so pip works behind TLS-intercepting proxies "
                              "(default: the host's bundle when present).")
DB = click.option("--db", default=None, help="Database URL or SQLite path (default: RUNS_DIR/evalharness.db).")


@click.group(context_settings={"auto_envvar_prefix": "EVALHARNESS", "help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalharness")
def cli() -> None:
    """Evaluate AI coding agents honestly: model+harness pairs, real sandboxes, intervals.

    \b
    evalharness sandbox bootstrap
    evalharness run --pack tasks/quickstart --harness oracle --harness null --seeds 3 --workers 2
    evalharness report RUN_ID --format html
    """


@cli.command("run")
@click.option("--pack", "-p", "pack", type=click.Path(), help="Task pack folder or manifest.")
@click.option("--harness", "-H", "harnesses", multiple=True, help="Harness name, file or pkg.mod:Cls (repeatable).")
@click.option("--model", "-m", "models", multiple=True, help="litellm model string, e.g. openai/gpt-4o (repeatable).")
@click.option("--api-base", default=None, help="Model endpoint base URL (for every --model).")
@click.option("--api-key-env", default=None, help="Name of the environment variable holding the API key.")
@click.option("--temperature", type=float, default=None, help="Sampling temperature (default: the provider's).")
@click.option("--input-cost-per-token", type=float, default=None,
              help="USD per input token, for models missing from litellm's price map (with --output-cost-per-token).")
@click.option("--output-cost-per-token", type=float, default=None, help="USD per output token.")
@click.option("--model-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML of model endpoint fields (timeout_s, num_retries, seed, max_tokens, prices, extra, ...) "
                   "applied to every --model; options given on the command line win.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds per task.")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True, help="Trials at once.")
@click.option("--task", "tasks", multiple=True, help="Only these task ids (repeatable).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Budget: model calls per trial.")
@click.option("--max-cost", type=float, default=None, help="Budget: USD per trial.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Budget: tokens per trial.")
@click.option("--max-wall", type=float, default=None, help="Budget: seconds per trial (default: the pack's agent_s).")
@click.option("--disk", default="2g", show_default=True,
              help="Size of each sandbox's writable work tree (tmpfs: the agent fills its own, never the host's disk).")
@click.option("--max-patch-mb", type=click.FloatRange(min=0, min_open=True), default=8.0, show_default=True,
              help="A change over this size is the outcome patch_too_large (never cut).")
@click.option("--include-invalid", is_flag=True,
              help="Also run tasks whose validation report (packs validate --run) is not ok.")
@click.option("--resume", default=None, metavar="RUN_ID", help="Finish an interrupted run; completed trials are kept.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True, help="Format of the report printed at the end.")
@click.option("--report-dir", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Where the HTML report is written.")
@CA_BUNDLE
@RUNS_DIR
@DB
def run_cmd(pack, harnesses, models, api_base, api_key_env, temperature, input_cost_per_token, output_cost_per_token,
            model_config, seeds, workers, tasks, max_steps, max_cost, max_tokens, max_wall, disk, max_patch_mb,
            include_invalid, resume, fmt, report_dir, ca_bundle, runs_dir, db) -> None:
    """Run tasks x harnesses x models x seeds in Docker sandboxes and report.

    \b
    evalharness run -p tasks/quickstart -H oracle -H null --seeds 3 -j 2
    evalharness run -p tasks/quickstart -H minimal -H mini-swe-agent -m openai/gpt-4o-mini --api-key-env OPENAI_API_KEY
    evalharness run --resume 20261130-101500-ab12

    \b
    Exit codes (run and run --resume):
      0    every trial recorded, no task error, no infrastructure failure
      1    a user error (bad pack, option or configuration), or task errors: broken
           tasks (image cannot be built, gold patch does not apply), named at the end
      2    the command line itself is malformed (click's usage error)
      3    infrastructure failures remained (resume to retry them)
      130  interrupted (Ctrl-C, SIGTERM); resume with --resume RUN_ID
    """
    from evalharness.console import run_with_progress
    from evalharness.runner import RunConfig
    from evalharness.types import Budget

    config = None
    if not resume:
        if not pack or not harnesses:
            raise click.UsageError("give --pack and at least one --harness (or --resume RUN_ID)")
        config = RunConfig(
            pack=str(pack), harnesses=list(harnesses), seeds=list(range(seeds)), workers=workers,
            tasks=list(tasks) or None, disk=disk, max_patch_mb=max_patch_mb, include_invalid=include_invalid,
            models=_model_endpoints(models, model_config, api_base=api_base, api_key_env=api_key_env,
                                    temperature=temperature, input_cost_per_token=input_cost_per_token,
                                    output_cost_per_token=output_cost_per_token),
            budget=Budget(max_steps=max_steps, max_cost_usd=max_cost, max_tokens=max_tokens, max_wall_s=max_wall))
    summary = run_with_progress(config, resume=resume, runs_dir=runs_dir, db=db, ca_bundle=ca_bundle)
    _print_report([summary.run_id], fmt, runs_dir, db, report_dir)
    _exit_for(summary)


def _exit_for(summary) -> None:
    """Name the broken tasks and remaining infrastructure failures on stderr, then exit with the run's code."""
    broken: dict[str, list[str]] = {}
    for trial_id, reason in summary.task_errors:
        broken.setdefault("/".join(trial_id.split("/")[:2]) + f": {reason}", []).append(trial_id)
    for line, trial_ids in sorted(broken.items()):
        click.echo(f"task error: {line} ({len(trial_ids)} trial{'s' if len(trial_ids) != 1 else ''})", err=True)
    if summary.task_errors:
        click.echo(f"error: {len(summary.task_errors)} trial(s) of run {summary.run_id} are task errors (broken tasks, "
                   "left out of the rates)\n  fix the pack, then run again", err=True)
    if summary.infra_remaining:
        click.echo(f"error: {summary.infra_remaining} trial(s) of run {summary.run_id} ended in infrastructure "
                   f"failures\n  retry them with: evalharness run --resume {summary.run_id}", err=True)
    sys.exit(summary.exit_code)


@cli.command("report")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True)
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None, help="Write to this file.")
@RUNS_DIR
@DB
def report_cmd(run_ids, fmt, output, runs_dir, db) -> None:
    """Resolve rate per configuration with task-level intervals, per-task counts, infra failures.

    \b
    evalharness report RUN_ID --format md
    evalharness report RUN_A RUN_B --format html -o reports/ab.html
    """
    from evalharness.report.build import build_report
    from evalharness.report.data import trials_frame
    from evalharness.report.render import render

    store = _store(runs_dir, db)
    report = build_report(trials_frame(store, list(run_ids)), [store.get_run(r) for r in run_ids])
    text = render(report, fmt)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        click.echo(f"wrote {output}")
        _warn_flags(report)
    else:
        click.echo(text)


def _store(runs_dir: Path, db: str | None):
    from evalharness.store import Store, database_url

    if db is None and not (runs_dir / "evalharness.db").exists():
        raise UserError(f"no results database at {runs_dir / 'evalharness.db'}", "run an evaluation first, or pass --db")
    return Store(database_url(db or runs_dir / "evalharness.db"))


def _print_report(run_ids: list[str], fmt: str, runs_dir: Path, db: str | None, report_dir: Path) -> None:
    from evalharness.report.build import build_report
    from evalharness.report.data import trials_frame
    from evalharness.report.render import render

    store = _store(runs_dir, db)
    report = build_report(trials_frame(store, run_ids), [store.get_run(r) for r in run_ids])
    click.echo(render(report, fmt))
    report_dir.mkdir(parents=True, exist_ok=True)
    html = report_dir / f"{run_ids[0]}.html"
    html.write_text(render(report, "html"))
    click.echo(f"HTML report: {html}")
    _warn_flags(report)


def _warn_flags(report: dict) -> None:
    """Tampered trials, last on the console (stderr) whatever the format or output file."""
    for line in report["flag_warnings"]:
        click.echo(f"warning: {line}", err=True)


def _frame(run_ids, runs_dir, db):
    from evalharness.report.data import trials_frame

    return trials_frame(_store(runs_dir, db), list(run_ids))


def _print_rows(rows: list[list[str]], fmt: str, title: str) -> None:
    from evalharness.report.render import markdown_table, text_table

    click.echo(markdown_table(rows) if fmt == "md" else text_table(rows, title))


@cli.command("compare")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--a", "config_a", default=None, help="Configuration A as harness/model (default: the first of two).")
@click.option("--b", "config_b", default=None, help="Configuration B as harness/model.")
@click.option("--format", "fmt", type=click.Choice(["table", "md"]), default="table", show_default=True)
@RUNS_DIR
@DB
def compare_cmd(run_ids, config_a, config_b, fmt, runs_dir, db) -> None:
    """Paired A/B on shared tasks: difference, interval, p-values, cost per resolved.

    Give two runs (one configuration each), or one run holding two configurations.

    \b
    evalharness compare RUN_A RUN_B
    evalharness compare RUN_ID --a minimal/openai/gpt-4o --b mini-swe-agent/openai/gpt-4o
    """
    from evalharness.report.ab import comparison_rows

    _print_rows(comparison_rows(_frame(run_ids, runs_dir, db), config_a, config_b), fmt, "Paired comparison")


@cli.command("plan")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--delta", type=float, default=0.05, show_default=True, help="Difference to detect (0.05 = 5 points).")
@click.option("--a", "config_a", default=None)
@click.option("--b", "config_b", default=None)
@click.option("--format", "fmt", type=click.Choice(["table", "md"]), default="table", show_default=True)
@RUNS_DIR
@DB
def plan_cmd(run_ids, delta, config_a, config_b, fmt, runs_dir, db) -> None:
    """From a pilot run: tasks needed for 80% power at K = 1, 3, 5, 10 seeds, and the detectable effect.

    \b
    evalharness plan RUN_ID --delta 0.05
    """
    from evalharness.report.ab import plan_rows

    rows, note = plan_rows(_frame(run_ids, runs_dir, db), config_a, config_b, delta)
    _print_rows(rows, fmt, f"Design for a paired comparison detecting {delta:+.0%} at 80% power, alpha 0.05")
    if note:
        click.echo(f"note: {note}")


@cli.command("grade")
@click.argument("run_id")
@click.option("--log-parser", default=None, help="Parse with this parser instead of the pack's.")
@RUNS_DIR
def grade_cmd(run_id, log_parser, runs_dir) -> None:
    """Re-grade a stored run from its run folders (no Docker); exit 1 if any outcome changes.

    \b
    evalharness grade 20261130-101500-ab12
    """
    from evalharness.regrade import regrade_run

    results = regrade_run(runs_dir / run_id, log_parser=log_parser)
    changed = [r for r in results if r.changed]
    for r in changed:
        flags = f"; flags {list(r.flags)} -> {list(r.flags_now)}" if r.flags != r.flags_now else ""
        click.echo(f"{r.trial}: {r.stored} -> {r.now} ({r.reason}){flags}")
    flagged = sum(bool(r.flags_now) for r in results)
    click.echo(f"re-graded {len(results)} trial(s): {len(results) - len(changed)} unchanged, {len(changed)} changed"
               + (f"; {flagged} flagged (flags kept: `evalharness report` counts them)" if flagged else ""))
    if changed:
        sys.exit(1)


@cli.command("grade-predictions")
@click.option("--pack", "-p", "pack", type=click.Path(), help="Task pack folder or manifest.")
@click.option("--predictions", "-P", "sources", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="SWE-bench predictions (.jsonl, .json list) or a folder of <instance_id>.diff (repeatable: "
                   "each is one configuration).")
@click.option("--model-name", "model_names", multiple=True,
              help="Model label of each --predictions, in order (default: its model_name_or_path, or the folder's name).")
@click.option("--report-json", "report_paths", multiple=True, type=click.Path(path_type=Path),
              help="SWE-bench-style report of each --predictions, in order (default: RUN_FOLDER/<model>.<run_id>.json).")
@click.option("--skip-unknown-ids", is_flag=True,
              help="Grade the others when predictions name instances the pack does not hold (default: an error).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True, help="Trials at once.")
@click.option("--resume", default=None, metavar="RUN_ID", help="Finish an interrupted predictions run, rewrite its reports.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True, help="Format of the report printed at the end.")
@click.option("--report-dir", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Where the HTML report is written.")
@CA_BUNDLE
@RUNS_DIR
@DB
def grade_predictions_cmd(pack, sources, model_names, report_paths, skip_unknown_ids, workers, resume, fmt,
                          report_dir, ca_bundle, runs_dir, db) -> None:
    """Grade SWE-bench predictions (patches made elsewhere) with the hardened grader.

    Each predictions file is one configuration, predictions/<model_name_or_path>, of one run: the
    prediction is applied in the agent sandbox (git apply, git apply --reject, patch --fuzz=5),
    then graded as any agent's change. Missing instances are not submitted (no trial); one that
    does not apply is patch_apply_failed. Exit codes as `run`.

    \b
    evalharness grade-predictions -p tasks/quickstart -P gold.jsonl -P mine.json
    evalharness grade-predictions -p tasks/quickstart -P diffs/ --model-name mine
    evalharness compare RUN_ID        # the two configurations of the first command, paired

    \b
    Exit codes: 0 every trial recorded; 1 a user error (a malformed predictions file, named with
    its line) or task errors; 2 a malformed command line; 3 infrastructure failures remained
    (--resume RUN_ID retries them); 130 interrupted.
    """
    from functools import partial

    from evalharness.console import run_with_progress
    from evalharness.predictions import grade_predictions, resume_predictions, summary_line

    execute = partial(run_with_progress, ca_bundle=ca_bundle)
    if resume:
        if sources or model_names or report_paths:
            raise click.UsageError("--resume takes no --predictions, --model-name or --report-json")
        graded = resume_predictions(resume, execute=execute, runs_dir=runs_dir, db=db)
    else:
        if not pack or not sources:
            raise click.UsageError("give --pack and at least one --predictions (or --resume RUN_ID)")
        for option, given in (("--model-name", model_names), ("--report-json", report_paths)):
            if given and len(given) != len(sources):
                raise click.UsageError(f"give {option} once per --predictions ({len(sources)}), or not at all")
        graded = grade_predictions(pack, list(sources), execute=execute, runs_dir=runs_dir, db=db,
                                   model_names=list(model_names), report_paths=list(report_paths),
                                   skip_unknown=skip_unknown_ids, workers=workers,
                                   warn=lambda line: click.echo(f"warning: {line}", err=True))
    _print_report([graded.summary.run_id], fmt, runs_dir, db, report_dir)
    for path, report in graded.reports:
        click.echo(summary_line(report, path))
    _exit_for(graded.summary)


@cli.command("runs")
@RUNS_DIR
@DB
def runs_cmd(runs_dir, db) -> None:
    """List stored runs; a run whose runner died (SIGKILL, power loss) shows as interrupted."""
    from evalharness.liveness import run_status

    for r in _store(runs_dir, db).list_runs():
        click.echo(f"{r['run_id']}  {run_status(r):<11} {r['pack']:<20} trials={r['trials'] or 0} "
                   f"resolved={r['resolved'] or 0}")


@cli.command("model-server")
@click.option("--script", "script", required=True, type=click.Path(exists=True, path_type=Path),
              help="Reply script (.yaml/.json) or a recorded conversation (.jsonl) to replay.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
@click.option("--record", type=click.Path(path_type=Path), default=None, help="Append every request to this JSONL.")
@click.option("--require-key", default=None, help="Answer 401 unless requests carry this key.")
def model_server_cmd(script, host, port, record, require_key) -> None:
    """Serve scripted OpenAI (chat, responses) and Anthropic (messages) replies on loopback.

    \b
    evalharness model-server --script tests/models/data/two_tasks.yaml --port 8765
    evalharness run -p tasks/quickstart -H minimal -m openai/scripted --api-base http://127.0.0.1:8765/v1
    """
    from evalharness.models import serve_forever

    serve_forever(script, host, port, record_path=record, require_key=require_key, announce=click.echo)


@cli.group("sandbox")
def sandbox_cmd() -> None:
    """Docker sandbox: base image, image builds, leftover containers."""


@sandbox_cmd.command("bootstrap")
@click.option("--base", default="bookworm", show_default=True,
              help="Base image recipe: bullseye (Python 3.9), bookworm (3.11), trixie (3.13)."
              " Repeat the command for each base you need.")
@click.option("--method", type=click.Choice(["auto", "pull", "debootstrap"]), default="auto", show_default=True,
              help="auto: pull the official image where a registry answers, else debootstrap locally.")
@click.option("--mirror", default=None, help="Debian mirror for debootstrap (default: the host's apt mirror).")
@click.option("--rebuild", is_flag=True, help="Build even if the image exists.")
def bootstrap_cmd(base, method, mirror, rebuild) -> None:
    """Build the base image (about a minute; needs root for debootstrap)."""
    from evalharness.sandbox.bootstrap import bootstrap_base
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import base_recipe

    recipe = base_recipe(base)
    how = bootstrap_base(docker_client(), recipe, method=method, mirror=mirror, log=click.echo, rebuild=rebuild)
    click.echo(f"{recipe.tag}: {how}")


@sandbox_cmd.command("build")
@click.option("--pack", "-p", required=True, type=click.Path(), help="Task pack folder or manifest.")
@click.option("--task", "only", multiple=True, help="Only these task ids (repeatable).")
@CA_BUNDLE
def build_cmd(pack, only, ca_bundle) -> None:
    """Build (or find) the environment and task images of a pack.

    A task whose image cannot be built is named with the reason on one line; the others are still
    built. Exit 1 when a task or the pack is broken, 3 when the engine or the network failed.
    """
    from evalharness.errors import ImageBuildError, TaskError
    from evalharness.packs import load_pack
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import ImageBuilder

    loaded = load_pack(pack)
    builder = ImageBuilder(docker_client(), ca_bundle=ca_bundle, log=click.echo)
    failed: dict[tuple[str, bool], list[str]] = {}
    unknown = sorted(set(only) - {t.instance_id for t in loaded.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {loaded.name}")
    for task in [t for t in loaded.tasks if not only or t.instance_id in only]:
        problem = loaded.recipe_problem(task)
        if problem is not None:
            failed.setdefault((problem, True), []).append(task.instance_id)
            continue
        for attempt in range(2):  # a failure that repeats the same way is the recipe's (build_failures.py)
            try:
                click.echo(f"{task.instance_id}: {builder.task_image(loaded, task)}")
                break
            except TaskError as e:
                failed.setdefault((e.message, True), []).append(task.instance_id)
                break
            except ImageBuildError as e:
                if attempt == 1:
                    failed.setdefault((f"image build failed (engine or network): {e.reason}", False),
                                      []).append(task.instance_id)
    click.echo(f"built {len(builder.built)} image(s)")
    for (message, _), task_ids in failed.items():
        click.echo(f"error: task {', '.join(task_ids)}: {message}", err=True)
    if failed:
        sys.exit(1 if any(is_task for _, is_task in failed) else 3)


@sandbox_cmd.command("gc")
@click.option("--run-id", default=None, help="Only this run's containers (whatever its state).")
@click.option("--all", "everything", is_flag=True, help="Every evalharness container, live runs' too.")
@RUNS_DIR
@DB
def gc_cmd(run_id, everything, runs_dir, db) -> None:
    """Remove leftover containers (labelled evalharness.run_id) of runs whose runner is gone.

    By default: containers of runs in the store that are not running, or whose runner died
    (killed, host rebooted). Containers of live runs and of runs the store does not know are kept.

    \b
    evalharness sandbox gc
    evalharness sandbox gc --run-id 20261130-101500-ab12
    evalharness sandbox gc --all
    """
    from evalharness.liveness import collectable_runs
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.sandbox.engine import LABEL_RUN, docker_client

    client = docker_client()
    if run_id or everything:
        click.echo(f"removed {remove_labelled(client, run_id)} container(s)")
        return
    labelled = {c["Labels"].get(LABEL_RUN, "") for c in client.api.containers(all=True, filters={"label": LABEL_RUN})}
    stored = {}
    if db is not None or (runs_dir / "evalharness.db").exists():
        store = _store(runs_dir, db)
        stored = {r["run_id"]: r for r in store.list_runs() if r["run_id"] in labelled}
    collect, live, unknown = collectable_runs(labelled, stored)
    removed = sum(remove_labelled(client, r) for r in sorted(collect))
    click.echo(f"removed {removed} container(s) of {len(collect)} run(s) whose runner is gone")
    if live or unknown:
        click.echo(f"kept the containers of {len(live)} live run(s) and {len(unknown)} run(s) not in this store "
                   "(--all removes them too)")


@cli.group("packs")
def packs_cmd() -> None:
    """Task packs."""


@packs_cmd.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--run", "execute", is_flag=True,
              help="Also build every environment and grade each task's empty and gold patches (Docker).")
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True,
              help="With --run: gold-patch runs per task (a test that changes status between them is flaky).")
@click.option("--task", "only", multiple=True, help="With --run: only these task ids (repeatable).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True, help="Tasks at once.")
@click.option("--force", is_flag=True, help="With --run: validate again tasks that have a current report.")
@CA_BUNDLE
def validate_cmd(paths, execute, reruns, only, workers, force, ca_bundle) -> None:
    """Check pack manifests, recipes and task files; with --run, check that each task works.

    Without --run: exit 1 on the first malformed pack. With --run, each task gets a report in
    <pack>/validation/<id>.json: ok, env_build_failed (with the build log's tail), gold_fails (naming
    the tests), empty_passes, flaky (per-test pass rates), gold_does_not_apply, no_recipe or infra_error.
    Runs skip tasks whose current report is not ok, and say so. Exit 0 when every task is ok, 1 when
    some task is not, 3 when only the engine failed.

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
        packs.append(pack)
    if not execute:
        return
    codes = [_validate_run(pack, reruns, only, workers, force, ca_bundle) for pack in packs]
    sys.exit(max(codes))


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _validate_run(pack, reruns, only, workers, force, ca_bundle) -> int:
    import contextlib
    import time as _time

    from evalharness.grading.grade import grade
    from evalharness.sandbox.base import Limits
    from evalharness.sandbox.docker import DockerSandbox, remove_labelled
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import ImageBuilder
    from evalharness.validation import Validator, summary, validate_pack

    unknown = sorted(set(only) - {t.instance_id for t in pack.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {pack.name}")
    client = docker_client()
    run_id = _time.strftime("validate-%Y%m%d-%H%M%S")

    @contextlib.contextmanager
    def sandbox(image, spec, task):
        with DockerSandbox(client, image, run_id=run_id, trial=f"{pack.name}/{task.instance_id}/validate",
                           role="grader", limits=Limits(), workdir=spec.environment.workdir,
                           default_timeout=spec.timeouts.exec_s) as box:
            box.start()
            yield box

    builder = ImageBuilder(client, ca_bundle=ca_bundle, log=click.echo)
    validator = Validator(pack, builder, sandbox, grade, reruns=reruns, log=click.echo)
    tasks = [t for t in pack.tasks if not only or t.instance_id in only]
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        reports = validate_pack(validator, tasks, workers=workers, force=force, log=click.echo)
    except KeyboardInterrupt:
        click.echo(f"interrupted: reports written so far are kept; run the same command to go on", err=True)
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


@packs_cmd.command("import")
@click.argument("kind", type=click.Choice(["swebench"]))
@click.argument("source")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Pack folder to write.")
@click.option("--name", default=None, help="Pack name (default: the folder's name).")
@click.option("--recipes", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of recipe tables that replace or extend the built-in ones (one YAML per repository).")
@click.option("--repo-mirror", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of bare repositories named owner__name.git to clone from instead of the network.")
@click.option("--split", default="test", show_default=True, help="Split of a hub dataset.")
@click.option("--force", is_flag=True, help="Replace the pack in a non-empty --out folder.")
def import_cmd(kind, source, out, name, recipes, repo_mirror, split, force) -> None:
    """Import a benchmark as a task pack.

    SOURCE is a Hugging Face dataset name (through `datasets`, when the hub answers) or a local
    JSON array, JSONL or parquet file. Each task gets the environment recipe of its (repo, version);
    tasks without one are imported and listed with the reason (import-report.json).

    \b
    evalharness packs import swebench swe-bench-lite.json --out tasks/lite --repo-mirror mirrors/
    evalharness packs import swebench princeton-nlp/SWE-bench_Verified --out tasks/verified
    """
    from evalharness.sources.swebench import import_swebench

    report = import_swebench(source, out, name=name, recipes=recipes, repo_mirror=repo_mirror, split=split,
                             force=force, log=click.echo).to_json()
    click.echo(f"{out}: {report['tasks']} tasks of {len(report['repos'])} repositories; "
               f"{report['with_recipe']} with an environment recipe, {len(report['without_recipe'])} without")
    for reason, count in sorted(report["without_recipe_by_reason"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {count} without a recipe: {reason}")
    click.echo(f"next: evalharness packs validate {out} --run")


@cli.group("harnesses")
def harnesses_cmd() -> None:
    """Harnesses."""


@harnesses_cmd.command("list")
def harnesses_list_cmd() -> None:
    """Names usable with --harness."""
    from evalharness.harness.registry import available

    for name in available():
        click.echo(name)


def _model_endpoints(models, model_config, **options):
    """ModelEndpoints for the --model names: fields from --model-config, then the options given."""
    import yaml
    from pydantic import ValidationError

    from evalharness.errors import ConfigError
    from evalharness.types import ModelEndpoint

    base = {}
    if model_config is not None:
        try:
            base = yaml.safe_load(model_config.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"model config {model_config} is not valid YAML: {e}") from e
        if not isinstance(base, dict):
            raise ConfigError(f"model config {model_config}: expected a mapping of model endpoint fields")
    names = list(models) or ([base["name"]] if "name" in base else [])
    fields = {k: v for k, v in options.items() if v is not None}
    if ("input_cost_per_token" in {**base, **fields}) != ("output_cost_per_token" in {**base, **fields}):
        raise ConfigError("give both --input-cost-per-token and --output-cost-per-token (or neither)")
    try:
        return [ModelEndpoint.model_validate({**base, **fields, "name": name}) for name in names]
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"model settings are invalid ({model_config or 'command line'})", problems) from e


@cli.command("show")
@click.argument("target")
@click.option("--output-chars", type=click.IntRange(min=100), default=1500, show_default=True,
              help="Characters of each output, command and message shown (head and tail).")
@RUNS_DIR
def show_cmd(target, output_chars, runs_dir) -> None:
    """Show a trial's trajectory: steps, commands, outputs, usage, outcome.

    TARGET is a trial folder, or RUN_ID/PACK/TASK/HARNESS/MODEL/seed-N under --runs-dir;
    a run or any folder above trials lists the trials in it.

    \b
    evalharness show 20261130-101500-ab12/quickstart/boltons-strutils-parse-int-list/minimal/openai__gpt-4o/seed-0
    evalharness show 20261130-101500-ab12
    """
    from rich.console import Console

    from evalharness.trajectory import render, trial_folders

    folder = Path(target) if Path(target).is_dir() else runs_dir / target
    if not folder.is_dir():
        raise UserError(f"no trial or run folder {target!r} (looked in . and {runs_dir})",
                        "pass a trial folder or RUN_ID/PACK/TASK/HARNESS/MODEL/seed-N; `evalharness runs` lists runs")
    trials = trial_folders(folder)
    if not trials:
        raise UserError(f"no trajectory.json under {folder}")
    if len(trials) > 1:
        for trial in trials:
            click.echo(trial.relative_to(runs_dir) if trial.is_relative_to(runs_dir) else trial)
        return
    render(trials[0], Console(), output_chars=output_chars)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: containers removed; finished trials are stored (resume with --resume RUN_ID)",
                   err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
