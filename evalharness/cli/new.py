"""`packs new` and `packs add-task`: a backlog pack for your own repository, and hand-written tasks in it."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, MAX_GOLD_BYTES
from evalharness.cli.packs import packs_cmd
from evalharness.errors import UserError


@packs_cmd.command("new")
@click.option("--repo", required=True, help="A local git repository (work tree or bare) or a git URL.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Pack folder to write.")
@click.option("--name", default=None, help="Pack name (default: the folder's name).")
@click.option("--ref", default="HEAD", show_default=True, help="Commit whose files are read; the environment installs it.")
@click.option("--force", is_flag=True, help="Write into a non-empty --out folder (replaces pack.yaml, keeps tasks.jsonl).")
@click.option("--language", type=click.Choice(["auto", "python", "node"]), default="auto", show_default=True,
              help="The project's language (auto: from its files: package.json is Node; docs/languages.md).")
def new_cmd(repo, out, name, ref, force, language) -> None:
    """Scaffold a pack for your repository: detect its environment, write pack.yaml (commented) and tasks.jsonl.

    Reads only committed files, with git; a local repository never leaves the machine (it reaches the
    local engine's build as a git bundle). Then add tasks with `packs add-task` (docs/backlog.md).
    Python and Node (JavaScript/TypeScript: jest, vitest, mocha, tap) projects (docs/languages.md).

    \b
    evalharness packs new --repo ~/src/myproject --out tasks/myproject
    evalharness packs new --repo ~/src/my-node-lib --out tasks/my-node-lib --language node
    evalharness packs add-task tasks/myproject --base v1.2 --statement bug.md --tests tests/test_x.py --gold fix-branch
    """
    from evalharness.sources.scaffold import new_pack

    chosen, found = new_pack(repo, out, name=name, ref=ref, force=force, language=language)
    first, *rest = chosen.summary(found)
    click.echo(f"{out / 'pack.yaml'}: {first}")
    for line in rest:
        click.echo(line)
    click.echo(f"next: evalharness packs add-task {out} --base COMMIT --statement FILE --tests PATH --gold COMMIT")


@packs_cmd.command("add-task")
@click.argument("pack", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base", required=True, help="The commit the task starts from (the code with the bug).")
@click.option("--statement", required=True, type=click.File("r"), help="File holding the problem statement ('-': stdin).")
@click.option("--test-patch", type=click.File("r"), default=None, help="A diff of the hidden test files.")
@click.option("--tests", multiple=True, help="Hidden test files (repository paths), as of --tests-from (repeatable).")
@click.option("--tests-from", default="", help="Commit the --tests files are taken from (default: --gold's commit, "
                                                "else the pack's ref).")
@click.option("--gold", default="", help="The fix: a commit (its change minus the test files) or a patch file.")
@click.option("--id", "instance_id", default="", help="Task id (default: PACKNAME-N).")
@click.option("--fail-to-pass", multiple=True, help="Test ids that must go from failing to passing (skips discovery).")
@click.option("--pass-to-pass", multiple=True, help="Test ids that must keep passing (with --fail-to-pass).")
@click.option("--created-at", default="", help="When the task's fix became known (ISO date; default: the gold "
                                               "commit's date, else now).")
@click.option("--allow", multiple=True, help="A name the statement may use although the leak check flags it.")
@click.option("--accept-leaks", is_flag=True, help="Keep a statement the leak check flags (the leaks are printed).")
@click.option("--accept-gate", is_flag=True, help="Keep a task the quality gate rejects (the failed checks are "
              "printed and recorded in the task's metadata.gate).")
@MAX_GOLD_BYTES
@click.option("--repo", default=None, help="The repository (default: the pack's git source, if local).")
@click.option("--reruns", type=click.IntRange(min=1), default=2, show_default=True, help="Discovery runs per side.")
@CA_BUNDLE
def add_task_cmd(pack, base, statement, test_patch, tests, tests_from, gold, instance_id, fail_to_pass,
                 pass_to_pass, created_at, allow, accept_leaks, accept_gate, max_gold_bytes, repo, reruns,
                 ca_bundle) -> None:
    """Add a hand-written task to a pack: base commit, statement, hidden tests, gold fix.

    Without --fail-to-pass, the lists are discovered in Docker (base and gold runs, --reruns each): the
    tests that fail at base and pass with the gold fix, and those that pass on both. The statement must
    pass the leak check (no gold code, no path of the fix, no line number, no name only the fix defines)
    and the quality gate (a statement of behaviour, not a bare title, changelog, CI note or revert; a gold
    patch of hand-written code under --max-gold-bytes; docs/mining.md), or --accept-leaks / --accept-gate.

    \b
    evalharness packs add-task tasks/mine --base 3f2a1c0 --statement bug.md --tests tests/test_dates.py --gold 9b8e7d6
    evalharness packs add-task tasks/mine --base v1.2 --statement bug.md --test-patch hidden.diff --gold fix.diff
    """
    from evalharness.sandbox.sources import local_git_repository
    from evalharness.sources.handwritten import Declared, append_task, build_task, existing_ids, pack_task_file
    from evalharness.sources.scaffold import Repository

    if not test_patch and not tests:
        raise UserError("give the hidden tests: --test-patch FILE or --tests PATH")
    if not gold and not fail_to_pass:
        raise UserError("give --gold (the lists are then discovered) or --fail-to-pass (without a gold fix the "
                        "oracle cannot resolve the task, and validate --run cannot check it)")
    tasks_file, spec = pack_task_file(pack)
    source = spec.environment.source if spec.environment is not None else None
    where = repo or (str(local_git_repository(source.url, pack.resolve())) if getattr(source, "kind", "") == "git"
                     else None)
    if where is None:
        raise UserError(f"pack {pack} has no git source to read commits from", "give --repo PATH")
    declared = Declared(base=base, statement=statement.read(), test_patch=test_patch.read() if test_patch else "",
                        tests=tests, tests_from=tests_from, gold=gold, instance_id=instance_id,
                        fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass, created_at=created_at, allowed=allow)
    repository = Repository(where)
    try:
        task, leaks = build_task(repository, declared, pack_name=spec.name, default_ref=source.ref,
                                 existing=existing_ids(tasks_file))
    finally:
        repository.close()
    for leak in leaks:
        click.echo(f"leak: {leak}", err=True)
    if leaks and not accept_leaks:
        raise UserError(f"the statement gives the fix away ({len(leaks)} leak(s), listed above)",
                        "rewrite it as a reporter would (behaviour, public API, error), --allow NAME for a name "
                        "a reporter knows, or --accept-leaks")
    task = _gated(task, allow, accept_gate, max_gold_bytes)
    if not task.FAIL_TO_PASS:
        task = _discovered(pack, spec, task, reruns, ca_bundle)
    append_task(tasks_file, task)
    click.echo(f"{tasks_file}: added {task.instance_id} ({len(task.FAIL_TO_PASS)} FAIL_TO_PASS, "
               f"{len(task.PASS_TO_PASS)} PASS_TO_PASS, created_at {task.created_at})")
    click.echo(f"next: evalharness packs validate {pack} --run")


def _gated(task, allow, accept_gate: bool, max_gold_bytes: int):
    """The task with its quality gate results in ``metadata.gate``, or a UserError naming the failed checks."""
    from evalharness.quality.gate import Thresholds
    from evalharness.sources.handwritten import gate_task

    gate = gate_task(task, set(allow), Thresholds(max_gold_bytes=max_gold_bytes))
    for check in gate.failed:
        click.echo(f"quality gate: {check.name}: {check.reason}", err=True)
    if not gate.passed and not accept_gate:
        raise UserError(f"the quality gate rejects the task ({', '.join(c.name for c in gate.failed)}; listed above)",
                        "describe the behaviour the tests check (what was called, what happened, what was expected), "
                        "keep the gold patch to hand-written code, or --accept-gate")
    return task.model_copy(update={"metadata": {**task.metadata, "gate": {**gate.to_json(), "accepted": accept_gate}}})


def _discovered(folder: Path, spec, task, reruns: int, ca_bundle):
    """The task with its lists from the shared discovery path (Docker), or a UserError saying why none."""
    from evalharness.cli._common import grading_validator
    from evalharness.errors import ImageBuildError, TaskError
    from evalharness.packs import Pack
    from evalharness.sandbox.docker import remove_labelled

    pack = Pack(spec=spec, tasks=[task], root=folder.resolve(), content_hash="add-task")
    client, run_id, _, _, validator = grading_validator(pack, "add-task", ca_bundle=ca_bundle)
    click.echo(f"discovering the lists of {task.instance_id}: {reruns} runs at base, {reruns} with the gold fix")
    try:
        lists, base_runs, gold_runs = validator.discover(task, reruns=reruns)
    except (TaskError, ImageBuildError) as e:
        raise UserError(f"task {task.instance_id}: its image cannot be built: {e}") from e
    finally:
        remove_labelled(client, run_id)
    if lists.verdict != "ok":
        tail = next((r.output_tail for r in gold_runs if r.output_tail), "")
        raise UserError(f"task {task.instance_id} not added: {lists.verdict}: {lists.reason}",
                        tail[-1500:] or None)
    if lists.flaky:
        click.echo(f"  left out as flaky: {', '.join(sorted(lists.flaky))}", err=True)
    return task.model_copy(update={"FAIL_TO_PASS": lists.FAIL_TO_PASS, "PASS_TO_PASS": lists.PASS_TO_PASS})
