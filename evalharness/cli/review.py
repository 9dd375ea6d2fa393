"""`review`: merge review of the runs' patches: the blinded review page, CSV/JSONL export and import, progress."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalharness.cli._common import DB, RUNS_DIR, _store, cli
from evalharness.errors import UserError

RUN_IDS = click.argument("run_ids", nargs=-1, required=True)


def queue_options(f):
    """--sample, --gold/--no-gold, --seed: the same for every reviewer of a queue."""
    f = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the sample and of the gold draw (every reviewer of a queue passes the same).")(f)
    f = click.option("--no-gold", is_flag=True, help="No gold patches in the queue.")(f)
    f = click.option("--gold", type=click.IntRange(0), default=None,
                     help="Gold patches mixed in, one per task (default: one per 5 agent patches).")(f)
    f = click.option("--sample", type=click.IntRange(1), default=None,
                     help="Review K agent patches, stratified by configuration (default: every one).")(f)
    return f


@cli.group("review")
def review_cmd() -> None:
    """Would a maintainer merge the agents' patches? Blinded review with a golden arm (docs/review.md).

    \b
    evalharness review serve RUN_ID --reviewer alice --reviewers 2 --sample 40
    evalharness review export RUN_ID --sample 40 -o queue.csv
    evalharness review import RUN_ID queue.csv
    evalharness review status RUN_ID --reviewers 2
    evalharness report RUN_ID        (merge rates, intervals and the golden baseline)
    """


def _items(run_ids, runs_dir, db, sample, gold, no_gold, seed, trajectories=False):
    from evalharness.review.sources import review_items

    if no_gold and gold is not None:
        raise click.UsageError("pass --gold K or --no-gold, not both")
    store = _store(runs_dir, db)
    items = review_items(store, runs_dir, list(run_ids), sample=sample, gold=0 if no_gold else gold, seed=seed,
                         trajectories=trajectories)
    return store, items


@review_cmd.command("serve")
@RUN_IDS
@click.option("--reviewer", required=True, help="Your name: reviews are stored under it; you see only yours.")
@click.option("--reviewers", type=click.IntRange(1), default=1, show_default=True,
              help="Distinct reviewers each patch needs; patches still needing reviews come first.")
@queue_options
@click.option("--trajectories", is_flag=True,
              help="Show a summary of each agent's trajectory (needs --no-gold: a gold patch has none).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: any free port; the address is printed).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@RUNS_DIR
@DB
def serve_cmd(run_ids, reviewer, reviewers, sample, gold, no_gold, seed, trajectories, port, open_browser,
              runs_dir, db) -> None:
    """Serve the blinded review page on 127.0.0.1 for one reviewer, until Ctrl-C.

    \b
    Keys: m/a/r merge, merge after changes, reject; 1-5 reasons; t note; Enter save; n/p next/previous; ? help.
    evalharness review serve RUN_ID --reviewer alice --port 8766
    """
    from evalharness import localweb
    from evalharness.review.serve import ReviewSession, make_server
    from evalharness.review.verdicts import ReviewError

    store, items = _items(run_ids, runs_dir, db, sample, gold, no_gold, seed, trajectories)
    try:
        session = ReviewSession(store, list(run_ids), items, reviewer, needed=reviewers, trajectories=trajectories)
    except ReviewError as e:
        raise UserError(f"--reviewer: {e}") from e
    server = localweb.listen(lambda: make_server(session, port), port)
    done = len(session.own_reviews())
    click.echo(f"reviewing {len(items)} patches ({done} reviewed by you) as {session.reviewer}: {localweb.url(server)}")
    click.echo("press Ctrl-C to stop; every saved review is already stored")
    localweb.serve(server, open_browser, lambda: f"stopped: {len(session.own_reviews())} of {len(items)} patches "
                   f"reviewed by {session.reviewer}", click.echo)


@review_cmd.command("export")
@RUN_IDS
@click.option("--reviews", "all_reviews", is_flag=True,
              help="Write every stored review (unblinded, history included) instead of the queue.")
@click.option("--reviewer", default="", help="The queue in this reviewer's order, their name filled in.")
@queue_options
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default=None,
              help="File format (default: by the -o suffix, else csv).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here (default: standard output).")
@RUNS_DIR
@DB
def export_cmd(run_ids, all_reviews, reviewer, sample, gold, no_gold, seed, fmt, output, runs_dir, db) -> None:
    """Write the blinded review queue (opaque item ids; to fill in elsewhere and import), or every stored review.

    \b
    evalharness review export RUN_ID --reviewer bob -o queue-bob.csv
    evalharness review export RUN_ID --reviews --format jsonl -o reviews.jsonl
    """
    from evalharness.review.files import QUEUE_COLUMNS, REVIEW_COLUMNS, dump, queue_rows, review_rows
    from evalharness.review.queue import reviewer_order

    fmt = fmt or ("jsonl" if output is not None and output.suffix.lower() in (".jsonl", ".ndjson") else "csv")
    if all_reviews:
        store = _store(runs_dir, db)
        rows, columns = review_rows(store.reviews(list(run_ids), latest=False)), REVIEW_COLUMNS
        what = f"{len(rows)} reviews"
    else:
        _, items = _items(run_ids, runs_dir, db, sample, gold, no_gold, seed)
        by_id = {i.item_id: i for i in items}
        ordered = [by_id[i] for i in reviewer_order(by_id, reviewer or "export")]
        rows, columns = queue_rows(ordered, reviewer.strip()), QUEUE_COLUMNS
        what = f"the queue of {len(rows)} patches"
    text = dump(rows, columns, fmt)
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {what} to {output}", err=True)


@review_cmd.command("import")
@RUN_IDS
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@RUNS_DIR
@DB
def import_cmd(run_ids, file, runs_dir, db) -> None:
    """Store the reviews of a CSV or JSONL file (a queue filled in, or a reviews export) for the runs RUN_ID...

    The last argument is the file. Rows name their patch by item_id, or run_id and trial_id, or pack, task_id and
    arm=gold. Every row is checked first; one bad row refuses the whole file, naming its line.

    \b
    evalharness review import RUN_ID queue-bob.csv
    """
    from evalharness.review.files import import_reviews
    from evalharness.review.sources import load_items, run_pack, secret_for

    store = _store(runs_dir, db)
    agent, gold = load_items(store, runs_dir, list(run_ids), secret_for(runs_dir))
    packs = {run_pack(store, r, {}).name for r in run_ids}
    summary = import_reviews(store, file, {i.item_id: i for i in agent + gold}, set(run_ids), packs)
    click.echo(f"imported {summary.added} reviews ({summary.blank} rows not filled in)")


@review_cmd.command("status")
@RUN_IDS
@click.option("--reviewers", type=click.IntRange(1), default=1, show_default=True,
              help="Distinct reviewers each patch needs.")
@queue_options
@RUNS_DIR
@DB
def status_cmd(run_ids, reviewers, sample, gold, no_gold, seed, runs_dir, db) -> None:
    """Progress of a queue: patches reviewed per reviewer, and how many still need reviewers (no verdicts shown)."""
    from collections import Counter

    from evalharness.review.serve import ReviewSession

    store, items = _items(run_ids, runs_dir, db, sample, gold, no_gold, seed)
    who = ReviewSession(store, list(run_ids), items, "status", needed=reviewers).reviewers_of()
    per = Counter(r for names in who.values() for r in names)
    short = sum(len(who.get(i.item_id, ())) < reviewers for i in items)
    click.echo(f"{len(items)} patches in the queue; {short} need more reviewers (each needs {reviewers})")
    for name, n in sorted(per.items()):
        click.echo(f"  {name}: {n} of {len(items)} reviewed")
