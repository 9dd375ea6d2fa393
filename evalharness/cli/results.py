"""`compare`, `plan`, `runs`, `show`: reading stored results.

What this module decides for the user: a paired comparison pairs tasks of one pack only (tasks of
different packs that happen to share an id are not the same task: refused unless --allow-mixed-packs);
`compare --metric merged` compares the reviewers' merge verdicts instead of the grader's; `plan` prints
whole numbers of tasks (rounded up) and no number at all from a pilot without variance; `show` takes
a trial id as a run prints it (`pack/task/harness/provider/model/seed-N`), with or without its run id.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from evalharness.cli._common import DB, RUNS_DIR, _store, cli
from evalharness.cli.run import _parse_tags
from evalharness.errors import UserError

METRICS = ("resolved", "merged")
"""What `compare --metric` compares: the grader's verdicts, or the merge reviews (report.ab.METRICS names them)."""


def _frame(run_ids, runs_dir, db):
    from evalharness.report.data import trials_frame

    return trials_frame(_store(runs_dir, db), list(run_ids))


def _print_rows(rows: list[list[str]], fmt: str, title: str) -> None:
    from evalharness.report.render import markdown_table, text_table

    click.echo(markdown_table(rows) if fmt == "md" else text_table(rows, title))


def _check_packs(side_a, side_b, allow_mixed: bool) -> None:
    """Refuse to pair trials of different packs (unless allowed, then warn on stderr)."""
    packs = sorted(set(side_a["pack"]) | set(side_b["pack"]))
    if len(packs) < 2:
        return
    by_side = "; ".join(f"{side['config'].iloc[0]}: {', '.join(sorted(set(side['pack'])))}"
                        for side in (side_a, side_b))
    if not allow_mixed:
        raise UserError(f"the configurations compared span {len(packs)} packs ({by_side}): tasks are paired by "
                        "task id, and tasks of different packs are not the same task",
                        "compare runs of one pack, or pass --allow-mixed-packs if the packs share their tasks")
    click.echo(f"warning: comparing trials of {len(packs)} packs ({by_side}), paired by task id "
               "(--allow-mixed-packs)", err=True)


def _with_merged(df, store, run_ids):
    """The trials with a `merged` column (share of reviewers who would merge; NaN: not reviewed)."""
    from evalharness.report.data import reviews_frame
    from evalharness.stats.merge import merged_column

    reviews = reviews_frame(store, list(run_ids))
    agent = reviews[reviews["arm"] == "agent"] if len(reviews) else reviews
    if agent.empty:
        raise UserError(f"no merge reviews for these runs ({', '.join(run_ids)})",
                        f"record some with: evalharness review serve {' '.join(run_ids)} (or import them)")
    return df.assign(merged=merged_column(df, reviews))


@cli.command("compare")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--a", "config_a", default=None, help="Configuration A as harness/model (default: the first of two).")
@click.option("--b", "config_b", default=None, help="Configuration B as harness/model.")
@click.option("--metric", type=click.Choice(list(METRICS)), default="resolved", show_default=True,
              help="resolved: the grader's verdicts; merged: the merge reviews (`evalharness review serve`), "
                   "unreviewed trials left out.")
@click.option("--allow-mixed-packs", is_flag=True,
              help="Pair tasks by id even when A and B ran on different packs (refused otherwise).")
@click.option("--format", "fmt", type=click.Choice(["table", "md"]), default="table", show_default=True)
@RUNS_DIR
@DB
def compare_cmd(run_ids, config_a, config_b, metric, allow_mixed_packs, fmt, runs_dir, db) -> None:
    """Paired A/B on shared tasks: difference, interval, p-values, cost per resolved.

    Give two runs (one configuration each), or one run holding two configurations, of one pack.

    \b
    evalharness compare RUN_A RUN_B
    evalharness compare RUN_ID --a minimal/openai/gpt-4o --b mini-swe-agent/openai/gpt-4o
    evalharness compare RUN_A RUN_B --metric merged
    """
    from evalharness.report.ab import split_configs

    from evalharness.report.data import trials_frame

    store = _store(runs_dir, db)
    df = trials_frame(store, list(run_ids))
    if metric == "merged":
        df = _with_merged(df, store, run_ids)
    side_a, side_b = split_configs(df, config_a, config_b)
    _check_packs(side_a, side_b, allow_mixed_packs)
    from evalharness.report.ab import METRICS as NAMES, comparison_rows

    _print_rows(comparison_rows(side_a, side_b, metric), fmt, f"Paired comparison ({NAMES[metric]})")


def _no_variance_note(side_a, side_b) -> str:
    sides = {s["config"].iloc[0]: s for s in (side_a, side_b)}
    said = "; ".join(f"{config}: {int(s['resolved'].sum())} of {len(s)} trials resolved" for config, s in sides.items())
    return (f"pilot has no variance ({said}): its outcomes vary neither across tasks nor across seeds, so it "
            "gives no basis for a number of tasks; pilot on tasks that some trials solve and some do not")


@cli.command("plan")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--delta", type=click.FloatRange(min=0, max=1, min_open=True), default=0.05, show_default=True,
              help="Difference to detect (0.05 = 5 points).")
@click.option("--a", "config_a", default=None, help="Configuration A as harness/model (default: the first of two).")
@click.option("--b", "config_b", default=None, help="Configuration B as harness/model.")
@click.option("--format", "fmt", type=click.Choice(["table", "md"]), default="table", show_default=True)
@RUNS_DIR
@DB
def plan_cmd(run_ids, delta, config_a, config_b, fmt, runs_dir, db) -> None:
    """From a pilot run: tasks needed for 80% power at K = 1, 3, 5, 10 seeds, and the detectable effect.

    Tasks and trials are rounded up; a pilot with no variance (every trial solved, or none) plans nothing.
    One configuration is planned as if unpaired (conservative).

    \b
    evalharness plan RUN_ID --delta 0.05
    evalharness plan RUN_ID --a minimal/openai/gpt-4o --b mini-swe-agent/openai/gpt-4o
    """
    import pandas as pd

    from evalharness.report.ab import split_configs
    from evalharness.stats import plan_table

    df = _frame(run_ids, runs_dir, db)
    side_a, side_b = split_configs(df, config_a, config_b) if df["config"].nunique() > 1 else (df, df)
    table = plan_table(pd.concat([side_a, side_b]).drop_duplicates(), delta=delta,
                       a=side_a["config"].iloc[0], b=side_b["config"].iloc[0])
    from evalharness.report.ab import plan_rows

    rows, note = plan_rows(table)
    _print_rows(rows, fmt, f"Design for a paired comparison detecting {delta:+.0%} at 80% power, alpha 0.05")
    if any(row[1].startswith("n/a (pilot has no variance") for row in rows[1:]):
        note = _no_variance_note(side_a, side_b)
    if note:
        click.echo(f"note: {note}")


@cli.command("runs")
@click.option("--name", default=None, metavar="NAME", help="Only runs of this name.")
@click.option("--tag", "tags", multiple=True, callback=_parse_tags, metavar="KEY=VALUE",
              help="Only runs with this tag (repeatable: a run must have every one).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: one line per run; json: one JSON list of runs on stdout.")
@RUNS_DIR
@DB
def runs_cmd(name, tags, fmt, runs_dir, db) -> None:
    """List stored runs, newest first; a run whose runner died (SIGKILL, power loss) shows as interrupted.

    Each run shows its status, pack, trials, resolved trials, name, tags, harnesses and models.

    \b
    evalharness runs
    evalharness runs --name nightly --tag model=gpt-4o --format json
    """
    listed = [_run_listing(r) for r in _store(runs_dir, db).find_runs(name=name, tags=tags)]
    if fmt == "json":
        click.echo(json.dumps(listed, indent=2))
        return
    for r in listed:
        tags_text = ",".join(f"{k}={v}" for k, v in sorted(r["tags"].items())) or "-"
        click.echo(f"{r['run_id']}  {r['status']:<11} {r['pack']:<20} trials={r['trials']} resolved={r['resolved']} "
                   f"name={r['name'] or '-'} tags={tags_text} harnesses={','.join(r['harnesses']) or '-'} "
                   f"models={','.join(r['models']) or '-'}")


def _run_listing(row: dict) -> dict:
    """A stored run as `runs` shows it: its live status, labels, and the harnesses and models of its config."""
    from evalharness.liveness import run_status

    config = row["config"] if isinstance(row["config"], dict) else {}
    run = config.get("run") if isinstance(config.get("run"), dict) else {}
    harnesses = list(config.get("harnesses") or {}) or [str(h) for h in run.get("harnesses") or []]
    models = [str(m.get("name")) if isinstance(m, dict) else str(m) for m in run.get("models") or []]
    when = {k: row[k].isoformat() if row[k] is not None else None for k in ("created_at", "heartbeat_at")}
    return {"run_id": row["run_id"], "name": row["name"], "tags": row["tags"], "status": run_status(row),
            "pack": row["pack"], **when, "trials": row["trials"], "resolved": row["resolved"],
            "harnesses": harnesses, "models": models, "runner_host": row["runner_host"],
            "runner_pid": row["runner_pid"]}


@cli.command("show")
@click.argument("target")
@click.option("--run", "run_id", default=None, metavar="RUN_ID", help="The run of a TARGET given as a trial id.")
@click.option("--output-chars", type=click.IntRange(min=100), default=1500, show_default=True,
              help="Characters of each output, command and message shown (head and tail).")
@RUNS_DIR
@DB
def show_cmd(target, run_id, output_chars, runs_dir, db) -> None:
    """Show a trial's trajectory: steps, commands, outputs, usage, outcome.

    TARGET is a trial id as a run prints it (PACK/TASK/HARNESS/MODEL/seed-N, e.g. with the model
    openai/gpt-4o), alone (the run found in the store; --run RUN_ID when several runs hold it) or as
    RUN_ID/TRIAL_ID; or a trial folder, or its path under --runs-dir. A run or any folder above trials
    lists the trials in it.

    \b
    evalharness show 20261130-101500-ab12/quickstart/boltons-strutils-parse-int-list/minimal/openai/gpt-4o/seed-0
    evalharness show quickstart/boltons-strutils-parse-int-list/minimal/openai/gpt-4o/seed-0 --run 20261130-101500-ab12
    evalharness show 20261130-101500-ab12
    """
    from rich.console import Console

    from evalharness.trajectory import render, trial_folders

    folder = _target_folder(target, run_id, runs_dir, db)
    trials = trial_folders(folder)
    if not trials:
        raise UserError(f"no trajectory.json under {folder}")
    if len(trials) > 1:
        for trial in trials:
            click.echo(trial.relative_to(runs_dir) if trial.is_relative_to(runs_dir) else trial)
        return
    render(trials[0], Console(), output_chars=output_chars)


def _target_folder(target: str, run_id: str | None, runs_dir: Path, db: str | None) -> Path:
    """The folder `show` reads: a folder as given, under --runs-dir (or the --run's folder), or a trial id's."""
    places = [runs_dir / run_id / target] if run_id else [Path(target), runs_dir / target]
    for place in places:
        if place.is_dir():
            return place
    found = _trial_by_id(target, run_id, runs_dir, db)
    if found is not None:
        return found
    where = f"run {run_id}" if run_id else f". and {runs_dir}"
    raise UserError(f"no trial or run folder {target!r} (looked in {where}) and no trial of that id in the store",
                    "pass a trial id as the run printed it (PACK/TASK/HARNESS/MODEL/seed-N, with RUN_ID/ in front "
                    "or --run RUN_ID), or a folder; `evalharness runs` lists runs")


def _trial_by_id(target: str, run_id: str | None, runs_dir: Path, db: str | None) -> Path | None:
    """The folder of the trial whose id (``RUN_ID/TRIAL_ID``, or TRIAL_ID of --run or of the one run holding it)
    is ``target``, looked up in the store's trials (the folder names are made path-safe: openai/x -> openai__x)."""
    if db is None and not (runs_dir / "evalharness.db").exists():
        return None
    store = _store(runs_dir, db)
    if run_id:
        store.get_run(run_id)  # an unknown run is a clear error
    hits = store.find_trials(target, run_id)
    first, _, rest = target.partition("/")
    if not hits and rest and run_id in (None, first):
        hits = store.find_trials(rest, first)  # RUN_ID/TRIAL_ID
    if len({r["run_id"] for r in hits}) > 1:
        raise UserError(f"trial {target!r} is in {len(hits)} runs: {', '.join(r['run_id'] for r in hits)}",
                        f"name one: evalharness show {target} --run RUN_ID")
    if not hits:
        return None
    folder = runs_dir / hits[0]["detail"]
    if not folder.is_dir():
        raise UserError(f"trial {target!r} of run {hits[0]['run_id']} is in the store but its folder {folder} "
                        "is missing", "was the run folder moved or deleted? `--runs-dir` points at the runs folder")
    return folder
