"""`audit`: auditing a pack for broken tasks (probes, investigator agents, human labels; docs/audit.md)."""

from __future__ import annotations

import click

from evalharness.cli._common import cli


class _AuditGroup(click.Group):
    """`evalharness audit PACK ...` is `evalharness audit run PACK ...`; `audit label ...` etc. are subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@cli.group("audit", cls=_AuditGroup)
def audit_cmd() -> None:
    """Find the broken tasks of a pack: probes, investigator agents, human labels, agreement.

    \b
    evalharness audit tasks/lite --runs RUN_ID
    evalharness audit label serve tasks/lite --annotator alice
    evalharness audit report tasks/lite --format html
    """


from pathlib import Path  # noqa: E402

from evalharness.cli._common import CA_BUNDLE, DB, RUNS_DIR, _store  # noqa: E402
from evalharness.errors import UserError  # noqa: E402

MUTANTS_CAP = 12
"""``audit.mutants.DEFAULT_CAP``, written out so that the CLI loads without libcst (a test keeps them equal)."""

EXCLUDE = click.option("--exclude", "excluded", multiple=True, metavar="ID",
                       help="Leave this task out of the audit and its results (repeatable).")
EXCLUDE_FROM = click.option("--exclude-from", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                            default=None, help="Leave out the task ids listed in this file (one a line, # comments).")
AUDITS_DIR = click.option("--audits-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("audits"),
                          show_default=True, help="Folder of audit outputs (<audits-dir>/<pack>/).")


@audit_cmd.command("run")
@click.argument("pack_path", metavar="PACK", type=click.Path(exists=True))
@click.option("--runs", "run_ids", multiple=True, metavar="RUN_ID",
              help="Stored runs of this pack (repeatable): the universal-failure probe and the clean-subset scores.")
@click.option("--agent-preds", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Real agents' predictions with official verdicts (JSONL: instance_id, model_patch, resolved): "
                   "the agents probe.")
@click.option("--probe", "only", multiple=True, metavar="NAME", help="Only these probes (repeatable; see audit probes).")
@click.option("--skip-probe", "skip", multiple=True, metavar="NAME", help="Leave these probes out (repeatable).")
@click.option("--investigator", "harness", default=None, metavar="HARNESS",
              help="Also run an investigator agent per task: a harness name (minimal, a CLI agent, a file).")
@click.option("--model", "-m", "model", default=None, help="The investigator's model (litellm model string).")
@click.option("--api-base", default=None, help="The investigator's model endpoint base URL.")
@click.option("--api-key-env", default=None, help="Name of the environment variable holding the API key.")
@click.option("--model-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="YAML of model endpoint fields (as for run).")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Investigator seeds per task.")
@click.option("--task", "tasks", multiple=True, help="Only these task ids (repeatable).")
@EXCLUDE
@EXCLUDE_FROM
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks at once.")
@click.option("--force", is_flag=True, help="Run every probe again, even where a current finding is stored.")
@click.option("--no-docker", is_flag=True,
              help="Only what needs no engine: Docker probes say skipped; base code from host files (mirrors).")
@click.option("--min-severity", type=click.IntRange(0, 3), default=2, show_default=True,
              help="A task is flagged when a probe flags it at this severity or more.")
@click.option("--mutants-cap", type=click.IntRange(min=1), default=None, metavar="N",
              help=f"At most N mutants per task for the mutants probe, each one grading run [default: {MUTANTS_CAP}].")
@AUDITS_DIR
@CA_BUNDLE
@RUNS_DIR
@DB
def run_cmd(pack_path, run_ids, agent_preds, only, skip, harness, model, api_base, api_key_env, model_config, seeds,
            tasks, excluded, exclude_from, workers, force, no_docker, min_severity, mutants_cap, audits_dir, ca_bundle,
            runs_dir, db) -> None:
    """Audit PACK: run the probes (and investigators) on every task; store findings with evidence.

    Findings go to the results database and to <audits-dir>/<pack>/findings/<task>.json; the
    summary to <audits-dir>/<pack>/audit.json and audit.html. Resumable: run the same command
    again and only probes whose inputs changed, or that failed on the engine, run again. A task
    without an environment recipe is read by the probes that need none; the others say skipped
    with the reason.

    \b
    evalharness audit tasks/lite --runs RUN_A --runs RUN_B
    evalharness audit tasks/lite --no-docker --agent-preds preds.jsonl
    evalharness audit tasks/lite --no-docker --exclude astropy__astropy-6938
    evalharness audit tasks/lite --investigator minimal -m openai/gpt-4o --seeds 3
    evalharness audit tasks/quickstart --no-docker

    \b
    Exit codes:
      0    every task audited (whatever the audit found)
      1    a user error (bad pack, option, unknown probe or run)
      3    some findings are engine errors or crashed probes: run the same command again
      130  interrupted; findings stored so far are kept
    """
    from evalharness.audit.investigator import chosen_harness
    from evalharness.audit.pipeline import Auditor
    from evalharness.packs import load_pack

    pack = load_pack(pack_path)
    unknown = sorted(set(tasks) - {t.instance_id for t in pack.tasks})
    if unknown:
        raise UserError(f"no task {', '.join(unknown)} in pack {pack.name}")
    left_out = _excluded(pack, excluded, exclude_from)
    chosen = [t for t in pack.tasks if (not tasks or t.instance_id in tasks) and t.instance_id not in left_out]
    probes = _chosen_probes(only, skip, mutants_cap)
    harness = chosen_harness(harness, only, skip)  # --probe investigator: minimal unless --investigator
    store = _audit_store(runs_dir, db)
    trials = _trials(store, run_ids, pack.name)
    predictions = _predictions(agent_preds, pack)
    ctx, cleanup, client = _context(pack, trials, no_docker, ca_bundle)
    ctx.predictions = predictions
    investigator = _investigator(harness, model, api_base, api_key_env, model_config, seeds, client, ca_bundle,
                                 audits_dir)
    auditor = Auditor(pack, store, ctx, probes, out_dir=audits_dir, investigator=investigator, force=force)
    click.echo(f"auditing {len(chosen)} task(s) of {pack.name} with {', '.join(p.name for p in probes) or 'no probe'}"
               + (f" and the investigator ({harness}, {seeds} seed(s))" if investigator else ""), err=True)
    try:
        done = auditor.run(chosen, workers=workers, log=lambda line: click.echo(line, err=True))
    except KeyboardInterrupt:
        click.echo("interrupted: findings stored so far are kept; run the same command to go on", err=True)
        raise SystemExit(130)
    finally:
        cleanup()
    results = _write_results(pack, store, trials, audits_dir, min_severity, left_out)
    click.echo(_summary(results, audits_dir / pack.name))
    if any(f.status == "error" for found in done.values() for f in found):
        raise SystemExit(3)


def _excluded(pack, excluded, exclude_from: Path | None) -> set[str]:
    """The task ids of ``--exclude`` and ``--exclude-from``; an id the pack does not hold is an error."""
    ids = list(excluded)
    if exclude_from is not None:
        lines = (line.split("#", 1)[0].strip() for line in exclude_from.read_text().splitlines())
        ids += [line for line in lines if line]
    unknown = sorted(set(ids) - {t.instance_id for t in pack.tasks})
    if unknown:
        where = f" (from {exclude_from})" if exclude_from is not None else ""
        raise UserError(f"cannot exclude {', '.join(unknown)}{where}: no such task in pack {pack.name}")
    return set(ids)


def _predictions(path: Path | None, pack):
    if path is None:
        return None
    from evalharness.audit.agentpreds import load_predictions

    found = load_predictions(path)
    if not set(found) & {t.instance_id for t in pack.tasks}:
        raise UserError(f"{path} holds no prediction of a task of pack {pack.name}",
                        "give the predictions of this pack's tasks (instance_id as in the pack)")
    return found


def _chosen_probes(only, skip, mutants_cap: int | None = None):
    """The probes ``--probe``/``--skip-probe`` choose; the mutants probe with ``--mutants-cap`` when given (a
    changed cap changes its inputs hash, so a resumed audit grades that probe again)."""
    import dataclasses

    from evalharness.audit.probes import load_probes

    probes = load_probes()
    unknown = sorted((set(only) | set(skip)) - set(probes) - {"investigator"})  # that one: chosen_harness
    if unknown:
        raise UserError(f"no probe {', '.join(unknown)}", f"probes: {', '.join(probes)}, investigator")
    if mutants_cap is not None:
        probes["mutants"] = dataclasses.replace(probes["mutants"], cap=mutants_cap)
    return [p for name, p in probes.items() if (not only or name in only) and name not in skip]


def _audit_store(runs_dir: Path, db: str | None):
    from evalharness.store import Store, database_url

    return Store(database_url(db or runs_dir / "evalharness.db"))


def _trials(store, run_ids, pack_name):
    if not run_ids:
        return None
    from evalharness.report.data import trials_frame

    frame = trials_frame(store, list(run_ids))
    other = sorted(set(frame["pack"]) - {pack_name})
    if other:
        raise UserError(f"run(s) {', '.join(run_ids)} hold trials of pack(s) {', '.join(other)}, not {pack_name}",
                        "give runs of the audited pack")
    return frame


def _context(pack, trials, no_docker, ca_bundle):
    from evalharness.audit.basecode import base_code_provider
    from evalharness.audit.context import AuditContext
    from evalharness.validation import load_report

    def log(line: str) -> None:
        click.echo(line, err=True)

    if no_docker:
        return (AuditContext(pack, base_code=base_code_provider(pack), trials=trials,
                             validation=lambda t: load_report(pack, t), log=log), lambda: None, None)
    from evalharness.cli._common import grading_validator
    from evalharness.sandbox.docker import remove_labelled

    client, run_id, builder, _, validator = grading_validator(pack, "audit", reruns=1, ca_bundle=ca_bundle)
    ctx = AuditContext(pack, base_code=base_code_provider(pack, client=client, builder=builder, run_id=run_id),
                       trials=trials, validation=lambda t: load_report(pack, t), validator=validator, log=log)
    return ctx, lambda: remove_labelled(client, run_id), client


def _investigator(harness, model, api_base, api_key_env, model_config, seeds, client, ca_bundle, audits_dir):
    if harness is None:
        if model:
            raise UserError("--model is for the investigator: give --investigator HARNESS too")
        return None
    if client is None:
        raise UserError("the investigator runs in Docker: leave out --no-docker")
    from evalharness.audit.investigator import cli_investigator
    from evalharness.cli.run import _model_endpoints

    endpoints = _model_endpoints([model] if model else [], model_config, api_base=api_base, api_key_env=api_key_env)
    return cli_investigator(harness, endpoints[0] if endpoints else None, seeds, client=client, ca_bundle=ca_bundle,
                            log=lambda line: click.echo(line, err=True), audits_dir=audits_dir)


def _write_results(pack, store, trials, audits_dir: Path, min_severity: int, left_out: set[str]) -> dict:
    import json

    from evalharness.audit.results import audit_results
    from evalharness.report.audit import render_audit

    results = audit_results([t.instance_id for t in pack.tasks if t.instance_id not in left_out],
                            store.findings(pack.name), store.labels(pack.name), trials, min_severity=min_severity)
    results["pack"] = pack.name
    out = audits_dir / pack.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out / "audit.html").write_text(render_audit(results, "html", findings=store.findings(pack.name)))
    return results


def _summary(results: dict, where: Path) -> str:
    from evalharness.report.audit import render_audit

    return render_audit(results, "table") + f"\naudit written to {where}/ (audit.json, audit.html, findings/)"


@audit_cmd.command("report")
@click.argument("pack_path", metavar="PACK", type=click.Path(exists=True))
@click.option("--runs", "run_ids", multiple=True, metavar="RUN_ID", help="Stored runs: clean-subset scores.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "html"]), default="table",
              show_default=True)
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None, help="Write to this file.")
@click.option("--min-severity", type=click.IntRange(0, 3), default=2, show_default=True)
@EXCLUDE
@EXCLUDE_FROM
@RUNS_DIR
@DB
def report_cmd(pack_path, run_ids, fmt, output, min_severity, excluded, exclude_from, runs_dir, db) -> None:
    """What the stored audit of PACK concludes: flags, agreement with human labels, broken fraction, ceiling.

    The probe table ends with the overall flag (broken when any probe flags at severity >= --min-severity)
    against the human labels, beside the raw agreement of calling every task broken. Below 30 labelled
    tasks a kappa says "too few labels" instead of a value and an interval (docs/audit.md).

    \b
    evalharness audit report tasks/lite --runs RUN_A --format html -o reports/lite-audit.html
    """
    from evalharness.audit.results import audit_results
    from evalharness.packs import load_pack
    from evalharness.report.audit import render_audit

    pack = load_pack(pack_path)
    store = _store(runs_dir, db)
    findings = store.findings(pack.name)
    if not findings:
        raise UserError(f"no audit of pack {pack.name} in {store.url}", f"run: evalharness audit {pack_path}")
    left_out = _excluded(pack, excluded, exclude_from)
    results = audit_results([t.instance_id for t in pack.tasks if t.instance_id not in left_out], findings,
                            store.labels(pack.name), _trials(store, run_ids, pack.name), min_severity=min_severity)
    results["pack"] = pack.name
    text = render_audit(results, fmt, findings=findings)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


@audit_cmd.command("probes")
def probes_cmd() -> None:
    """List the probes: name, defect family, what it needs, and its rule."""
    from evalharness.audit.probes import load_probes

    for name, probe in load_probes().items():
        click.echo(f"{name} ({probe.family}; needs {probe.needs}; v{probe.version})\n  {probe.rule}\n")
    from evalharness.audit.investigator import RULE, VERSION

    click.echo(f"investigator (any family; needs a harness and a model, Docker; v{VERSION})\n  {RULE}\n")
from evalharness.cli import audit_label  # noqa: E402,F401  (registers `audit label`)
