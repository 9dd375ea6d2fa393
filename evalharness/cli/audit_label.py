"""`audit label`: human labels of a pack's tasks: the labelling page, and CSV/JSONL export and import."""

from __future__ import annotations

from pathlib import Path

import click

from evalharness.cli._common import DB, RUNS_DIR, _store
from evalharness.cli.audit import audit_cmd
from evalharness.errors import UserError

PACK = click.argument("pack", type=click.Path(path_type=Path))
HIDE = click.option("--hide-findings", is_flag=True,
                    help="Leave out probe evidence and investigator verdicts (labels independent of the pipeline).")


@audit_cmd.group("label")
def label_cmd() -> None:
    """Human labels: several annotators per task, each blind to the others; every label kept with its time.

    \b
    evalharness audit label serve tasks/lite --annotator alice
    evalharness audit label export tasks/lite queue-bob.csv --annotator bob
    evalharness audit label import tasks/lite queue-bob.csv
    evalharness audit label export tasks/lite all-labels.jsonl --labels
    """


def _pack_and_store(path: Path, runs_dir: Path, db: str | None):
    from evalharness.packs import load_pack

    return load_pack(path), _store(runs_dir, db)


@label_cmd.command("serve")
@PACK
@click.option("--annotator", required=True, help="Your name: labels are stored under it; you see only yours.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: any free port; the address is printed).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@HIDE
@RUNS_DIR
@DB
def serve_cmd(pack: Path, annotator: str, port: int, open_browser: bool, hide_findings: bool, runs_dir: Path,
              db: str | None) -> None:
    """Serve the labelling page on 127.0.0.1 for one annotator, until Ctrl-C.

    \b
    Keys: b/c broken/clean, 0-3 severity, a family letter, t note, Enter save, n/p next/previous, ? help.
    evalharness audit label serve tasks/lite --annotator alice --port 8765
    """
    from evalharness import localweb
    from evalharness.audit.labels import LabelError, build_queue
    from evalharness.audit.labelserve import LabelSession, make_server

    loaded, store = _pack_and_store(pack, runs_dir, db)
    items = build_queue(loaded.tasks, store.findings(loaded.name), hide_findings=hide_findings)
    try:
        session = LabelSession(store, loaded.name, items, annotator, findings_hidden=hide_findings)
    except LabelError as e:
        raise UserError(f"--annotator: {e}") from e
    server = localweb.listen(lambda: make_server(session, port), port)
    done = len(session.own_labels())
    click.echo(f"labelling {loaded.name} ({len(items)} tasks, {done} labelled by you) as {session.annotator}: "
               f"{localweb.url(server)}")
    click.echo("press Ctrl-C to stop; every saved label is already stored")
    localweb.serve(server, open_browser, lambda: f"stopped: {len(session.own_labels())} of {len(items)} tasks "
                   f"labelled by {session.annotator}", click.echo)


@label_cmd.command("export")
@PACK
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--annotator", default=None, help="Write the queue in this annotator's order, with their labels.")
@click.option("--labels", "all_labels", is_flag=True, help="Write every label stored instead (all annotators).")
@HIDE
@RUNS_DIR
@DB
def export_cmd(pack: Path, out: Path, annotator: str | None, all_labels: bool, hide_findings: bool, runs_dir: Path,
               db: str | None) -> None:
    """Write a pack's labelling queue for one annotator, or every stored label, as CSV or JSONL (by OUT's suffix).

    \b
    evalharness audit label export tasks/lite queue-bob.csv --annotator bob
    evalharness audit label export tasks/lite labels.jsonl --labels
    """
    from evalharness.audit.labelfiles import export_labels, export_queue, file_format
    from evalharness.audit.labels import build_queue

    if all_labels == (annotator is not None):
        raise click.UsageError("pass either --annotator NAME (a queue to label) or --labels (every stored label)")
    file_format(out)
    loaded, store = _pack_and_store(pack, runs_dir, db)
    if all_labels:
        n = export_labels(out, store.labels(loaded.name, latest=False))
        click.echo(f"wrote {n} labels of {loaded.name} to {out}")
        return
    if not annotator.strip():
        raise UserError("--annotator: no annotator named")
    items = build_queue(loaded.tasks, store.findings(loaded.name), hide_findings=hide_findings)
    mine = [r for r in store.labels(loaded.name) if r["annotator"] == annotator.strip()]
    n = export_queue(out, items, annotator.strip(), mine)
    click.echo(f"wrote the queue of {n} tasks for {annotator.strip()} ({len(mine)} labelled) to {out}")


@label_cmd.command("import")
@PACK
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@RUNS_DIR
@DB
def import_cmd(pack: Path, file: Path, runs_dir: Path, db: str | None) -> None:
    """Store the labels of a CSV or JSONL file (an exported queue filled in, or a labels export).

    Every row is checked first (known task, an annotator, broken true/false, severity 0-3, a known family);
    one bad row refuses the whole file and names each bad row.

    \b
    evalharness audit label import tasks/lite queue-bob.csv
    """
    from evalharness.audit.labelfiles import import_labels

    loaded, store = _pack_and_store(pack, runs_dir, db)
    summary = import_labels(store, loaded.name, file, {t.instance_id for t in loaded.tasks})
    click.echo(f"imported {summary.added} labels into {loaded.name} ({summary.blank} rows not labelled, "
               f"{summary.already_stored} already stored)")
