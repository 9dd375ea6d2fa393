"""What every command module shares: the group, common options, the store."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.errors import UserError
from evalharness.quality.gate import DEFAULT as GATE_DEFAULT

RUNS_DIR = click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
                        help="Folder of run folders; the default database lives there too.")
CA_BUNDLE = click.option("--ca-bundle", type=click.Path(exists=True, path_type=Path), default=None,
                         help="CA bundle copied into images so pip works behind TLS-intercepting proxies "
                              "(default: the host's bundle when present).")
MAX_GOLD_BYTES = click.option("--max-gold-bytes", type=click.IntRange(min=1), default=GATE_DEFAULT.max_gold_bytes,
                              show_default=True,
                              help="Quality gate: a larger gold patch is rejected as gold_too_large (docs/mining.md).")
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



def _store(runs_dir: Path, db: str | None):
    from evalharness.store import Store, database_url

    if db is None and not (runs_dir / "evalharness.db").exists():
        raise UserError(f"no results database at {runs_dir / 'evalharness.db'}",
                        "run from the folder where the evaluation ran (its runs/ folder holds the database), or pass "
                        "--runs-dir PATH/runs (or --db URL for a database elsewhere)")
    return Store(database_url(db or runs_dir / "evalharness.db"))



def progress(line: str) -> None:
    """A progress line: standard error, so standard output carries only a command's result."""
    click.echo(line, err=True)


def grading_validator(pack, purpose: str, *, reruns: int = 3, ca_bundle: Path | None = None, log=progress):
    """The Docker wiring every command that grades a pack's tasks shares (validate, mine, inject, add-task):
    an engine client, a run id ``<purpose>-<time>`` labelling its containers (``remove_labelled`` cleans up),
    an image builder, a started grader sandbox per grading run, and the Validator over them (both write their
    progress lines to ``log``)."""
    import contextlib
    import time

    from evalharness.grading.grade import grade
    from evalharness.sandbox.base import Limits
    from evalharness.sandbox.docker import DockerSandbox
    from evalharness.sandbox.engine import docker_client
    from evalharness.sandbox.images import ImageBuilder
    from evalharness.validation import Validator

    client = docker_client()
    run_id = time.strftime(f"{purpose}-%Y%m%d-%H%M%S")

    @contextlib.contextmanager
    def sandbox(image, spec, task):
        with DockerSandbox(client, image, run_id=run_id, trial=f"{pack.name}/{task.instance_id}/{purpose}",
                           role="grader", limits=Limits(), workdir=spec.environment.workdir,
                           default_timeout=spec.timeouts.exec_s) as box:
            box.start()
            yield box

    builder = ImageBuilder(client, ca_bundle=ca_bundle, log=log)
    validator = Validator(pack, builder, sandbox, grade, reruns=reruns, log=log)
    return client, run_id, builder, sandbox, validator
