"""`run`, `report`, `grade`: running an evaluation and reporting it (`compare`, `plan`, `runs`, `show`, which
read stored results, are in cli/results.py).

Standard output carries the document asked for (the report of `run` and `report`) and nothing else;
progress, the HTML report's path, warnings and errors go to standard error, so
`run --format json | python -m json.tool` reads one JSON document.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, DB, RUNS_DIR, _store, cli
from evalharness.errors import UserError


def _parse_tags(ctx, param, values: tuple[str, ...]) -> dict[str, str] | None:
    """``KEY=VALUE`` options as a dict (None when none is given); a malformed one is a usage error naming it."""
    from evalharness.store import TAG_KEY

    tags: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not TAG_KEY.fullmatch(key):
            raise click.BadParameter(f"{text!r} is not KEY=VALUE with a KEY of letters, digits, '_', '.' and '-'",
                                     ctx=ctx, param=param)
        if tags.get(key, value) != value:
            raise click.BadParameter(f"tag {key!r} is given twice ({key}={tags[key]}, {text})", ctx=ctx, param=param)
        tags[key] = value
    return tags or None


NAME = click.option("--name", default=None, metavar="NAME",
                    help="Name the run, stored with it (`evalharness runs --name NAME` finds it); a resume keeps it "
                         "and refuses another.")
TAG = click.option("--tag", "tags", multiple=True, callback=_parse_tags, metavar="KEY=VALUE",
                   help="Tag the run (repeatable; KEY of letters, digits, '_', '.', '-'; VALUE any text); a "
                        "resume keeps the tags and refuses others.")


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
              help="YAML of model endpoint fields (timeout_s, num_retries, seed, max_tokens, prices, training_cutoff, "
                   "extra, ...) applied to every --model, and under `models:` per model name; options given on the "
                   "command line win.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds per task.")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True,
              help="Trials at once (per Ray node with --executor ray; see --docker-host for remote engines).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where trials run: threads on this machine's Docker engine(s), or a Ray cluster whose workers "
                   "each use their own node's engine (docs/scale.md). Not stored with the run: a resume may run "
                   "elsewhere.")
@click.option("--ray-address", default=None, metavar="HOST:PORT",
              help="The Ray cluster to join (default: RAY_ADDRESS, else a cluster started for this run).")
@click.option("--docker-host", "docker_hosts", multiple=True, metavar="URL[#WORKERS]",
              help="Run trials on this Docker engine instead of the local one (repeatable): unix://, ssh://user@host "
                   "or tcp://host:2376 (TLS from DOCKER_CERT_PATH, or ?tls=CERT_DIR). #N runs N trials there at "
                   "once (default: --workers).")
@click.option("--registry", default=None, metavar="HOST[:PORT][/PREFIX]",
              help="Share images through this registry: an engine that lacks an image pulls it (the base image "
                   "too) before building it, and pushes what it built or already had, so a cluster builds each once.")
@click.option("--task", "tasks", multiple=True, help="Only these task ids (repeatable).")
@click.option("--created-after", default=None, metavar="DATE",
              help="Only tasks created after DATE (YYYY-MM-DD: after that whole UTC day; or an ISO 8601 time). "
                   "Tasks without a created_at are left out and named.")
@click.option("--created-before", default=None, metavar="DATE", help="Only tasks created before DATE (strict).")
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
@NAME
@TAG
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True, help="Format of the report printed at the end, alone on stdout.")
@click.option("--report-dir", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Where the HTML report is written (its path is printed on stderr).")
@CA_BUNDLE
@RUNS_DIR
@DB
def run_cmd(pack, harnesses, models, api_base, api_key_env, temperature, input_cost_per_token, output_cost_per_token,
            model_config, seeds, workers, executor, ray_address, docker_hosts, registry, tasks, created_after, created_before, max_steps, max_cost, max_tokens,
            max_wall, disk, max_patch_mb, include_invalid, resume, name, tags, fmt, report_dir, ca_bundle, runs_dir,
            db) -> None:
    """Run tasks x harnesses x models x seeds in Docker sandboxes and report.

    The report alone goes to stdout (`--format json`: one JSON document); progress, the HTML report's
    path, warnings and errors go to stderr.

    \b
    evalharness run -p tasks/quickstart -H oracle -H null --seeds 3 -j 2
    evalharness run -p tasks/quickstart -H minimal -H mini-swe-agent -m openai/gpt-4o-mini --api-key-env OPENAI_API_KEY
    evalharness run -p tasks/mine -H minimal -m openai/gpt-4o --created-after 2024-10-31   # after its cutoff
    evalharness run -p tasks/quickstart -H oracle --name nightly --tag model=oracle --format json > run.json
    evalharness run --resume 20261130-101500-ab12
    evalharness run -p tasks/quickstart -H oracle --executor ray --ray-address 10.0.0.5:6379 -j 8
    evalharness run -p tasks/quickstart -H oracle --docker-host 'ssh://me@big1#16' --docker-host 'ssh://me@big2#16'

    \b
    Exit codes (run and run --resume):
      0    every trial recorded, no task error, no infrastructure failure
      1    a user error (bad pack, option or configuration), or task errors: broken
           tasks (image cannot be built, gold patch does not apply), named at the end
      2    the command line itself is malformed (click's usage error)
      3    infrastructure failures remained (resume to retry them)
      4    a configuration's every trial is harness_error (recorded and counted, but its
           harness never worked: a wrong model name, a refused key), named at the end
      130  interrupted (Ctrl-C, SIGTERM); resume with --resume RUN_ID
    """
    from evalharness.console import run_with_progress
    from evalharness.executors import ExecutorSpec
    from evalharness.runner import RunConfig
    from evalharness.types import Budget

    if executor == "ray" and docker_hosts:
        raise click.UsageError("--docker-host is for runs without Ray: a Ray worker uses its own node's engine")
    if ray_address and executor != "ray":
        raise click.UsageError("--ray-address needs --executor ray")
    where = ExecutorSpec(kind="ray" if executor == "ray" else ("hosts" if docker_hosts else "local"),
                         ray_address=ray_address, registry=registry, hosts=tuple(docker_hosts))

    config = None
    if not resume:
        if not pack or not harnesses:
            raise click.UsageError("give --pack and at least one --harness (or --resume RUN_ID)")
        endpoints = _model_endpoints(models, model_config, api_base=api_base, api_key_env=api_key_env,
                                     temperature=temperature, input_cost_per_token=input_cost_per_token,
                                     output_cost_per_token=output_cost_per_token)
        if created_after or created_before:
            _check_dates(pack, tasks, created_after, created_before)
        config = _checked(RunConfig, pack=str(pack), harnesses=list(harnesses), seeds=list(range(seeds)),
                          workers=workers, tasks=list(tasks) or None, disk=disk, max_patch_mb=max_patch_mb,
                          include_invalid=include_invalid, models=endpoints, created_after=created_after,
                          created_before=created_before,
                          budget=_checked(Budget, max_steps=max_steps, max_cost_usd=max_cost, max_tokens=max_tokens,
                                          max_wall_s=max_wall))
    with contextlib.redirect_stdout(sys.stderr):  # whatever a library prints while trials run stays off stdout
        summary = run_with_progress(config, resume=resume, runs_dir=runs_dir, db=db, ca_bundle=ca_bundle, name=name,
                                    tags=tags, executor=where)
    _print_report([summary.run_id], fmt, runs_dir, db, report_dir)
    _exit_for(summary)


def _check_dates(pack, tasks, after, before) -> None:
    """Bad dates are a UserError; tasks a date window cannot place (no created_at) are named on stderr."""
    from evalharness.packs import load_pack
    from evalharness.stats.cutoff import select_created

    loaded = [t for t in load_pack(pack).tasks if not tasks or t.instance_id in tasks]
    chosen = select_created({t.instance_id: t.created_at for t in loaded}, after=after, before=before)
    if chosen.undated:
        named = ", ".join(f"{t} ({chosen.unreadable[t]!r} is not a date)" if t in chosen.unreadable else t
                          for t in chosen.undated[:10])
        more = f" and {len(chosen.undated) - 10} more" if len(chosen.undated) > 10 else ""
        click.echo(f"warning: {len(chosen.undated)} task(s) without a created_at are left out by the date window: "
                   f"{named}{more}", err=True)
    if not chosen.kept:
        raise UserError(f"no task of {pack} was created in the window (after {after or '-'}, before {before or '-'}): "
                        f"{len(chosen.outside)} outside it, {len(chosen.undated)} without a date")
    click.echo(f"date window: {len(chosen.kept)} of {len(loaded)} tasks (after {after or '-'}, "
               f"before {before or '-'})", err=True)


def _exit_for(summary) -> None:
    """Name the broken tasks and remaining infrastructure failures on stderr, then exit with the run's code."""
    broken: dict[str, list[str]] = {}
    for trial_id, reason in summary.task_errors:
        broken.setdefault("/".join(trial_id.split("/")[:2]) + f": {reason}", []).append(trial_id)
    for line, trial_ids in sorted(broken.items()):
        click.echo(f"task error: {line} ({len(trial_ids)} trial{'s' if len(trial_ids) != 1 else ''})", err=True)
    if summary.task_errors:
        click.echo(f"error: {len(summary.task_errors)} trial(s) of run {summary.run_id} are task errors (broken tasks, "
                   "or verifiers that gave no valid reward: left out of the rates)\n  fix the pack, then run again "
                   f"(evalharness run --resume {summary.run_id} retries them)", err=True)
    if summary.infra_remaining:
        click.echo(f"error: {summary.infra_remaining} trial(s) of run {summary.run_id} ended in infrastructure "
                   f"failures\n  retry them with: evalharness run --resume {summary.run_id}", err=True)
    for config, reason in summary.never_worked.items():
        click.echo(f"error: every trial of {config} in run {summary.run_id} is harness_error (counted as failures "
                   f"in its rate): its harness never worked; check the model name, key and endpoint\n"
                   f"  first error: {reason.strip().splitlines()[0][:300] if reason.strip() else reason}", err=True)
    sys.exit(summary.exit_code)


@cli.command("report")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html", "csv", "parquet"]),
              default="table", show_default=True,
              help="csv and parquet: the trial table, one row per trial (parquet needs --output).")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None, help="Write to this file.")
@RUNS_DIR
@DB
def report_cmd(run_ids, fmt, output, runs_dir, db) -> None:
    """Resolve rate, cost and merge rate per configuration with task-level intervals, paired differences,
    per-task counts, infra failures (docs/report.md).

    The report alone goes to stdout (or to --output, whose path is then printed on stderr). html is one
    self-contained page whose every number links down to its trials (patch, tests, trajectory).
    csv and parquet write the trial table instead: one row per trial, the columns every number is computed from.

    \b
    evalharness report RUN_ID --format md
    evalharness report RUN_A RUN_B --format html -o reports/ab.html
    evalharness report RUN_ID --format parquet -o trials.parquet
    """
    from evalharness.report.assemble import assemble
    from evalharness.report.render import render

    store = _store(runs_dir, db)
    if fmt in ("csv", "parquet"):
        from evalharness.report.export import write_table

        _, frame = assemble(store, list(run_ids), runs_dir)  # the frame with `merged` when there are reviews
        text = write_table(frame, fmt, output)
        if text is not None:
            click.echo(text, nl=False)
        else:
            click.echo(f"wrote {output}", err=True)
        return
    report, _ = assemble(store, list(run_ids), runs_dir)
    text = render(report, fmt)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        click.echo(f"wrote {output}", err=True)
        _warn_flags(report)
    else:
        click.echo(text)


def _print_report(run_ids: list[str], fmt: str, runs_dir: Path, db: str | None, report_dir: Path) -> None:
    from evalharness.report.assemble import assemble
    from evalharness.report.render import render

    report, _ = assemble(_store(runs_dir, db), run_ids, runs_dir)
    click.echo(render(report, fmt))
    report_dir.mkdir(parents=True, exist_ok=True)
    html = report_dir / f"{run_ids[0]}.html"
    html.write_text(render(report, "html"))
    click.echo(f"HTML report: {html}", err=True)
    _warn_flags(report)


def _warn_flags(report: dict) -> None:
    """Tampered trials and suspicious code (with its first quoted lines), last on the console (stderr) whatever
    the format or output file."""
    from evalharness.report.suspicious import console_lines

    for line in report["flag_warnings"]:
        click.echo(f"warning: {line}", err=True)
    for line in console_lines(report):
        click.echo(line, err=True)


def _checked(model, **fields):
    """``model(**fields)``, with a bad option value as a UserError naming the option (no traceback)."""
    from pydantic import ValidationError

    from evalharness.errors import UserError

    try:
        return model(**fields)
    except ValidationError as e:
        options = {"max_cost_usd": "max_cost", "max_wall_s": "max_wall"}
        problems = "; ".join(f"--{options.get(str(err['loc'][0]), str(err['loc'][0])).replace('_', '-')}: {err['msg']}"
                             for err in e.errors() if err["loc"])
        raise UserError(f"invalid run options: {problems}") from e


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
    per_model = base.pop("models", None) or {}
    if not isinstance(per_model, dict) or not all(isinstance(v, dict) for v in per_model.values()):
        raise ConfigError(f"model config {model_config}: `models:` maps each model name to its fields")
    names = list(models) or ([base["name"]] if "name" in base else [])
    fields = {k: v for k, v in options.items() if v is not None}
    if ("input_cost_per_token" in {**base, **fields}) != ("output_cost_per_token" in {**base, **fields}):
        raise ConfigError("give both --input-cost-per-token and --output-cost-per-token (or neither)")
    try:
        return [ModelEndpoint.model_validate({**base, **per_model.get(name, {}), **fields, "name": name})
                for name in names]
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"model settings are invalid ({model_config or 'command line'})", problems) from e


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

