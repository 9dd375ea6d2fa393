"""`grade-predictions`: patches made elsewhere, graded by the same grader."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, DB, RUNS_DIR, cli
from evalharness.cli.run import _exit_for, _print_report


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
    does not apply is patch_apply_failed (a failure in evalharness's rates, an error in the SWE-bench
    report, as SWE-bench counts it). Per file a SWE-bench report (RUN_FOLDER/<model>.<run_id>.json or
    --report-json), and per graded instance SWE-bench's report.json under
    RUN_FOLDER/run_evaluation/<model>/<instance_id>/. Exit codes as `run`.

    \b
    evalharness grade-predictions -p tasks/quickstart -P gold.jsonl -P mine.json
    evalharness grade-predictions -p tasks/quickstart -P diffs/ --model-name mine
    evalharness compare RUN_ID        # the two configurations of the first command, paired

    \b
    Exit codes: 0 every trial recorded; 1 a user error (a malformed predictions file, named with
    its line) or task errors; 2 a malformed command line; 3 infrastructure failures remained
    (--resume RUN_ID retries them); 4 every prediction of a file ended harness_error; 130 interrupted.
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
        click.echo(summary_line(report, path), err=True)  # stdout holds the report document alone
    _exit_for(graded.summary)
