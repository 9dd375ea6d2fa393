"""`packs check-harbor`: the static checks of Harbor task directories (evalharness/sources/harbor/checks/checks.py,
docs/audit.md "Static checks of Harbor tasks")."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click

from evalharness.cli.packs import packs_cmd


@packs_cmd.command("check-harbor")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fail-at", type=click.IntRange(0, 3), default=1, show_default=True,
              help="Exit 1 when a finding is at least this severe (0-3: 1 minor, 2 serious, 3 cannot be graded "
                   "fairly).")
@click.option("--check", "only", multiple=True, help="Only this check (repeatable; the ids above).")
def check_harbor_cmd(paths, fmt, fail_at, only) -> None:
    """Check Harbor task directories as the Terminal-Bench-3 template would, without Docker.

    PATH is a task directory (it holds task.toml) or a folder of them. One line per finding: the task, the
    severity, the check, the reason and where (file:line and the quoted text); then a summary. Checks:
    allow-internet, dockerfile-platform, gpu-request, gpu-types, instruction-timeout, pip-pinning,
    separate-verifier, task-fields, test-sh-sanity, trial-network-fetch, validate-nop, validate-oracle
    (validate-* are static hints; the oracle and no-op runs decide). A task that cannot be read is a line of
    its own. Exit 0 when no finding reaches --fail-at and every task was read, 1 otherwise.

    \b
    evalharness packs check-harbor ../shared/research-data/harbor/tasks
    evalharness packs check-harbor my-task --format json --fail-at 3
    """
    from evalharness.sources.harbor.checks.checks import check_dirs

    results = check_dirs(list(paths), list(only) or None)
    failing = [r for r in results if r.error or any(f.severity >= fail_at for f in r.findings)]
    if fmt == "json":
        click.echo(json.dumps({"tasks": [r.to_json() for r in results], "fail_at": fail_at,
                               "failing": [r.name for r in failing]}, indent=2))
    else:
        _print_text(results, fail_at, len(failing))
    if failing:
        sys.exit(1)


def _print_text(results, fail_at: int, failing: int) -> None:
    for r in results:
        if r.error:
            click.echo(f"{r.name}: unreadable: {r.error.splitlines()[0]}")
        for f in r.findings:
            first = f.evidence[0] if f.evidence else None
            where = f" [{first.where()}" + (f' "{first.text}"' if first.text else "") + "]" if first else ""
            more = f" (+{len(f.evidence) - 1} more)" if len(f.evidence) > 1 else ""
            click.echo(f"{r.name}: {f.severity} {f.check}: {f.reason}{where}{more}")
    by_check = Counter(f.check for r in results for f in r.findings)
    unreadable = sum(1 for r in results if r.error)
    click.echo(f"{len(results)} task(s), {sum(by_check.values())} finding(s)"
               + (f" ({', '.join(f'{c} {n}' for c, n in sorted(by_check.items()))})" if by_check else "")
               + (f", {unreadable} unreadable" if unreadable else "")
               + f"; {failing} task(s) at severity >= {fail_at} or unreadable")
