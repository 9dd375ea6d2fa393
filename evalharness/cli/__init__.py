"""Command line: thin click commands that parse, build a config and call one library function.

One module per noun (run and its results, packs, sandbox, predictions, models); `_common` holds the
group and the options they share.
"""

from __future__ import annotations

import sys

import click

from evalharness.cli import models, packs, predictions, results, run, sandbox  # noqa: F401  (they register commands)
from evalharness.cli import new  # noqa: F401,E402  (registers `packs new` and `packs add-task`)
from evalharness.cli import inject  # noqa: F401,E402  (registers `packs inject`)
from evalharness.cli import audit  # noqa: F401,E402  (registers `audit`)
from evalharness.cli import drift  # noqa: F401,E402  (registers `drift`)
from evalharness.cli import review  # noqa: F401,E402  (registers `review`)
from evalharness.cli import gate  # noqa: F401,E402  (registers `packs gate`)
from evalharness.cli import check_harbor  # noqa: F401,E402  (registers `packs check-harbor`)
from evalharness.cli import export  # noqa: F401,E402  (registers `packs export`)
from evalharness.cli._common import cli
from evalharness.cli.run import _print_report  # noqa: F401  (tests call it)
from evalharness.errors import UserError

__all__ = ["cli", "main"]


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
