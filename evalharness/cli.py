"""Command line: thin click commands that parse, build a config and call one library function."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalharness.errors import UserError

RUNS_DIR = click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
                        help="Folder of run folders; the default database lives there too.")
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
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds per task.")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=2, show_default=True, help="Trials at once.")
@click.option("--task", "tasks", multiple=True, help="Only these task ids (repeatable).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Budget: model calls per trial.")
@click.option("--max-cost", type=float, default=None, help="Budget: USD per trial.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Budget: tokens per trial.")
@click.option("--max-wall", type=float, default=None, help="Budget: seconds per trial (default: the pack's agent_s).")
@click.option("--resume", default=None, metavar="RUN_ID", help="Finish an interrupted run; completed trials are kept.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True, help="Format of the report printed at the end.")
@click.option("--report-dir", type=click.Path(path_type=Path), default=Path("reports"), show_default=True,
              help="Where the HTML report is written.")
@RUNS_DIR
@DB
def run_cmd(pack, harnesses, models, api_base, api_key_env, seeds, workers, tasks, max_steps, max_cost, max_tokens,
            max_wall, resume, fmt, report_dir, runs_dir, db) -> None:
    """Run tasks x harnesses x models x seeds in Docker sandboxes and report.

    \b
    evalharness run -p tasks/quickstart -H oracle -H null --seeds 3 -j 2
    evalharness run --resume 20261130-101500-ab12
    """
    from evalharness.console import run_with_progress
    from evalharness.runner import RunConfig
    from evalharness.types import Budget, ModelEndpoint

    config = None
    if not resume:
        if not pack or not harnesses:
            raise click.UsageError("give --pack and at least one --harness (or --resume RUN_ID)")
        config = RunConfig(
            pack=str(pack), harnesses=list(harnesses), seeds=list(range(seeds)), workers=workers,
            tasks=list(tasks) or None,
            models=[ModelEndpoint(name=m, api_base=api_base, api_key_env=api_key_env) for m in models],
            budget=Budget(max_steps=max_steps, max_cost_usd=max_cost, max_tokens=max_tokens, max_wall_s=max_wall))
    summary = run_with_progress(config, resume=resume, runs_dir=runs_dir, db=db)
    _print_report([summary.run_id], fmt, runs_dir, db, report_dir)


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


@cli.command("runs")
@RUNS_DIR
@DB
def runs_cmd(runs_dir, db) -> None:
    """List stored runs."""
    for r in _store(runs_dir, db).list_runs():
        click.echo(f"{r['run_id']}  {r['status']:<11} {r['pack']:<20} trials={r['trials'] or 0} "
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
@click.option("--base", default="bookworm", show_default=True, help="Base image recipe.")
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
@click.option("--ca-bundle", type=click.Path(exists=True, path_type=Path), default=None,
              help="CA bundle copied into images so pip works behind TLS-intercepting proxies "
                   "(default: the host's bundle when present).")
def build_cmd(pack, ca_bundle) -> None:
    """Build (or find) the environment and task images of a pack."""
    from evalharness.packs import load_pack
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import ImageBuilder

    loaded = load_pack(pack)
    builder = ImageBuilder(docker_client(), ca_bundle=ca_bundle, log=click.echo)
    for task in loaded.tasks:
        click.echo(f"{task.instance_id}: {builder.task_image(loaded, task)}")
    click.echo(f"built {len(builder.built)} image(s)")


@sandbox_cmd.command("gc")
@click.option("--run-id", default=None, help="Only this run's containers.")
def gc_cmd(run_id) -> None:
    """Remove leftover evalharness containers (labelled evalharness.run_id)."""
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.sandbox.engine import docker_client

    click.echo(f"removed {remove_labelled(docker_client(), run_id)} container(s)")


@cli.group("packs")
def packs_cmd() -> None:
    """Task packs."""


@packs_cmd.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
def validate_cmd(paths) -> None:
    """Check pack manifests and task files; exit 1 on the first problem."""
    from evalharness.packs import load_pack

    for path in paths:
        pack = load_pack(path)
        click.echo(f"{path}: ok ({pack.name} v{pack.spec.version}, {len(pack.tasks)} tasks)")


@cli.group("harnesses")
def harnesses_cmd() -> None:
    """Harnesses."""


@harnesses_cmd.command("list")
def harnesses_list_cmd() -> None:
    """Names usable with --harness."""
    from evalharness.harness.registry import available

    for name in available():
        click.echo(name)


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
