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
