"""`packs inject`: defects injected into a library's code, kept when its own tests catch them
(evalharness/sources/inject/, docs/injection.md)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, grading_validator
from evalharness.cli.packs import _raise_interrupt, packs_cmd
from evalharness.errors import UserError


@packs_cmd.command("inject")
@click.option("--repo", default=None, help="Local folder (its committed files) or git URL of the library.")
@click.option("--pack", "source_pack", default=None, type=click.Path(exists=True, path_type=Path),
              help="A pack whose environment (e.g. a PyPI sdist), test command and timeouts the new pack takes.")
@click.option("--ref", default="HEAD", show_default=True, help="With a git URL: the commit to inject into.")
@click.option("--count", "-n", required=True, type=click.IntRange(min=1), help="Tasks to keep.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Pack folder to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="Order of the sites tried (same seed, same tasks).")
@click.option("--reruns", type=click.IntRange(min=1), default=2, show_default=True,
              help="Gold-patch runs of the validation of each kept mutant (after discovery's own runs).")
@click.option("--discover-reruns", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs of each side (defect, fix) that discovery reads the lists from.")
@click.option("--max-tried", type=click.IntRange(min=1), default=None, help="Pre-screen at most N mutants.")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Candidates validated at once (the pre-screen uses one more sandbox).")
@click.option("--force", is_flag=True, help="Replace the tasks of a non-empty --out folder.")
@click.option("--language", type=click.Choice(["auto", "python", "node"]), default="auto", show_default=True,
              help="Python (libcst mutations) or node (JavaScript/TypeScript, Stryker's mutators); auto: from the "
                   "repository's files (package.json) or the pack's test command.")
@CA_BUNDLE
def inject_cmd(repo, source_pack, ref, count, out, seed, reruns, discover_reruns, max_tried, workers, force,
               language, ca_bundle) -> None:
    """Inject defects into library code (libcst mutations; for JavaScript/TypeScript, Stryker's mutators) and
    keep those the library's own tests catch.

    Mutation classes: flipped_comparison, off_by_one, wrong_boundary, dropped_branch, swapped_arguments,
    changed_default, removed_call, wrong_exception_type, negated_condition, early_return. Test files, test
    helpers and pytest plugins are never mutated. A Node library (--language node, or a package.json) is
    mutated by Stryker's instrumenter (@stryker-mutator/instrumenter, pinned; installed in the pack's
    environment at image build and run there with no network), its library files only. Each mutant is pre-screened with the whole suite in one
    sandbox, then discovered and validated like every task (empty patch = the defect, gold patch = its
    reverse); mutants that hang, crash or break most of the suite are rejected. OUT/injection-report.json
    lists every mutant tried with its verdict and counts rejections by reason; kept tasks carry their gate
    results (metadata.gate). Exit 0 when COUNT tasks were kept, 1 when fewer.

    \b
    evalharness packs inject --pack benchmarks/inject/cachetools --count 30 --out tasks/inject-cachetools -j 2
    evalharness packs inject --repo ../mylib --count 10 --out tasks/mylib-injected --seed 1
    evalharness packs inject --repo ../node-semver --count 10 --out tasks/semver-injected
    """
    from evalharness.sources.inject import pipeline
    from evalharness.sources.inject.js import steps as js_steps

    if (repo is None) == (source_pack is None):
        raise UserError("give exactly one of --repo and --pack")
    if out.exists() and any(out.glob("tasks.jsonl")) and (out / "tasks.jsonl").read_text().strip() and not force:
        raise UserError(f"{out} already holds tasks", "pass --force to replace them")
    name = out.name if all(c.isalnum() or c in "._-" for c in out.name) else "injected"
    if source_pack:
        manifest = pipeline.manifest_from_pack(source_pack, out, name)
        language = js_steps.language_of_pack(manifest) if language == "auto" else language
    else:
        language = js_steps.language_of_repo(repo, ref, language)
        if language not in ("python", "node"):
            raise UserError(f"packs inject mutates Python and Node libraries; {repo} is {language}")
        manifest = (js_steps.manifest_from_repo(repo, out, name, ref) if language == "node"
                    else pipeline.manifest_from_repo(repo, out, name, ref))
    if language == "node":
        manifest = js_steps.with_instrumenter(manifest)
    pack = pipeline.output_pack(out, manifest)
    report = _run(pack, count, seed, reruns, discover_reruns, max_tried, workers, ca_bundle, language)
    for line in pipeline.summary_lines(report):
        click.echo(line)
    click.echo(f"report: {out / pipeline.REPORT}; next: evalharness run -p {out} -H oracle -H null")
    sys.exit(0 if report["kept"] >= count else 1)


def _run(pack, count, seed, reruns, discover_reruns, max_tried, workers, ca_bundle, language) -> dict:
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.sources.inject.pipeline import Injector

    client, run_id, builder, sandbox, validator = grading_validator(pack, "inject", reruns=reruns,
                                                                    ca_bundle=ca_bundle)
    injector = Injector(pack, validator, builder, sandbox, count, seed=seed, discover_reruns=discover_reruns,
                        workers=workers, max_tried=max_tried, log=click.echo, language=language)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return injector.run()
    except KeyboardInterrupt:
        click.echo("interrupted: no task was written to --out; run the same command again with --force and the same "
                   "--seed: the mutants validated so far are reused (OUT/validation/), images too", err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        remove_labelled(client, run_id)
