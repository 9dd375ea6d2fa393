"""`packs mine`: tasks from a repository's history (evalharness/sources/mine.py, docs/mining.md)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, MAX_GOLD_BYTES, grading_validator, progress
from evalharness.cli.packs import _raise_interrupt, packs_cmd
from evalharness.errors import UserError
from evalharness.quality.gate import Thresholds


@packs_cmd.command("mine")
@click.option("--repo", required=True, help="Local repository (work tree or bare) or a git URL.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Pack folder to write.")
@click.option("--ref", default="HEAD", show_default=True, help="Branch or commit whose first-parent history is walked; "
              "the environment is built at it.")
@click.option("--since", default=None, help="Only commits after this date (git's --since: 2024-01-01).")
@click.option("--until", default=None, help="Only commits before this date.")
@click.option("--max", "max_candidates", type=click.IntRange(min=1), default=None,
              help="Examine at most N candidates (newest first); later commits of the range are still listed.")
@click.option("--reruns", type=click.IntRange(min=1), default=3, show_default=True,
              help="Gold-patch runs of the validation of each discovered task.")
@click.option("--discover-reruns", type=click.IntRange(min=1), default=2, show_default=True,
              help="Runs of each side (base, gold) that discovery reads the lists from.")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1, show_default=True, help="Candidates at once.")
@click.option("--issues", "issues_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="GitHub issue/PR export (JSON array or JSONL): statements come from the PR or the issue it closes.")
@click.option("--rewrite-model", default=None, help="litellm model that rewrites each statement as a bug report.")
@click.option("--api-base", default=None, help="Endpoint of --rewrite-model.")
@click.option("--api-key-env", default=None, help="Variable holding the key of --rewrite-model.")
@click.option("--python", "python", default=None, help="Python of the environment (default: detected, else 3.11).")
@click.option("--pip", "pip", multiple=True, help="Test requirements (repeatable; replace the detected ones).")
@click.option("--setup", "setup", multiple=True, help="Setup commands (repeatable; replace 'pip install -e .').")
@click.option("--test-command", default=None, help="Test command (default: guarded pytest on {test_files}).")
@click.option("--language", type=click.Choice(["auto", "python", "node"]), default="auto", show_default=True,
              help="The project's language (auto: from its files at --ref; docs/languages.md).")
@MAX_GOLD_BYTES
@click.option("--no-coverage", "no_coverage", is_flag=True,
              help="Skip the coverage gate (one diagnostic run per validated task: f2p_misses_change, no_p2p_guard).")
@CA_BUNDLE
def mine_cmd(repo, out, ref, since, until, max_candidates, reruns, discover_reruns, workers, issues_file,
             rewrite_model, api_base, api_key_env, python, pip, setup, test_command, language, max_gold_bytes,
             no_coverage, ca_bundle) -> None:
    """Mine tasks from first-parent history: commits changing library code and tests, validated in Docker.

    Every commit of the range gets a verdict in OUT/mining-report.json (ok, no_tests_touched,
    no_library_code, no_runnable_tests, leak, the quality gate's bare_title, changelog, ci_note, unseen_commit, squashed_branch, pinned_message, gold_too_large,
    gold_generated, gold_data_dominated, nothing_fails_at_base, gold_fails, flaky, env_build_failed,
    infra_error, and after validation the coverage gate's f2p_misses_change, no_p2p_guard, ...); validated tasks go to OUT/tasks.jsonl, each with its gate results. Running the same
    command again keeps finished candidates and retries infra errors. Exit 0 when every candidate has a final verdict and a task was kept
    (rejections are normal), 1 when no task was kept, 3 when some candidate ended in infra_error.
    Progress lines (a line per commit, image builds) go to standard error; the summary and the report's
    path to standard output.

    \b
    evalharness packs mine --repo ../myrepo --since 2024-01-01 --out tasks/mine -j 2
    evalharness packs mine --repo ../my-node-lib --max 20 --out tasks/node-mine   # jest, vitest, mocha, tap
    evalharness packs mine --repo ../myrepo --out tasks/mine --issues prs.json \\
        --rewrite-model openai/gpt-4o-mini --api-key-env OPENAI_API_KEY
    """
    from evalharness.languages.registry import choose
    from evalharness.sources import mine as m
    from evalharness.sources.mine_rules import read_export

    out.mkdir(parents=True, exist_ok=True)
    history = m.History(repo)
    tip = history.tip(ref)
    language = choose(history.files(tip), language).name
    if language != "python" and not no_coverage:
        no_coverage = True
        click.echo(f"note: the coverage gate measures Python only: skipped for this {language} project", err=True)
    if not (out / "pack.yaml").exists():
        from evalharness.sources.scaffold import pack_name

        m.write_manifest(out, pack_name(out.name), history, tip, m.source_url(repo, out), python=python,
                         pip=list(pip), setup=list(setup), test_command=test_command, language=language)
        click.echo(f"{out / 'pack.yaml'}: environment detected at {tip[:12]} (its comments say why; edit it and "
                   "run again to change it)")
    else:
        click.echo(f"{out / 'pack.yaml'}: kept as it is (entries mined with another environment are redone)")
    pack = m.load_mining_pack(out)
    commits = history.commits(tip, since, until)
    if max_candidates is not None:
        commits = m.first_candidates(commits, max_candidates, language)
    export = read_export(_read_records(issues_file)) if issues_file else {}
    rewriter = None
    if rewrite_model:
        from evalharness.types import ModelEndpoint

        endpoint = ModelEndpoint(name=rewrite_model, api_base=api_base, api_key_env=api_key_env)
        if not (api_base or "").startswith(("http://127.0.0.1", "http://localhost", "http://[::1]")):
            click.echo(f"note: --rewrite-model sends commit messages and test diffs to {api_base or rewrite_model}",
                       err=True)
        rewriter = m.model_rewriter(endpoint)
    progress(f"{history.url}: {len(commits)} first-parent commit(s) in range (newest first)")
    report = _run(out, pack, history, commits, reruns, discover_reruns, workers, export, rewriter, ca_bundle,
                  Thresholds(max_gold_bytes=max_gold_bytes), coverage=not no_coverage, language=language)
    for line in m.summary_lines(report):
        click.echo(line)
    click.echo(f"report: {out / m.REPORT}; next: evalharness run -p {out} -H oracle -H null")
    by = report["totals"]["by_verdict"]
    sys.exit(3 if by.get("infra_error") else 0 if by.get("ok") else 1)


def _read_records(path: Path) -> list:
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise UserError(f"--issues {path}: neither a JSON array nor JSONL", str(e)) from e
    return data if isinstance(data, list) else [data]


def _run(out, pack, history, commits, reruns, discover_reruns, workers, export, rewriter, ca_bundle,
         thresholds, coverage=True, language="python") -> dict:
    from evalharness.sandbox.docker import remove_labelled
    from evalharness.sources.mine import Miner, mine

    client, run_id, _, _, validator = grading_validator(pack, "mine", reruns=reruns, ca_bundle=ca_bundle)
    miner = Miner(pack, history, validator, discover_reruns=discover_reruns, export=export, rewriter=rewriter,
                  thresholds=thresholds, coverage=coverage, language=language)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return mine(out, history, commits, miner, workers=workers, log=progress)
    except KeyboardInterrupt:
        click.echo("interrupted: finished candidates are kept; run the same command to go on", err=True)
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        remove_labelled(client, run_id)
