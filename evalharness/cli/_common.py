"""What every command module shares: the group, common options, the store."""

from __future__ import annotations

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



def _store(runs_dir: Path, db: str | None):
    from evalharness.store import Store, database_url

    if db is None and not (runs_dir / "evalharness.db").exists():
        raise UserError(f"no results database at {runs_dir / 'evalharness.db'}", "run an evaluation first, or pass --db")
    return Store(database_url(db or runs_dir / "evalharness.db"))

